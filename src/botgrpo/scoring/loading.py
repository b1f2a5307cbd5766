"""Resolve reward-function entries (built-in names or import paths) into callables.

Shared by every engine's entry point (``botgrpo train`` for TRL, the verl reward hook), so a
recipe's ``reward_funcs`` list means the same functions everywhere. An entry is a built-in name
(:data:`BUILTIN_REWARDS`), ``task_reward`` (the task's step reward) or an import path
``'package.module:function'``; a trailing ``'()'`` marks a factory, called with
``tokenizer=<the policy's tokenizer>`` when it takes one, plus the entry's keyword arguments.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from typing import Any

#: Reward functions known by name; ``name()`` entries are factories called with the tokenizer.
BUILTIN_REWARDS: dict[str, str] = {
    "arithmetic_outcome": "botgrpo.tasks.arithmetic:arithmetic_outcome",
    "arithmetic_token_reward": "botgrpo.tasks.arithmetic:make_arithmetic_token_reward()",
    "math_step_reward": "botgrpo.rewards.recipes.math:make_math_step_reward()",
    "python_code_reward": "botgrpo.rewards.recipes.python:make_python_code_reward()",
    "react_code_reward": "botgrpo.rewards.recipes.react:make_react_code_reward()",
    "accuracy_reward": "trl.rewards:accuracy_reward",
    "think_format_reward": "trl.rewards:think_format_reward",
}


#: The reward entry scoring completions with the ``task`` (see docs/tasks.md).
TASK_REWARD = "task_reward"


def load_reward_funcs(
    entries: Sequence[str],
    tokenizer: Any,
    kwargs_by_entry: dict[str, Any] | str | None = None,
    task: Any = None,
) -> list[Callable]:
    """Resolve ``reward_funcs`` entries (built-in names or 'module:attr', '()' = factory;
    ``task_reward`` = the task's step reward)."""
    if isinstance(kwargs_by_entry, str):
        import json

        kwargs_by_entry = json.loads(kwargs_by_entry)
    kwargs_by_entry = kwargs_by_entry or {}
    unknown = set(kwargs_by_entry) - set(entries)
    if unknown:
        raise ValueError(f"reward_func_kwargs names entries not in reward_funcs: {sorted(unknown)}")
    if TASK_REWARD in entries and task is None:
        raise ValueError(f"reward function {TASK_REWARD!r} needs a task: set task (e.g. chain)")
    return [
        _task_reward(task, tokenizer, kwargs_by_entry.get(entry, {}))
        if entry == TASK_REWARD
        else _load_one(entry, tokenizer, kwargs_by_entry.get(entry, {}))
        for entry in entries
    ]


def _task_reward(task: Any, tokenizer: Any, kwargs: dict[str, Any]) -> Callable:
    """The reward the task trains with in `botgrpo compare` too: the code tasks' line recipes,
    else the step reward built from its scores."""
    from botgrpo.tasks.reward import task_reward

    if kwargs:
        raise ValueError(f"{TASK_REWARD!r} takes no reward_func_kwargs")
    return task_reward(task, tokenizer)


def resolve_entry(entry: str) -> tuple[Any, bool]:
    """(the object a reward entry names, whether it is a factory '()')."""
    spec = BUILTIN_REWARDS.get(entry, entry)
    is_factory = spec.endswith("()")
    spec = spec.removesuffix("()")
    if ":" not in spec:
        raise ValueError(
            f"unknown reward function {entry!r}: use one of "
            f"{', '.join([*BUILTIN_REWARDS, TASK_REWARD])} (task_reward: the task's own) or an "
            "import path 'package.module:function' (add '()' for a factory)"
        )
    module_name, attr = spec.split(":", 1)
    return getattr(importlib.import_module(module_name), attr), is_factory


class NotARewardFunction(ValueError):
    """A reward entry names something TRL cannot call as a reward function."""


#: The keyword arguments TRL passes every reward function (plus the dataset's columns).
REWARD_ARGUMENTS = ("prompts", "completions", "completion_ids")


def check_reward_callable(fn: Any, entry: str) -> None:
    """:class:`NotARewardFunction` unless ``fn`` can be called the way TRL calls a reward
    function, ``fn(prompts=..., completions=..., completion_ids=..., **columns)``; a reward
    model (``torch.nn.Module``) and a callable without a signature are accepted as they are."""
    import torch

    if isinstance(fn, torch.nn.Module):
        return
    if not callable(fn):
        raise NotARewardFunction(
            f"reward function {entry!r} is a {type(fn).__name__}, not a function; name a "
            "function f(prompts, completions, **kwargs)"
        )
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have none: let TRL call it
        return
    try:
        signature.bind_partial(**{key: [] for key in REWARD_ARGUMENTS})
    except TypeError as err:
        raise NotARewardFunction(
            f"reward function {entry!r} cannot take TRL's reward arguments "
            f"({', '.join(REWARD_ARGUMENTS)} and the dataset's columns as keywords): {err}; "
            "write it as f(prompts, completions, **kwargs) returning one reward per completion"
        ) from None


def _load_one(entry: str, tokenizer: Any, kwargs: dict[str, Any]) -> Callable:
    obj, is_factory = resolve_entry(entry)
    if not is_factory:
        if kwargs:
            raise ValueError(f"reward_func_kwargs given for {entry!r}, which is not a factory '()'")
        check_reward_callable(obj, entry)
        return obj
    if "tokenizer" in inspect.signature(obj).parameters:
        kwargs = {"tokenizer": tokenizer, **kwargs}
    fn = obj(**kwargs)
    check_reward_callable(fn, f"{entry} (the function its factory returned)")
    return fn
