"""Split a math solution into steps (character spans) and its final answer.

Three layouts are understood:

- ``"tags"`` (the paper's format, arXiv 2610.09804 Sec. 4): ``<step 1> ... </step 1>`` blocks
  and a ``<final> ... </final>`` answer. A step may also end at the next tag or at the end of
  the text (``<step 1> ... <step 2> ...``). Tag names are case-insensitive and the number is
  optional (``<step>``, ``<step 2>``, ``<step_2>``, ``<step2>``).
- ``"step_n"``: lines starting with ``Step N:`` (also ``**Step N.**``, ``## Step N)``); a step
  runs to the next header; a line starting with ``Final answer:`` or ``Answer:`` opens the
  final answer, which runs to the end.
- ``"lines"``: every non-empty line is a step; a ``Final answer:``/``Answer:`` line is the answer.
- ``"auto"``: tags if any step/final tag occurs, else ``step_n`` if a header occurs, else lines.

Step spans include their tags (the tag tokens are part of the step) and exclude the
whitespace after an implicitly closed step. The format verdict feeds the format bonus:

- ``"well_formed"``: at least one step and no problem found;
- ``"malformed"``: mismatched, stray or nested closing tags, tags inside ``<final>``,
  duplicate or empty ``<final>``, steps after ``<final>``, a missing ``<final>`` (when
  required) or step numbers that are not 1, 2, 3, ... in order; ``problems`` lists each
  finding;
- ``"missing"``: no step at all.

Parsing never raises on bad input; the worst case is ``"malformed"`` with the steps it could read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from botgrpo.rewards.text import (
    TEXT_BREAK,
    TEXT_BREAK_CHARS,
    blank_bounds,
    line_contents,
    strip_blanks,
)

__all__ = ["FormatVerdict", "ParsedSolution", "Step", "StepFormat", "parse_steps"]

StepFormat = Literal["tags", "step_n", "lines", "auto"]
FormatVerdict = Literal["well_formed", "malformed", "missing"]
STEP_FORMATS: tuple[str, ...] = ("tags", "step_n", "lines", "auto")

_TAG = re.compile(r"<\s*(/?)\s*(step|final)(?:[\s_]*(\d+))?\s*>", re.IGNORECASE)
#: A header or answer line starts the text or follows any line break
#: (:data:`~botgrpo.rewards.text.TEXT_BREAK`: CRLF, CR, U+2028, ... as LF), after blanks, a
#: byte-order mark included.
_LINE_START = rf"(?<![^{TEXT_BREAK_CHARS}])(?:[^\S{TEXT_BREAK_CHARS}]|[\ufeff\u200b])*"
_H = rf"[^\S{TEXT_BREAK_CHARS}]"  # a blank within a line (a tab, U+00A0, ...)
_HEADER = re.compile(rf"{_LINE_START}(?:[#>*_]+{_H}*)?step{_H}*(\d+){_H}*[:.)][*_]*", re.IGNORECASE)
_ANSWER_LINE = re.compile(
    rf"{_LINE_START}(?:[#>*_]+{_H}*)?(?:final{_H}+answer|answer)\b[^{TEXT_BREAK_CHARS}:]{{0,20}}:",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Step:
    """One step of a solution."""

    start: int
    """First character of the step (its opening tag or header), in the completion text."""
    end: int
    """One past its last character (its closing tag, if any)."""
    text: str
    """The step's content without tags or header, stripped."""
    number: int | None = None
    """The number written in its tag or header, if any."""
    closed: bool = True
    """False when the step ended at the next tag or the end of the text."""


@dataclass(frozen=True)
class ParsedSolution:
    """Steps, final answer and format verdict of one completion."""

    format: str
    """The layout used ("tags", "step_n" or "lines"; "auto" resolved)."""
    steps: tuple[Step, ...]
    """The steps in order."""
    final: tuple[int, int] | None
    """Character span of the final answer's content, or None."""
    final_text: str | None
    """The final answer's content, stripped, or None."""
    verdict: FormatVerdict
    """Format verdict for the format bonus."""
    problems: tuple[str, ...] = field(default=())
    """Human-readable reasons for a "malformed" verdict."""

    def spans_S2(self) -> np.ndarray:
        """The steps' character spans, int64 [S, 2]."""
        return np.array([(s.start, s.end) for s in self.steps], dtype=np.int64).reshape(-1, 2)


def _rstrip_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


