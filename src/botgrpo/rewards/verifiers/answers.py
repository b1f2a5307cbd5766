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
main thread the check uses its timeout (``timeout_s``, whole seconds); in any other thread it
runs without one (math-verify's own advice) and the input size limit ``max_chars`` is the
guard. math-verify's exceptions, including its timeout (a ``BaseException``), never escape:
they count as a wrong answer and are reported in :attr:`AnswerCheck.method`.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from typing import Any

from math_verify import parse, verify
from math_verify.errors import TimeoutException

from botgrpo.rewards.verifiers.symbolic import SymbolicConfig, evaluate_arithmetic

__all__ = ["AnswerCheck", "AnswerConfig", "check_answer"]


@dataclass(frozen=True)
class AnswerConfig:
    """Options of the final-answer check."""

    timeout_s: int = 5
    """math-verify timeout in whole seconds (main thread only; see the module docstring)."""
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


_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed")

#: A number in plain text: two or more in an answer make it a tuple, a list, a set or an
#: expression, which math-verify's plain-expression reader would cut to its last number.
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _parse(text: str, timeout: int | None) -> list[Any]:
    """math-verify's parse. Short text is read inside ``$...$`` first when it is bare LaTeX (no
    ``$``, ``\\(``, ``\\[``, ``\\boxed``) or holds two or more numbers: math-verify's
    plain-expression reader keeps only the last number it finds, so ``(3, 4)`` or ``12 or 13``
    would match a reference of 4 or 13, and a policy listing candidates would be paid."""
    short = len(text) <= 500 and not _DELIMITED.search(text)
    bare_latex = short and ("\\" in text or len(_NUMBER.findall(text)) >= 2)
    if bare_latex:
        parsed = parse(f"${text}$", parsing_timeout=timeout)  # type: ignore[arg-type]
        if parsed:
            return parsed
    parsed = parse(text, parsing_timeout=timeout)  # type: ignore[arg-type]
    if not parsed and not bare_latex and len(text) <= 500:
        parsed = parse(f"${text}$", parsing_timeout=timeout)  # type: ignore[arg-type]
    return parsed


@functools.lru_cache(maxsize=4096)
def _parse_gold(gold: str, timeout: int | None) -> tuple[Any, ...]:
    return tuple(_parse(gold, timeout))


def _math_verify(prediction: str, gold: str, config: AnswerConfig) -> AnswerCheck:
    main = threading.current_thread() is threading.main_thread()
    timeout = config.timeout_s if main else None
    try:
        gold_parsed = list(_parse_gold(gold, timeout))
        pred_parsed = _parse(prediction, timeout)
        ok = verify(
            gold_parsed,
            pred_parsed,
            float_rounding=config.float_rounding,
            timeout_seconds=timeout,
        )
    except TimeoutException:
        return AnswerCheck(False, "timeout")
    except Exception:
        return AnswerCheck(False, "error")
    return AnswerCheck(bool(ok), "math_verify")


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
