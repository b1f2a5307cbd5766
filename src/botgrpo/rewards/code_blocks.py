"""Find the code block of a response and map its lines back to response characters.

Diagnostics (compiler, linter, tracebacks, a code judge) number lines inside the extracted
code; the token reward needs them as character spans of the *whole response*, where the code
sits inside prose (arXiv 2610.09804, Sec. 5: "line numbers are relative to the extracted code
block and must be mapped back to positions in the full response text").

Choice of block: the first fenced block (```` ``` ```` or ``~~~``, three or more) tagged with
one of ``languages``; else the first untagged fenced block; else, with no usable fence, the
whole response if it compiles as Python. A fence left open (a truncated generation) runs to
the end of the text; a closing fence is indented at most 3 columns past the opening one, as in
CommonMark (a fence shown inside the code, e.g. in a docstring, is code). A fence indented by N spaces (inside a Markdown list item) has up to N
spaces removed from each of its lines in :attr:`CodeBlock.source`, as CommonMark reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from botgrpo.rewards.spans import line_spans
from botgrpo.rewards.text import CODE_BREAK, TEXT_BREAK_CHARS, count_lines

__all__ = ["PYTHON_LANGUAGES", "CodeBlock", "extract_code_block"]

PYTHON_LANGUAGES: tuple[str, ...] = ("python", "py", "python3")

#: A fence line starts the text or follows any line break (CRLF, CR, U+2028, ...: the text's
#: breaks, :data:`~botgrpo.rewards.text.TEXT_BREAK`), after blanks or a byte-order mark.
_B = TEXT_BREAK_CHARS
_OPEN = re.compile(
    rf"(?<![^{_B}])[ \t\ufeff]*(`{{3,}}|~{{3,}})[ \t]*([^\s`]*)[^{_B}]*(?:\r\n|[{_B}]|\Z)"
)


@dataclass(frozen=True)
class CodeBlock:
    """A code block located in a response."""

    code: str
    """The code (without fences)."""
    start: int
    """Offset of the code's first character in the response."""
    end: int
    """Offset one past its last character."""
    language: str | None
    """The fence's language tag (lower case), None when untagged or unfenced."""
    fenced: bool = True
    """False when the whole response is the code."""
    closed: bool = True
    """False when the opening fence is never closed."""
    indent: int = 0
    """Spaces before the opening fence (a fence inside a Markdown list item is indented)."""

    @property
    def source(self) -> str:
        """The code as a compiler should read it: up to :attr:`indent` leading spaces removed
        from each line, as CommonMark reads a fence inside a list item. Its lines are
        :attr:`code`'s, one for one (line numbers carry over); :attr:`code` stays the text as
        written, ``response[start:end]``."""
        if not self.indent:
            return self.code
        strip = re.compile(rf"^ {{0,{self.indent}}}", re.MULTILINE)
        return strip.sub("", self.code)

    def line_spans(self, text: str, breaks: re.Pattern = CODE_BREAK) -> np.ndarray:
        """Spans of the code's lines in ``text`` (the response), int64 [L, 2]; row k is line k+1
        (lines end at ``\\r\\n``, ``\\r`` or ``\\n``, as Python and JavaScript number them;
        ``breaks`` for other rules)."""
        return line_spans(text, self.start, self.end, breaks)

    @property
    def n_lines(self) -> int:
        """Number of lines of the code, counted as :meth:`line_spans` counts them."""
        return count_lines(self.code)


def _columns(blanks: str) -> int:
    """Width of leading blanks as CommonMark counts it: a tab advances to the next multiple of
    4, a byte-order mark takes no room."""
    col = 0
    for ch in blanks:
        col = col // 4 * 4 + 4 if ch == "\t" else col + (ch == " ")
    return col


def fenced_blocks(text: str) -> list[CodeBlock]:
    """Every fenced block of ``text`` in order, tagged or not (CommonMark fences: ``` or ~~~,
    closed by a fence at most 3 columns past the opening one; an unclosed one runs to the end)."""
    blocks = []
    pos = 0
    while (m := _OPEN.search(text, pos)) is not None:
        fence, lang = m.group(1), m.group(2).lower() or None
        opening = m.group(0)
        blanks = opening[: len(opening) - len(opening.lstrip(" \t\ufeff"))]
        # CommonMark: a closing fence is indented at most 3 columns past the opening's; one
        # indented further (a fence shown inside a docstring of the code) is code
        limit = _columns(blanks) + 3
        closing = re.compile(
            rf"(?<![^{_B}])([ \t\ufeff]*){re.escape(fence[0])}{{{len(fence)},}}[ \t]*(?=[{_B}]|\Z)"
        )
        c = closing.search(text, m.end())
        while c is not None and _columns(c.group(1)) > limit:
            c = closing.search(text, c.end())
        end = c.start() if c else len(text)
        indent = len(opening) - len(opening.lstrip(" "))
        code = text[m.end() : end]
        blocks.append(CodeBlock(code, m.end(), end, lang, True, c is not None, indent))
        pos = c.end() if c else len(text)
        if pos <= m.start():  # pragma: no cover - defensive: the search always advances
            break
    return blocks


def _compiles(code: str) -> bool:
    try:
        compile(code, "<response>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def extract_code_block(
    text: str, languages: tuple[str, ...] = PYTHON_LANGUAGES
) -> CodeBlock | None:
    """The response's code block (see the module docstring), or None when there is none.

    Nothing is executed: ``compile`` only parses.

    >>> text = "Here it is:\\n```python\\ndef f():\\n    return 1\\n```\\nDone."
    >>> b = extract_code_block(text)
    >>> b.code, text[b.start:b.end] == b.code, b.line_spans(text).tolist()
    ('def f():\\n    return 1\\n', True, [[22, 31], [31, 44]])
    >>> extract_code_block("no code here") is None
    True
    """
    blocks = fenced_blocks(text)
    wanted = {lang.lower() for lang in languages}
    for block in blocks:
        if block.language in wanted:
            return block
    for block in blocks:
        if block.language is None:
            return block
    if not blocks and text.strip() and _compiles(text):
        return CodeBlock(text, 0, len(text), None, fenced=False, closed=True)
    return None
