"""Line breaks and blanks, the same in every reader of completions, prompts and files.

A completion written with CRLF, a lone CR, a byte-order mark or Unicode line separators must be
read as its LF / ASCII form is (the same fences, steps, lines and answers), with character
offsets into the text as given: every reader here matches the breaks in place and never
rewrites the text before computing spans.

- :data:`CODE_BREAK`: the line terminators of Python source and of JavaScript (``\\r\\n``,
  ``\\r``, ``\\n``): the lines compilers, linters and tracebacks number.
- :data:`JS_BREAK`: JavaScript's, which also end a line at U+2028 and U+2029 (Babel and ESLint
  number lines so).
- :data:`TEXT_BREAK`: prose and step text, every break ``str.splitlines`` knows (also ``\\v``,
  ``\\f``, U+001C-U+001E, U+0085, U+2028, U+2029).
- blanks (:func:`strip_blanks`, :func:`is_blank`): what is removed around a step or an answer:
  Unicode whitespace and the invisible U+FEFF (byte-order mark) and U+200B (zero-width space).
"""

from __future__ import annotations

import re

CODE_BREAK = re.compile(r"\r\n|\r|\n")
JS_BREAK = re.compile(r"\r\n|[\r\n\u2028\u2029]")
TEXT_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")

#: The characters of TEXT_BREAK, for regular-expression classes (``[^...]``, look-behinds).
TEXT_BREAK_CHARS = "\\n\\r\\v\\f\\x1c\\x1d\\x1e\\x85\\u2028\\u2029"

_INVISIBLE = "\ufeff\u200b"


def is_blank(ch: str) -> bool:
    """Whether one character is whitespace, a byte-order mark or a zero-width space."""
    return ch.isspace() or ch in _INVISIBLE


def strip_blanks(text: str) -> str:
    """``text`` without leading and trailing whitespace, byte-order marks and zero-width spaces."""
    start, end = blank_bounds(text, 0, len(text))
    return text[start:end]


def blank_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of ``text[start:end]`` without its leading and trailing blanks, in ``text``
    coordinates (``(k, k)`` when it is all blanks)."""
    while start < end and is_blank(text[start]):
        start += 1
    while end > start and is_blank(text[end - 1]):
        end -= 1
    return start, end


def line_bounds(
    text: str, start: int = 0, end: int | None = None, breaks: re.Pattern = CODE_BREAK
) -> list[tuple[int, int]]:
    """Spans of the lines of ``text[start:end]`` in ``text`` coordinates, each with its
    terminator (``\\r\\n`` is one); a trailing break opens no empty last line."""
    end = len(text) if end is None else end
    bounds, pos = [], start
    for m in breaks.finditer(text, start, end):
        bounds.append((pos, m.end()))
        pos = m.end()
    if pos < end:
        bounds.append((pos, end))
    return bounds


def split_lines(text: str, breaks: re.Pattern = CODE_BREAK) -> list[str]:
    """The lines of ``text`` without their terminators (as :func:`line_bounds` counts them)."""
    lines, pos = [], 0
    for m in breaks.finditer(text):
        lines.append(text[pos : m.start()])
        pos = m.end()
    if pos < len(text):
        lines.append(text[pos:])
    return lines


def count_lines(text: str, breaks: re.Pattern = CODE_BREAK) -> int:
    """Number of lines of ``text`` (0 for the empty text)."""
    return len(line_bounds(text, 0, None, breaks))


def line_contents(
    text: str, start: int = 0, end: int | None = None, breaks: re.Pattern = CODE_BREAK
) -> list[tuple[int, int]]:
    """Spans of the lines of ``text[start:end]`` without their terminators (as
    :func:`line_bounds` counts the lines), in ``text`` coordinates."""
    end = len(text) if end is None else end
    out, pos = [], start
    for m in breaks.finditer(text, start, end):
        out.append((pos, m.start()))
        pos = m.end()
    if pos < end:
        out.append((pos, end))
    return out


#: Every blank character (whitespace of the Basic Multilingual Plane, U+FEFF, U+200B) -> None.
_BLANK_TABLE = dict.fromkeys(c for c in range(0x10000) if chr(c).isspace() or chr(c) in _INVISIBLE)


def remove_blanks(text: str) -> str:
    """``text`` with every blank removed, inside as well as around (``"7 +\\t5"`` -> ``"7+5"``)."""
    return text.translate(_BLANK_TABLE)
