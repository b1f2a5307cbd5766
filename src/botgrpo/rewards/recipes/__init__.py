"""Reward recipes: complete TRL reward functions that turn completions into token rewards.
:mod:`~botgrpo.rewards.recipes.math` scores ``<step i>`` solutions (final answer and judged
steps, Eq. 8) and :mod:`~botgrpo.rewards.recipes.python` scores Python code (compile, pyflakes,
sandboxed unit tests, optional code judge, Eqs. 6-7) and :mod:`~botgrpo.rewards.recipes.react`
scores React components (Babel, ESLint, jsdom render, Chromium screenshots in sandboxed Node
workers, Eqs. 6-7); each recipe is one module or subpackage
named after what it scores. A recipe sits on top: it may import the token machinery at the top
of :mod:`botgrpo.rewards` (types, spans, steps, code_blocks, compose, calling, configs), the
verifiers, the judges and the sandbox (the built-in ones take a judge as an argument); no other
part of botgrpo.rewards imports a recipe (the package's ``__init__`` re-exports them).

>>> sorted(name for name in __all__ if name.startswith("make_"))
['make_math_step_reward', 'make_python_code_reward', 'make_react_code_reward']
"""

from botgrpo.rewards.recipes.math import MathRewardConfig, make_math_step_reward
from botgrpo.rewards.recipes.python import (
    CodeJudgement,
    PythonRewardConfig,
    TestOutcome,
    make_python_code_reward,
)
from botgrpo.rewards.recipes.react import (
    ReactCheck,
    ReactDiagnostic,
    ReactRewardConfig,
    check_components,
    make_react_code_reward,
    screenshot_components,
)

__all__ = [
    "CodeJudgement",
    "MathRewardConfig",
    "PythonRewardConfig",
    "ReactCheck",
    "ReactDiagnostic",
    "ReactRewardConfig",
    "TestOutcome",
    "check_components",
    "make_math_step_reward",
    "make_python_code_reward",
    "make_react_code_reward",
    "screenshot_components",
]
