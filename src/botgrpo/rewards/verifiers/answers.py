"""Final-answer check: is a predicted answer equal to the reference (the outcome G of Eq. 8)?

Two stages:

1. Exact arithmetic: after unwrapping ``$...$``, ``\\(...\\)``, ``\\boxed{...}`` and a trailing
   period, if both answers are plain arithmetic (integers, decimals, fractions, ``\\frac``;
   parsed by :mod:`botgrpo.rewards.verifiers.symbolic`, nothing evaluated), they are compared exactly.
   Equal values are correct; different values with no decimal point on either side are wrong.
   This settles most numeric answers (AIME answers are integers) in microseconds.
2. Otherwise `math-verify <https://github.com/huggingface/Math-Verify>`_ parses both (LaTeX,
   sets, intervals, equivalent symbolic forms) and compares them.

math-verify guards itself with ``signal.alarm``, which only works in the main thread. In the
main thread the check runs here with its timeout (``timeout_s``, whole seconds); in any other
thread it runs in a child process with the same timeout
(:mod:`~botgrpo.rewards.verifiers.math_verify_process`), so that a short input such as
``9^{9^9}`` cannot freeze the caller. math-verify's exceptions and timeouts never escape: they
count as a wrong answer and are reported in :attr:`AnswerCheck.method`. How short answers are
read (candidate lists are not paid) is in :mod:`~botgrpo.rewards.verifiers.math_verify_check`.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from math_verify.errors import TimeoutException

from botgrpo.rewards.verifiers.math_verify_check import verify_answer
from botgrpo.rewards.verifiers.math_verify_process import verify_in_process
from botgrpo.rewards.verifiers.symbolic import SymbolicConfig, evaluate_arithmetic

__all__ = ["AnswerCheck", "AnswerConfig", "check_answer"]


@dataclass(frozen=True)
class AnswerConfig:
    """Options of the final-answer check."""

    timeout_s: int = 5
    """math-verify timeout in whole seconds (off the main thread, in a child process)."""
    max_chars: int = 2000
    """A longer prediction is cut to its last ``max_chars`` characters (the answer comes last)."""
    float_rounding: int = 6
    """Decimal places math-verify rounds floats to before comparing."""

    def __post_init__(self) -> None:
        if self.timeout_s < 1:
            raise ValueError(f"AnswerConfig.timeout_s must be >= 1 second, got {self.timeout_s}")
        if self.max_chars < 1:
            raise ValueError(f"AnswerConfig.max_chars must be >= 1, got {self.max_chars}")
        if self.float_rounding < 0:
            raise ValueError("AnswerConfig.float_rounding must be >= 0")


@dataclass(frozen=True)
class AnswerCheck:
    """Result of one answer check."""

    correct: bool
    """Whether the prediction equals the reference."""
    method: str
    """How it was decided: "exact", "math_verify", "empty", "error" or "timeout"."""


_WRAPPERS = (
    re.compile(r"^\$+(.*?)\$+$", re.DOTALL),
    re.compile(r"^\\\((.*)\\\)$", re.DOTALL),
    re.compile(r"^\\\[(.*)\\\]$", re.DOTALL),
    re.compile(r"^\\boxed\{(.*)\}$", re.DOTALL),
)


def _unwrap(answer: str) -> str:
    text = answer.strip().rstrip(".").strip()
    changed = True
    while changed:
        changed = False
        for pattern in _WRAPPERS:
            m = pattern.match(text)
            if m:
                text, changed = m.group(1).strip(), True
    return text


_EXACT = SymbolicConfig(allow_symbols=False, max_claim_chars=200)


def _math_verify(prediction: str, gold: str, config: AnswerConfig) -> AnswerCheck:
    if threading.current_thread() is not threading.main_thread():
        ok, method = verify_in_process(prediction, gold, config.float_rounding, config.timeout_s)
        return AnswerCheck(ok, method)
    try:
        ok, method = verify_answer(prediction, gold, config.float_rounding, config.timeout_s)
    except TimeoutException:
        return AnswerCheck(False, "timeout")
    return AnswerCheck(ok, method)


def check_answer(
    prediction: str | None, gold: str, config: AnswerConfig | None = None
) -> AnswerCheck:
    """Compare a predicted final answer with the reference answer.

    >>> check_answer("\\\\boxed{42}", "42")
    AnswerCheck(correct=True, method='exact')
    >>> check_answer("$\\\\frac{2}{4}$", "0.5").correct
    True
    >>> check_answer("x = \\\\frac{\\\\sqrt{2}}{2}", "\\\\frac{1}{\\\\sqrt{2}}").correct
    True
    >>> check_answer("41", "42").correct
    False
    """
    config = config or AnswerConfig()
    if prediction is None or not prediction.strip():
        return AnswerCheck(False, "empty")
    prediction = prediction[-config.max_chars :]
    pred_core, gold_core = _unwrap(prediction), _unwrap(str(gold))
    a, b = evaluate_arithmetic(pred_core, _EXACT), evaluate_arithmetic(gold_core, _EXACT)
    percent = "%" in pred_core or "%" in gold_core  # 50% against 50: math-verify's reading
    if a is not None and b is not None and not percent:
        if a == b:
            return AnswerCheck(True, "exact")
        if "." not in pred_core and "." not in gold_core:
            return AnswerCheck(False, "exact")
    return _math_verify(prediction, str(gold), config)
