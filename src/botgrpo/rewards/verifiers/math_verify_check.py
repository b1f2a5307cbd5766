"""One math-verify comparison of a predicted answer with a reference, and how text is read.

math-verify (https://github.com/huggingface/Math-Verify) parses LaTeX, sets, intervals and
symbolic forms. Two readings are tightened here, both against a policy that lists candidates
and gets paid for one of them:

- Short text without ``$``, ``\\(``, ``\\[`` or ``\\boxed`` that is bare LaTeX or holds two or
  more numbers is read inside ``$...$`` first, after trailing sentence punctuation is dropped:
  the plain-expression reader keeps one number of several, so ``(3, 4).`` or ``12 or 13``
  would match a reference of 4 or 13.
- Such text is only accepted when the part math-verify read holds every number of the text:
  ``The answer is 12 or 13`` does not match 12. Text with Python's power ``**`` is read by the
  plain-expression reader under the same rule (LaTeX reads ``$9**9**9$`` as 9).

Errors count as a wrong answer ("error"); a timeout raises math-verify's ``TimeoutException``
to the caller, which reports it.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from math_verify import parse, verify

__all__ = ["verify_answer"]

_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed")

#: A number in plain text.
_NUMBER = re.compile(r"\d+(?:\.\d+)?")

#: Sentence punctuation after an answer, dropped before a short answer is read as LaTeX.
_TRAILING = re.compile(r"[\s.;:,!?]+$")


def _read(text: str, timeout: int | None) -> list[Any]:
    """math-verify's parse; a parse error is no reading (a timeout propagates)."""
    try:
        return parse(text, parsing_timeout=timeout, raise_on_error=True)  # type: ignore[arg-type]
    except Exception:
        return []


def parse_answer(text: str, timeout: int | None) -> list[Any]:
    """Read ``text`` as math-verify does, tightened as the module docstring says."""
    short = len(text) <= 500 and not _DELIMITED.search(text)
    if not short:
        return _read(text, timeout)
    core = _TRAILING.sub("", text)
    numbers = len(_NUMBER.findall(core))
    if numbers >= 2:
        # ``**`` is Python's power, not LaTeX (where ``$9**9$`` reads as 9): the plain reader
        parsed = _read(core if "**" in core else f"${core}$", timeout)
        if parsed and len(_NUMBER.findall(str(parsed[-1]))) >= numbers:
            return parsed
        return []
    if "\\" in core:
        parsed = _read(f"${core}$", timeout)
        if parsed:
            return parsed
    return _read(text, timeout) or _read(f"${core}$", timeout)


@functools.lru_cache(maxsize=4096)
def _parse_gold(gold: str, timeout: int | None) -> tuple[Any, ...]:
    return tuple(parse_answer(gold, timeout))


def verify_answer(
    prediction: str, gold: str, float_rounding: int, timeout: int | None
) -> tuple[bool, str]:
    """Whether ``prediction`` equals ``gold`` by math-verify, and how it was decided
    ("math_verify" or "error"). A timeout raises math-verify's ``TimeoutException``; ``timeout``
    None runs without one (the only way off the main thread: math-verify uses ``signal.alarm``).
    """
    try:
        gold_parsed = list(_parse_gold(gold, timeout))
        pred_parsed = parse_answer(prediction, timeout)
        ok = verify(
            gold_parsed,
            pred_parsed,
            float_rounding=float_rounding,
            timeout_seconds=timeout,
            raise_on_error=True,
        )
    except Exception:
        return False, "error"
    return bool(ok), "math_verify"
