"""Step-structured tasks: the protocol, built-in tasks, loaders and the task reward.

Built-in: ``chain`` (long chain arithmetic, the default) and ``columns`` (column-wise addition
with carries). Loaders: ``jsonl:PATH``, ``reasoning_gym:DATASET`` and ``package.module:factory``
(see :func:`load_task`).
"""

from __future__ import annotations

import importlib

from botgrpo.tasks.base import Example, Score, StepVerdict, Task, check_task
from botgrpo.tasks.chain import ChainArithmetic
from botgrpo.tasks.columns import ColumnAddition

BUILTIN_TASKS = {"chain": ChainArithmetic, "columns": ColumnAddition}


def load_task(spec: str) -> Task:
    """A task from its spec: a built-in name, ``jsonl:PATH``, ``reasoning_gym:DATASET`` or
    ``package.module:factory`` (the factory is called without arguments).

    >>> load_task("chain").name
    'chain'
    """
    if spec in BUILTIN_TASKS:
        return BUILTIN_TASKS[spec]()
    kind, _, rest = spec.partition(":")
    if kind == "jsonl" and rest:
        from botgrpo.tasks.jsonl import JsonlTask

        return JsonlTask(rest)
    if kind == "reasoning_gym" and rest:
        from botgrpo.tasks.reasoning_gym import ReasoningGymTask

        return ReasoningGymTask(rest)
    if (rest and "." in kind) or (rest and kind):
        try:
            factory = getattr(importlib.import_module(kind), rest)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"cannot load task factory {spec!r}: {err}") from err
        return check_task(factory())
    raise ValueError(
        f"unknown task {spec!r}: use one of {', '.join(BUILTIN_TASKS)}, jsonl:PATH, "
        "reasoning_gym:DATASET or package.module:factory"
    )


__all__ = [
    "BUILTIN_TASKS",
    "ChainArithmetic",
    "ColumnAddition",
    "Example",
    "Score",
    "StepVerdict",
    "Task",
    "check_task",
    "load_task",
]
