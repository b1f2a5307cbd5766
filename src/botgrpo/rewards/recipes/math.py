"""Recipe 1 of BoT-GRPO (arXiv 2610.09804, Eq. 8): math solutions with judged steps.

    r_t = w_g * 1[answer correct] + w_s * (1/|S|) * sum_{s in S(t)} e_s + b_format

Per completion:

1. parse the steps and the final answer (:mod:`botgrpo.rewards.steps`, the paper's
   ``<step i>`` / ``<final>`` tags by default);
2. G = 1 if the final answer equals the dataset's answer (:mod:`botgrpo.rewards.verifiers.answers`), else
   0; without a ``<final>`` the whole text is searched for the answer;
3. e_s from a verdict source: the symbolic verifier by default, or any callable
   ``(problem, steps) -> list[int]`` such as an LLM step judge (an object returned with a
   ``.verdicts`` attribute is accepted; an object with ``judge_many(problems, steps_lists)``
   judges the whole batch at once);
4. error propagation, decay and the bound (:mod:`botgrpo.rewards.compose`), spread over each
   step's tokens (:mod:`botgrpo.rewards.spans`);
5. b_format from the format verdict: +0.2 well-formed, -1.0 malformed, 0 no steps.

A completion whose answer cell is None (or a float NaN, a missing value) gets None (TRL: "not
applicable").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botgrpo.rewards.calling import (
    call_verdict_source,
    dataset_column,
    message_text,
    resolve_tokenizer,
    tokenize_completions,
)
from botgrpo.rewards.compose import FormatBonusConfig, StepSignalConfig, step_signal
from botgrpo.rewards.configs import check_config_types, config_from_mapping
from botgrpo.rewards.judges.options import as_judge
from botgrpo.rewards.prm import prm_from_options
from botgrpo.rewards.spans import TokenizedText
from botgrpo.rewards.steps import STEP_FORMATS, ParsedSolution, StepFormat, parse_steps
from botgrpo.rewards.types import TokenReward
from botgrpo.rewards.verifiers.answers import AnswerConfig, check_answer
from botgrpo.rewards.verifiers.symbolic import SymbolicConfig, SymbolicStepVerifier

__all__ = ["MathRewardConfig", "make_math_step_reward", "score_math_solution"]

StepVerdictSource = Callable[[str, list[str]], Any]


@dataclass(frozen=True)
class MathRewardConfig:
    """Options of the math step reward (recipe 1)."""

    step_format: StepFormat = "tags"
    """Step layout: "tags" (paper), "step_n", "lines" or "auto" (see botgrpo.rewards.steps)."""
    require_final: bool = True
    """With tags, a solution without ``<final>`` is malformed."""
    steps: StepSignalConfig = field(default_factory=StepSignalConfig)
    """Error propagation, decay window and bound of the step signal."""
    format_bonus: FormatBonusConfig = field(default_factory=FormatBonusConfig)
    """b_format by format verdict."""
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    """Final-answer check options (math-verify timeout, size limit)."""
    symbolic: SymbolicConfig = field(default_factory=SymbolicConfig)
    """Limits of the default symbolic step verifier."""
    answer_column: str = "answer"
    """Dataset column holding the reference answer."""
    name: str = "math_step_reward"
    """``__name__`` of the reward function (TRL logs rewards by it)."""

    def __post_init__(self) -> None:
        check_config_types(self)
        if self.step_format not in STEP_FORMATS:
            raise ValueError(
                f"MathRewardConfig.step_format must be one of {STEP_FORMATS}, "
                f"got {self.step_format!r}"
            )
        if not self.answer_column or not self.name:
            raise ValueError("MathRewardConfig.answer_column and name must be non-empty")


def _source_name(source: Any) -> str:
    return getattr(source, "__name__", type(source).__name__)


def _as_verdicts(result: Any, n_steps: int, source: Any, index: int) -> list[int]:
    """Check one verdict-source result: a list of n_steps values in {-1, 0, +1}."""
    verdicts = getattr(result, "verdicts", result)
    where = f"step verdict source {_source_name(source)!r} on completion {index}"
    if not isinstance(verdicts, Sequence) or isinstance(verdicts, str):
        raise TypeError(f"{where} returned {type(verdicts).__name__}; expected a list of ints")
    if len(verdicts) != n_steps:
        raise ValueError(f"{where} returned {len(verdicts)} verdicts for {n_steps} steps")
    out = []
    for v in verdicts:
        if isinstance(v, bool) or v not in (-1, 0, 1):
            raise ValueError(f"{where} returned verdict {v!r}; verdicts must be -1, 0 or +1")
        out.append(int(v))
    return out


def _judge_batch(
    source: Any, problems: list[str], steps: list[list[str]], indices: list[int]
) -> list[list[int]]:
    """Verdicts for every (problem, steps) pair, through the source's batch API if it has one."""
    results = call_verdict_source(source, "judge_steps", problems, steps, "step verdict source")
    return [
        _as_verdicts(r, len(s), source, i) for r, s, i in zip(results, steps, indices, strict=True)
    ]


