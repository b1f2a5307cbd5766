"""Run the doctests of the rewards modules (every factory carries one)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "botgrpo.rewards",
    "botgrpo.rewards.calling",
    "botgrpo.rewards.code_blocks",
    "botgrpo.rewards.compose",
    "botgrpo.rewards.configs",
    "botgrpo.rewards.noise",
    "botgrpo.rewards.spans",
    "botgrpo.rewards.steps",
    "botgrpo.rewards.types",
    "botgrpo.rewards.validate",
    "botgrpo.rewards.recipes",
    "botgrpo.rewards.recipes.math",
    "botgrpo.rewards.recipes.python",
    "botgrpo.rewards.verifiers",
    "botgrpo.rewards.verifiers.answers",
    "botgrpo.rewards.verifiers.python_diagnostics",
    "botgrpo.rewards.verifiers.symbolic",
    "botgrpo.viz",
    "botgrpo.harness.flags",
    "botgrpo.harness.resume",
    "botgrpo.trl.presets",
    "botgrpo.tasks.reward",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest failure(s) in {name}"
    assert result.attempted > 0, f"{name} has no doctest"


@pytest.mark.parametrize("factory", ["make_math_step_reward", "make_python_code_reward"])
def test_factories_have_doctests(factory):
    import botgrpo.rewards as rewards

    examples = doctest.DocTestFinder().find(getattr(rewards, factory))
    assert sum(len(t.examples) for t in examples) >= 3
