"""Reward recipes: complete TRL reward functions that turn completions into token rewards.
:mod:`~botgrpo.rewards.recipes.math` scores ``<step i>`` solutions (final answer and judged
steps, Eq. 8) and :mod:`~botgrpo.rewards.recipes.python` scores Python code (compile, pyflakes,
sandboxed unit tests, optional code judge, Eqs. 6-7); each recipe is one module or subpackage
named after what it scores. A recipe sits on top: it may import the token machinery at the top
of :mod:`botgrpo.rewards` (types, spans, steps, code_blocks, compose, calling, configs), the
verifiers, the judges and the sandbox (the built-in ones take a judge as an argument); no other
part of botgrpo.rewards imports a recipe (the package's ``__init__`` re-exports them).

>>> sorted(name for name in __all__ if name.startswith("make_"))
['make_math_step_reward', 'make_python_code_reward']
"""

from botgrpo.rewards.recipes.math import MathRewardConfig, make_math_step_reward
from botgrpo.rewards.recipes.python import (
    CodeJudgement,
    PythonRewardConfig,
    TestOutcome,
    make_python_code_reward,
)

__all__ = [
    "CodeJudgement",
    "MathRewardConfig",
    "PythonRewardConfig",
    "TestOutcome",
    "make_math_step_reward",
    "make_python_code_reward",
]