def score_math_solution(
    tokens: TokenizedText,
    parsed: ParsedSolution,
    verdicts: Sequence[int],
    gold: str,
    config: MathRewardConfig,
) -> TokenReward:
    """The token reward of one parsed solution given its raw step verdicts."""
    prediction = parsed.final_text if parsed.final is not None else tokens.text
    answer = check_answer(prediction, gold, config.answer)
    spans = parsed.spans_S2()
    signal = step_signal(tokens.offsets_T2, spans, verdicts, len(tokens.text), config.steps)
    info = {
        "answer_correct": answer.correct,
        "answer_method": answer.method,
        "format": parsed.verdict,
        "format_problems": list(parsed.problems),
        "step_spans": [tuple(s) for s in spans.tolist()],
        "raw_verdicts": list(verdicts),
        "verdicts": signal.verdicts,
        "step_values": signal.values.tolist(),
    }
    return TokenReward(
        outcome=1.0 if answer.correct else 0.0,
        local=signal.local_T,
        format_bonus=config.format_bonus.bonus(parsed.verdict),
        steps=signal.steps_T,
        info=info,
    )


def make_math_step_reward(
    tokenizer: Any,
    config: MathRewardConfig | Mapping[str, Any] | None = None,
    *,
    step_verifier: StepVerdictSource | Any | None = None,
) -> Callable[..., list[TokenReward | None]]:
    """A TRL reward function returning one :class:`TokenReward` per completion (recipe 1).

    Args:
        tokenizer: the policy's tokenizer (or processor): maps generated ids to text offsets.
        config: options (or a mapping of them, nested for sub-configs); the defaults follow
            the paper (tags, error propagation, w = 3, B = 1).
        step_verifier: verdict source ``(problem, steps) -> list[int] | obj.verdicts``, or a
            mapping of :class:`~botgrpo.rewards.judges.JudgeConfig` options for an LLM
            :class:`~botgrpo.rewards.judges.StepJudge`, or ``{"prm": {PRMConfig options}}``
            for a process reward model (:mod:`botgrpo.rewards.prm`) (so YAML can name one);
            default: :class:`~botgrpo.rewards.verifiers.symbolic.SymbolicStepVerifier`.

    The returned callable takes ``prompts, completions, completion_ids=None, **columns`` and
    reads the reference answer from ``columns[config.answer_column]``.

    >>> from botgrpo.tiny import build_char_tokenizer
    >>> tok = build_char_tokenizer()
    >>> reward = make_math_step_reward(tok)
    >>> text = "<step 1>2*3=6</step 1><step 2>6+1=8</step 2><final>7</final>"
    >>> ids = tok(text).input_ids + [tok.eos_token_id]
    >>> [tr] = reward(prompts=["2*3+1?"], completions=[text], completion_ids=[ids], answer=["7"])
    >>> tr.outcome, tr.format_bonus, tr.info["verdicts"]
    (1.0, 0.2, [1, -1])
    >>> # step 1: (1 - phi(1)) / 2 = (1 - 0.75) / 2; step 2: -1 / 2; <final> and EOS: 0
    >>> float(tr.local[0]), float(tr.local[30]), float(tr.local[-1]), len(tr.local) == len(ids)
    (0.125, -0.5, 0.0, True)
    """
    cfg = config_from_mapping(MathRewardConfig, config)
    tok = resolve_tokenizer(tokenizer)
    prm = prm_from_options(step_verifier)
    source = prm if prm is not None else as_judge(step_verifier, "step", "step_verifier")
    source = source if source is not None else SymbolicStepVerifier(cfg.symbolic)
    if not (callable(source) or hasattr(source, "judge_steps") or hasattr(source, "judge_many")):
        raise TypeError("step_verifier must be callable (problem, steps) -> verdicts")
    name = cfg.name

    def reward(
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[TokenReward | None]:
        tokens = tokenize_completions(tok, completions, completion_ids, name)
        golds = [
            None if _missing(g) else g
            for g in dataset_column(kwargs, cfg.answer_column, len(tokens), name)
        ]
        prompt_list = list(prompts) if prompts is not None else [""] * len(tokens)
        if len(prompt_list) != len(tokens):
            raise ValueError(
                f"{name}: got {len(prompt_list)} prompts for {len(tokens)} completions"
            )
        parsed = [
            parse_steps(t.text, cfg.step_format, require_final=cfg.require_final) for t in tokens
        ]
        todo = [
            i
            for i, (p, g) in enumerate(zip(parsed, golds, strict=True))
            if p.steps and g is not None
        ]
        verdicts: dict[int, list[int]] = {i: [] for i in range(len(tokens))}
        if todo:
            problems = [message_text(prompt_list[i], role="user") for i in todo]
            steps = [[s.text for s in parsed[i].steps] for i in todo]
            start = time.perf_counter()
            verdicts.update(zip(todo, _judge_batch(source, problems, steps, todo), strict=True))
            log_metric = kwargs.get("log_metric")
            if callable(log_metric):  # under TRL: beside the other reward stages' seconds
                log_metric("time/verdicts_s", time.perf_counter() - start)
        return [
            None
            if gold is None
            else score_math_solution(tokens[i], parsed[i], verdicts[i], str(gold), cfg)
            for i, gold in enumerate(golds)
        ]

    reward.__name__ = reward.__qualname__ = name
    reward.local_bound = cfg.steps.bound  # type: ignore[attr-defined]
    return reward


def _missing(gold: Any) -> bool:
    """A missing answer: None, or a float NaN (pandas' and datasets' missing number), which
    would otherwise be compared as the text "nan"."""
    return gold is None or (isinstance(gold, float) and gold != gold)
