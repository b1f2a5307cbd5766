"""Options of a process reward model used as a step verdict source."""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The input layouts of the PRMs in use (see :mod:`botgrpo.rewards.prm`).
LAYOUTS = ("token_classification", "qwen", "math_shepherd")

#: Each layout's separator after a step, when ``PRMConfig.separator`` is None.
DEFAULT_SEPARATORS = {
    "token_classification": "\n",
    "qwen": "<extra_0>",
    "math_shepherd": " ки\n",
}

#: The system prompt Qwen2.5-Math-PRM is trained with.
QWEN_SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."

DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class PRMConfig:
    """Which PRM to load, how to lay out its input, and how to turn its P(correct) into
    verdicts."""

    model: str
    """A local folder saved with ``save_pretrained`` or a hub name (offline: in the cache)."""
    layout: str = "token_classification"
    """How the model reads steps: "token_classification" (a 2-class token head read at the
    separator after each step: TRL's former PRM trainer), "qwen" (Qwen2.5-Math-PRM: the chat
    template, ``<extra_0>`` after each step, the model's own 2-class head), "math_shepherd" (a
    causal LM whose next-token logits over ``good_token`` and ``bad_token`` at the step tag give
    P(correct))."""
    separator: str | None = None
    """What follows each step (None: the layout's, :data:`DEFAULT_SEPARATORS`); the model is
    read at the token holding the separator's last non-blank character (its last character
    when it is all blanks)."""
    positive_label: int = 1
    """The head's class meaning "correct" (token_classification and qwen layouts)."""
    good_token: str = "+"
    """math_shepherd: the token whose probability is P(correct)."""
    bad_token: str = "-"
    """math_shepherd: the token whose probability is P(wrong)."""
    system_prompt: str = QWEN_SYSTEM_PROMPT
    """qwen: the system message of the chat template."""
    threshold: float = 0.25
    """A step is judged wrong (-1) when P(correct) is below this, else right (+1). Below 0.5 by
    default: a false alarm on a right step costs BoT its lead, a missed error does not
    (docs/results/verdict-noise.md), so "wrong" is said only with some confidence."""
    batch_size: int = 8
    """Completions per forward pass."""
    max_length: int = 4096
    """Tokens per input; steps past it are not scored (verdict 0, counted as truncated)."""
    device: str = "auto"
    """"auto" (CUDA when present), "cpu", "cuda", "cuda:1", ..."""
    dtype: str = "auto"
    """"auto" (bfloat16 on CUDA, float32 on a CPU), "float32", "bfloat16" or "float16"."""
    trust_remote_code: bool = False
    """Load the model's own code (Qwen2.5-Math-PRM ships its head as remote code)."""

    def __post_init__(self) -> None:
        from botgrpo.rewards.configs import check_config_types

        check_config_types(self)
        if not self.model:
            raise ValueError("PRMConfig.model must name a model folder or a hub name")
        if self.layout not in LAYOUTS:
            raise ValueError(f"PRMConfig.layout must be one of {LAYOUTS}, got {self.layout!r}")
        if self.separator is not None and not self.separator:
            raise ValueError("PRMConfig.separator must be None (the layout's) or non-empty")
        if not (math.isfinite(self.threshold) and 0 < self.threshold < 1):
            raise ValueError(f"PRMConfig.threshold must lie in (0, 1), got {self.threshold}")
        if self.batch_size < 1 or self.max_length < 2:
            raise ValueError("PRMConfig needs batch_size >= 1 and max_length >= 2")
        if self.positive_label not in (0, 1):
            raise ValueError(f"PRMConfig.positive_label must be 0 or 1, got {self.positive_label}")
        if self.dtype not in DTYPES:
            raise ValueError(f"PRMConfig.dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.good_token == self.bad_token or not self.good_token or not self.bad_token:
            raise ValueError("PRMConfig.good_token and bad_token must be two different tokens")

    @property
    def step_separator(self) -> str:
        """The separator in force."""
        return self.separator if self.separator is not None else DEFAULT_SEPARATORS[self.layout]
