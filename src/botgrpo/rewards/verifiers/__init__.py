"""Deterministic verdict sources: programs that check a completion without a model.
:mod:`~botgrpo.rewards.verifiers.symbolic` checks every equality of an arithmetic step exactly
(+1/0/-1 per step), :mod:`~botgrpo.rewards.verifiers.answers` decides whether a final answer
equals the reference (exact arithmetic, then math-verify), and
:mod:`~botgrpo.rewards.verifiers.python_diagnostics` finds syntax errors and pyflakes warnings
in Python code without running it. Recipes and tasks use them; they import the standard
library, sympy, math-verify and pyflakes, and nothing of botgrpo outside this package.

>>> check_step("3 + 4 = 7").verdict, check_answer("\\\\frac{1}{2}", "0.5").correct
(1, True)
"""

from botgrpo.rewards.verifiers.answers import AnswerCheck, AnswerConfig, check_answer
from botgrpo.rewards.verifiers.python_diagnostics import (
    Diagnostic,
    PythonAnalysis,
    SeverityWeights,
    analyse_python,
    lint_python,
    pyflakes_severity,
    syntax_error,
)
from botgrpo.rewards.verifiers.symbolic import (
    StepCheck,
    SymbolicConfig,
    SymbolicStepVerifier,
    check_step,
    evaluate_arithmetic,
)

__all__ = [
    "AnswerCheck",
    "AnswerConfig",
    "Diagnostic",
    "PythonAnalysis",
    "SeverityWeights",
    "StepCheck",
    "SymbolicConfig",
    "SymbolicStepVerifier",
    "analyse_python",
    "check_answer",
    "check_step",
    "evaluate_arithmetic",
    "lint_python",
    "pyflakes_severity",
    "syntax_error",
]
