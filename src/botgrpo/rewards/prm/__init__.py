"""Process reward models (PRMs) as step verdict sources, accepted wherever ``step_verifier`` is.

A PRM reads a problem and its steps, each followed by a separator, and gives P(correct) at each
separator; :class:`ProcessRewardModel` scores a batch in batched forwards and turns each
P(correct) into a verdict: -1 below ``threshold`` (0.25 by default: "wrong" said with some
confidence, as docs/results/verdict-noise.md advises), else +1; ``PRMScores.soft`` gives
2 P - 1 in [-1, 1]. The input layouts in use (``PRMConfig.layout``):

- ``token_classification``: a token-classification model with a 2-class head, read at the last
  token of each ``step + separator`` (default ``"\\n"``), the rows TRL's former PRM trainer
  wrote: BOS, the problem's ids, each ``step + separator`` tokenized on its own;
- ``qwen``: Qwen2.5-Math-PRM's: the chat template (system prompt, the problem as the user
  turn, the steps each followed by ``<extra_0>`` as the assistant turn), the model's own
  2-class head read at each ``<extra_0>`` (``trust_remote_code=True`` for the released model);
- ``math_shepherd``: Math-Shepherd's: ``problem + " " + steps each followed by " ки\\n"``, a
  causal LM whose next-token logits at each ``ки`` over ``good_token`` ("+") and
  ``bad_token`` ("-"), softmaxed, give P(correct).

A step past ``max_length`` is not scored (verdict 0) and counted; a batch whose forward fails
gets neutral verdicts (0) with a logged warning, and training goes on. ``stats`` keeps the
calls, steps and seconds (the math step reward logs ``time/verdicts_s`` under TRL).

From YAML or ``reward_func_kwargs``, a mapping ``{"prm": {PRMConfig fields}}`` as
``step_verifier`` builds one::

    reward_func_kwargs:
      math_step_reward: {step_verifier: {prm: {model: path/to/prm, layout: qwen}}}
"""

from botgrpo.rewards.prm.config import DEFAULT_SEPARATORS, LAYOUTS, PRMConfig
from botgrpo.rewards.prm.model import PRMScores, PRMStats, ProcessRewardModel

__all__ = [
    "DEFAULT_SEPARATORS",
    "LAYOUTS",
    "PRMConfig",
    "PRMScores",
    "PRMStats",
    "ProcessRewardModel",
    "prm_from_options",
]


def prm_from_options(value: object, where: str = "step_verifier") -> ProcessRewardModel | None:
    """The PRM a ``{"prm": {...}}`` option mapping names (None for any other value); a bad
    option is a ValueError naming ``where``."""
    from collections.abc import Mapping

    if not (isinstance(value, Mapping) and "prm" in value):
        return None
    return ProcessRewardModel(check_prm_options(value, where))


def check_prm_options(value: object, where: str = "step_verifier") -> PRMConfig:
    """The PRMConfig of a ``{"prm": {...}}`` mapping, checked without loading the model."""
    import dataclasses
    from collections.abc import Mapping

    options = value.get("prm") if isinstance(value, Mapping) else None
    if not isinstance(value, Mapping) or len(value) != 1 or not isinstance(options, Mapping):
        raise ValueError(f"{where}: write a PRM as {{prm: {{model: ..., layout: ...}}}}")
    fields = sorted(f.name for f in dataclasses.fields(PRMConfig))
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise ValueError(
            f"{where}: unknown PRM option {', '.join(map(repr, unknown))}; a PRM takes {', '.join(fields)}"
        )
    try:
        return PRMConfig(**options)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: {err}") from None
