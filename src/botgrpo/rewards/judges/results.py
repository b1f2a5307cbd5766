"""Results of the two LLM judges: per-step verdicts for math, a score and worst lines for code.

A failed judgement (timeout, connection or HTTP error, unparseable answer) is *neutral*: all step
verdicts 0, or score 0 with no line penalties, and ``ok`` False with the reason in ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

CORRECT, UNCERTAIN, INCORRECT = 1, 0, -1
"""Step verdict values e_s of recipe 1 (arXiv 2610.09804, Eq. 8)."""

IMPACTS = (-1, -2, -3)
"""Allowed line impacts of the code judge (recipe 2: a judge's top-3 lines, impact / 10)."""

MAX_FLAGGED_LINES = 3
"""At most this many lines are kept from one code judgement."""

SCORE_RANGE = (0.0, 10.0)
"""The code judge's score range; scores outside are clamped."""


@dataclass(frozen=True)
class StepVerdicts:
    """The step judge's verdict on every step of one solution.

    >>> v = StepVerdicts.neutral(3, "timeout")
    >>> v.ok, v.verdicts, v.error
    (False, (0, 0, 0), 'timeout')
    """

    verdicts: tuple[int, ...]
    """e_s per step in step order: +1 correct, -1 incorrect, 0 uncertain or not given."""
    ok: bool = True
    """False when the judge failed; then every verdict is 0."""
    error: str | None = None
    """Why the judge failed (``None`` when ``ok``)."""
    raw: str | None = None
    """The judge's answer text, when there was one."""
    reasons: Mapping[int, str] = field(default_factory=dict)
    """Short reasons the judge gave, by 1-based step number."""
    missing: tuple[int, ...] = ()
    """1-based numbers of the steps the answer gave no verdict for (their verdict is 0)."""
    dropped: int = 0
    """Entries of the answer that were invalid and ignored (e.g. a step number out of range)."""
    problems: tuple[str, ...] = ()
    """What was dropped or repaired, in words, for logs."""
    cached: bool = False
    """True when the answer came from the on-disk cache."""

    @classmethod
    def neutral(cls, n_steps: int, error: str, raw: str | None = None) -> StepVerdicts:
        """All-uncertain verdicts for a failed judgement."""
        return cls(verdicts=(UNCERTAIN,) * n_steps, ok=False, error=error, raw=raw)

    @property
    def n_steps(self) -> int:
        """Number of judged steps."""
        return len(self.verdicts)


@dataclass(frozen=True)
class CodeVerdict:
    """The code judge's score and worst lines for one piece of code.

    >>> v = CodeVerdict.neutral("HTTP 500")
    >>> v.ok, v.score, dict(v.lines)
    (False, 0.0, {})
    """

    score: float
    """Quality score in [0, 10]; 0 when the judge failed (check ``ok``)."""
    lines: Mapping[int, int] = field(default_factory=dict)
    """At most three flagged lines, ``{line: impact}``; lines are 1-based within the code
    block, impacts in {-1, -2, -3}, in the judge's order (worst first)."""
    ok: bool = True
    """False when the judge failed; then ``score`` is 0 and ``lines`` is empty."""
    error: str | None = None
    """Why the judge failed (``None`` when ``ok``)."""
    raw: str | None = None
    """The judge's answer text, when there was one."""
    reasons: Mapping[int, str] = field(default_factory=dict)
    """Short reasons the judge gave, by flagged line."""
    dropped: int = 0
    """Line entries that were invalid and ignored (bad impact, line out of range, a 4th line)."""
    problems: tuple[str, ...] = ()
    """What was dropped or repaired (e.g. a clamped score), in words, for logs."""
    cached: bool = False
    """True when the answer came from the on-disk cache."""

    @classmethod
    def neutral(cls, error: str, raw: str | None = None) -> CodeVerdict:
        """Score 0 and no line penalties for a failed judgement."""
        return cls(score=0.0, ok=False, error=error, raw=raw)
