"""Static diagnostics of Python code: syntax (``compile``) and lint (pyflakes), with severities.

Nothing here runs the code: ``compile`` and pyflakes only parse it.

Severity of pyflakes messages (the paper's linter weights, arXiv 2610.09804 Sec. 5, are
fatal -0.5, error -0.1, warning -0.02 each):

- fatal: the module cannot be compiled or run as written (``SyntaxError`` from ``compile``,
  and pyflakes' compile-time classes: ``ReturnOutsideFunction``, ``YieldOutsideFunction``,
  ``ContinueOutsideLoop``, ``BreakOutsideLoop``, ``DuplicateArgument``,
  ``DefaultExceptNotLast``, ``TwoStarredExpressions``,
  ``TooManyExpressionsInStarredAssignment``, ``ImportStarNotPermitted``,
  ``FutureFeatureNotDefined``, ``LateFutureImport``, ``ForwardAnnotationSyntaxError``,
  ``LazyImportNotAtModuleScope``, ``LazyImportStarNotPermitted``);
- error: raises or misbehaves when reached (``UndefinedName``, ``UndefinedLocal``,
  ``UndefinedExport``, ``RaiseNotImplemented``, ``InvalidPrintSyntax``, ``IsLiteral``,
  ``IfTuple``, ``AssertTuple``, ``MultiValueRepeatedKeyLiteral``,
  ``MultiValueRepeatedKeyVariable``, every ``PercentFormat*`` and ``StringDotFormat*``);
- warning: everything else (``UnusedImport``, ``UnusedVariable``, ``RedefinedWhileUnused``,
  ``ImportStarUsed``, ``FStringMissingPlaceholders``, ... and any class added by a later
  pyflakes).
"""

from __future__ import annotations

import ast
import math
import warnings
from dataclasses import dataclass
from typing import Literal

from pyflakes import checker as pyflakes_checker

from botgrpo.rewards.text import count_lines

__all__ = [
    "Diagnostic",
    "PythonAnalysis",
    "SeverityWeights",
    "analyse_python",
    "lint_python",
    "pyflakes_severity",
    "syntax_error",
]

Severity = Literal["fatal", "error", "warning"]

_FATAL = frozenset(
    [
        "ReturnOutsideFunction",
        "YieldOutsideFunction",
        "ContinueOutsideLoop",
        "BreakOutsideLoop",
        "DuplicateArgument",
        "DefaultExceptNotLast",
        "TwoStarredExpressions",
        "TooManyExpressionsInStarredAssignment",
        "ImportStarNotPermitted",
        "FutureFeatureNotDefined",
        "LateFutureImport",
        "ForwardAnnotationSyntaxError",
        "LazyImportNotAtModuleScope",
        "LazyImportStarNotPermitted",
    ]
)
_ERROR = frozenset(
    [
        "UndefinedName",
        "UndefinedLocal",
        "UndefinedExport",
        "RaiseNotImplemented",
        "InvalidPrintSyntax",
        "IsLiteral",
        "IfTuple",
        "AssertTuple",
        "MultiValueRepeatedKeyLiteral",
        "MultiValueRepeatedKeyVariable",
    ]
)


@dataclass(frozen=True)
class SeverityWeights:
    """Score per diagnostic by severity (the paper's linter weights)."""

    fatal: float = -0.5
    """Per fatal diagnostic."""
    error: float = -0.1
    """Per error."""
    warning: float = -0.02
    """Per warning."""

    def __post_init__(self) -> None:
        for name in ("fatal", "error", "warning"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value <= 0):
                raise ValueError(f"SeverityWeights.{name} must be finite and <= 0, got {value}")

    def weight(self, severity: Severity) -> float:
        """The weight of one diagnostic of ``severity``."""
        return float(getattr(self, severity))