class _TagParser:
    """State machine over the tags of one text (one instance per parse)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.steps: list[Step] = []
        self.problems: list[str] = []
        self.open_step: tuple[int, int, int | None] | None = None  # (tag start, content, number)
        self.open_final: int | None = None  # content start
        self.final: tuple[int, int] | None = None
        self.implicit: list[int | None] = []  # numbers of implicitly closed steps

    def _close_step(self, content_end: int, end: int, closed: bool) -> None:
        assert self.open_step is not None
        start, content, number = self.open_step
        if not closed:
            end = _rstrip_end(self.text, start, end)
            self.implicit.append(number)
        body = strip_blanks(self.text[content:content_end])
        self.steps.append(Step(start, end, body, number, closed))
        self.open_step = None

    def _close_final(self, end: int) -> None:
        assert self.open_final is not None
        self.final = (self.open_final, end)
        self.open_final = None

    def feed(self, m: re.Match[str]) -> None:
        closing, kind, num = m.group(1) == "/", m.group(2).lower(), m.group(3)
        number = int(num) if num is not None else None
        tag = m.group(0)
        if kind == "step" and not closing:
            if self.open_final is not None:
                self.problems.append(f"{tag!r} at {m.start()} inside <final>")
                self._close_final(m.start())
            elif self.final is not None:
                self.problems.append(f"{tag!r} at {m.start()} after <final>")
            if self.open_step is not None:
                self._close_step(m.start(), m.start(), closed=False)
            self.open_step = (m.start(), m.end(), number)
        elif kind == "step":
            self._feed_step_close(m, number, tag)
        elif not closing:
            if self.final is not None or self.open_final is not None:
                self.problems.append(f"duplicate <final> at {m.start()}")
            if self.open_step is not None:
                self._close_step(m.start(), m.start(), closed=False)
            if self.open_final is None:
                self.open_final = m.end()
        elif self.open_final is not None:
            self._close_final(m.start())
        else:
            self.problems.append(f"stray {tag!r} at {m.start()} (no open <final>)")

    def _feed_step_close(self, m: re.Match[str], number: int | None, tag: str) -> None:
        if self.open_step is not None:
            opened = self.open_step[2]
            if number is not None and opened is not None and number != opened:
                self.problems.append(f"{tag!r} at {m.start()} closes <step {opened}>")
            self._close_step(m.start(), m.end(), closed=True)
        elif self.implicit and number is not None and number in self.implicit:
            self.problems.append(
                f"{tag!r} at {m.start()} closes a step opened before another: nested"
            )
        else:
            self.problems.append(f"stray {tag!r} at {m.start()} (no open step)")

    def finish(self) -> None:
        n = len(self.text)
        if self.open_step is not None:
            self._close_step(n, n, closed=False)
        if self.open_final is not None:
            self._close_final(n)


def _check_numbers(steps: list[Step], problems: list[str]) -> None:
    numbers = [s.number for s in steps if s.number is not None]
    if numbers and numbers != list(range(1, len(numbers) + 1)):
        problems.append(f"step numbers {numbers} are not 1, 2, 3, ... in order")


def _finish(
    fmt: str,
    text: str,
    steps: list[Step],
    final: tuple[int, int] | None,
    problems: list[str],
) -> ParsedSolution:
    final_text = None
    if final is not None:
        final_text = strip_blanks(text[final[0] : final[1]])
    verdict: FormatVerdict = "malformed" if problems else "well_formed" if steps else "missing"
    return ParsedSolution(fmt, tuple(steps), final, final_text, verdict, tuple(problems))


def _parse_tags(text: str, require_final: bool) -> ParsedSolution:
    parser = _TagParser(text)
    matches = list(_TAG.finditer(text))
    for m in matches:
        parser.feed(m)
    parser.finish()
    _check_numbers(parser.steps, parser.problems)
    if parser.steps and require_final and parser.final is None:
        parser.problems.append("no <final> answer")
    if parser.final is not None and not text[parser.final[0] : parser.final[1]].strip():
        parser.problems.append(f"empty <final> at {parser.final[0]}")  # no answer given
    return _finish("tags", text, parser.steps, parser.final, parser.problems)


def _answer_line(text: str) -> tuple[int, tuple[int, int] | None]:
    """Where the steps stop (the answer line's start, or the end) and the answer's span."""
    m = _ANSWER_LINE.search(text)
    return (m.start(), (m.end(), len(text))) if m else (len(text), None)


def _parse_headers(text: str) -> ParsedSolution:
    stop, final = _answer_line(text)
    headers = [m for m in _HEADER.finditer(text) if m.start() < stop]
    steps: list[Step] = []
    for k, m in enumerate(headers):
        nxt = headers[k + 1].start() if k + 1 < len(headers) else stop
        end = _rstrip_end(text, m.start(), nxt)
        steps.append(
            Step(m.start(), end, strip_blanks(text[m.end() : end]), int(m.group(1)), False)
        )
    problems: list[str] = []
    _check_numbers(steps, problems)
    return _finish("step_n", text, steps, final, problems)


def _parse_lines(text: str) -> ParsedSolution:
    stop, final = _answer_line(text)
    steps: list[Step] = []
    for line_start, line_end in line_contents(text, 0, stop, TEXT_BREAK):
        start, end = blank_bounds(text, line_start, line_end)
        if end > start:
            steps.append(Step(start, end, text[start:end], None, True))
    return _finish("lines", text, steps, final, [])


def parse_steps(
    text: str, step_format: StepFormat = "tags", *, require_final: bool = True
) -> ParsedSolution:
    """Steps, final answer and format verdict of a solution (see the module docstring).

    ``require_final`` applies to the tag layout: a solution with tags but no ``<final>`` is
    malformed.

    >>> p = parse_steps("<step 1> 2+2=4 </step 1><step 2> 4*3=12 </step 2><final>12</final>")
    >>> [s.text for s in p.steps], p.final_text, p.verdict
    (['2+2=4', '4*3=12'], '12', 'well_formed')
    >>> parse_steps("<step 1> a <step 2> b </step 1> <final>1</final>").verdict
    'malformed'
    """
    if step_format not in STEP_FORMATS:
        raise ValueError(f"unknown step_format {step_format!r}; valid: {', '.join(STEP_FORMATS)}")
    if step_format == "auto":
        if _TAG.search(text):
            step_format = "tags"
        elif _HEADER.search(text):
            step_format = "step_n"
        else:
            step_format = "lines"
    if step_format == "tags":
        return _parse_tags(text, require_final)
    if step_format == "step_n":
        return _parse_headers(text)
    return _parse_lines(text)