@dataclass(frozen=True)
class Diagnostic:
    """One finding about the code."""

    line: int
    """1-based line in the code block."""
    severity: Severity
    """"fatal", "error" or "warning"."""
    kind: str
    """``SyntaxError`` or the pyflakes message class."""
    message: str
    """Human-readable description."""


def pyflakes_severity(kind: str) -> Severity:
    """The severity of a pyflakes message class name (see the module docstring).

    >>> pyflakes_severity("UndefinedName"), pyflakes_severity("UnusedImport")
    ('error', 'warning')
    """
    if kind in _FATAL:
        return "fatal"
    if kind in _ERROR or kind.startswith(("PercentFormat", "StringDotFormat")):
        return "error"
    return "warning"


def _n_lines(code: str) -> int:
    return max(count_lines(code), 1)


def _compile_error(exc: BaseException, code: str) -> Diagnostic:
    if isinstance(exc, SyntaxError):
        line = min(max(exc.lineno or 1, 1), _n_lines(code))
        return Diagnostic(line, "fatal", type(exc).__name__, exc.msg or str(exc))
    return Diagnostic(1, "fatal", type(exc).__name__, f"code cannot be compiled: {exc}")


_COMPILE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)


@dataclass(frozen=True)
class PythonAnalysis:
    """Static findings about one piece of code."""

    syntax: Diagnostic | None
    """The first syntax error, or None when the code compiles."""
    diagnostics: tuple[Diagnostic, ...]
    """pyflakes diagnostics, sorted by line (empty when the code does not compile)."""
    n_statements: int
    """Top-level statements (0 for blank or comment-only code; 0 when it does not compile)."""

    @property
    def empty(self) -> bool:
        """True for code that compiles but holds no statement."""
        return self.syntax is None and self.n_statements == 0


def analyse_python(code: str) -> PythonAnalysis:
    """Syntax error, pyflakes diagnostics and size of ``code``; nothing is executed.

    The code is parsed once; the tree is compiled (catching compile-time errors such as
    ``return`` outside a function) and linted.

    >>> a = analyse_python("import os\\n")
    >>> a.syntax, [d.kind for d in a.diagnostics], a.n_statements
    (None, ['UnusedImport'], 1)
    >>> analyse_python("# just a comment\\n").empty
    True
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes is not an error
            tree = ast.parse(code, "<code>")
            compile(tree, "<code>", "exec", dont_inherit=True)
    except _COMPILE_ERRORS as e:
        return PythonAnalysis(_compile_error(e, code), (), 0)
    return PythonAnalysis(None, tuple(_lint_tree(tree, code)), len(tree.body))


def syntax_error(code: str) -> Diagnostic | None:
    """The first syntax error of ``code`` (compiled, never run), or None if it compiles.

    >>> syntax_error("def f(:\\n    pass").line
    1
    >>> syntax_error("x = 1") is None
    True
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "<code>", "exec", dont_inherit=True)
    except _COMPILE_ERRORS as e:
        return _compile_error(e, code)
    return None


def _lint_tree(tree: ast.Module, code: str) -> list[Diagnostic]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            messages = pyflakes_checker.Checker(tree, filename="<code>").messages
    except (RecursionError, MemoryError):
        return []
    n = _n_lines(code)
    out = []
    for msg in messages:
        kind = type(msg).__name__
        text = msg.message % msg.message_args
        out.append(Diagnostic(min(max(int(msg.lineno), 1), n), pyflakes_severity(kind), kind, text))
    return sorted(out, key=lambda d: d.line)


def lint_python(code: str) -> list[Diagnostic]:
    """pyflakes diagnostics of code that compiles, sorted by line; [] if it cannot be parsed.

    >>> [(d.line, d.severity, d.kind) for d in lint_python("import os\\nprint(y)\\n")]
    [(1, 'warning', 'UnusedImport'), (2, 'error', 'UndefinedName')]
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except _COMPILE_ERRORS:
        return []
    return _lint_tree(tree, code)
