"""Step-structured tasks: the protocol, built-in tasks, loaders and the task reward.

Built-in: ``chain`` (long chain arithmetic, the default), ``columns`` (column-wise addition
with carries), ``react`` (small React components judged by the React toolchain) and ``python``
(small functions judged in the sandbox), each with a flawed teacher by default
(:mod:`botgrpo.tasks.teacher`); options
after a colon, e.g. ``chain:min_steps=11,max_steps=16,slip=borrow,slip_rate=0.5``. Loaders:
``jsonl:PATH``, ``reasoning_gym:DATASET`` and ``package.module:factory`` (see
:func:`load_task`). :class:`NoisyVerdicts` judges any of them as a noisy judge would.
"""

from __future__ import annotations

import dataclasses
import importlib
import typing

from botgrpo.imports import import_hint
from botgrpo.tasks.base import Example, Score, StepVerdict, Task, VerdictWrapper, check_task
from botgrpo.tasks.chain import ChainArithmetic
from botgrpo.tasks.columns import ColumnAddition
from botgrpo.tasks.components import ReactComponents
from botgrpo.tasks.functions import PythonFunctions
from botgrpo.tasks.noise import NoisyLines, NoisyVerdicts, VerdictNoise
from botgrpo.tasks.teacher import Teacher

BUILTIN_TASKS = {
    "chain": ChainArithmetic,
    "columns": ColumnAddition,
    "react": ReactComponents,
    "python": PythonFunctions,
}
_TEACHER_OPTIONS = ("slip", "slip_rate")


def _parse_value(name: str, key: str, text: str, hint: object) -> object:
    try:
        if hint is bool:
            from botgrpo.rewards.configs import FALSE_WORDS, TRUE_WORDS

            if text.lower() not in TRUE_WORDS + FALSE_WORDS:
                raise ValueError(text)
            return text.lower() in TRUE_WORDS
        return hint(text) if hint in (int, float, str) else text  # type: ignore[operator]
    except ValueError:
        raise ValueError(
            f"task option {name}:{key}={text!r} is not a valid {getattr(hint, '__name__', hint)}"
        ) from None


def builtin_task(name: str, options: str = "") -> Task:
    """A built-in task with ``key=value`` options separated by commas: the task's fields
    (e.g. ``min_steps``) and the teacher's ``slip`` and ``slip_rate``.

    >>> builtin_task("chain", "min_steps=2,max_steps=3,slip=borrow,slip_rate=0.5").teacher
    Teacher(slip='borrow', rate=0.5)
    """
    cls = BUILTIN_TASKS[name]
    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls) if f.name not in ("name", "teacher")]
    kwargs: dict[str, object] = {}
    teacher: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in options.split(","))):
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep:
            raise ValueError(f"task option {item!r} of {name!r} needs the form key=value")
        if key in kwargs or key in teacher:
            raise ValueError(f"task option {key!r} of {name!r} is given twice; give it once")
        if key in _TEACHER_OPTIONS:
            teacher[key] = value
        elif key in fields:
            kwargs[key] = _parse_value(name, key, value, hints[key])
        else:
            valid = ", ".join([*fields, *_TEACHER_OPTIONS])
            raise ValueError(f"task {name!r} has no option {key!r}; options: {valid}")
    if teacher:
        default = cls().teacher
        slip = "+".join(kind.strip() for kind in teacher.get("slip", default.slip).split("+"))
        fallback = 0.0 if slip == "none" else default.rate
        rate = _parse_value(name, "slip_rate", teacher.get("slip_rate", str(fallback)), float)
        kwargs["teacher"] = Teacher(slip, rate)  # type: ignore[arg-type]
    return cls(**kwargs)


def load_task(spec: str) -> Task:
    """A task from its spec: a built-in name with optional ``:key=value,...`` options,
    ``jsonl:PATH``, ``reasoning_gym:DATASET`` or ``package.module:factory`` (the factory is
    called without arguments).

    >>> load_task("chain").name
    'chain'
    >>> load_task("chain:max_steps=6").max_steps
    6
    """
    kind, colon, rest = spec.partition(":")
    if kind != kind.strip() and kind.strip() in (*BUILTIN_TASKS, "jsonl", "reasoning_gym"):
        fixed = kind.strip() + (f":{rest.strip()}" if colon else "")
        raise ValueError(f"task {spec!r} has spaces around its name: write {fixed}")
    if kind in BUILTIN_TASKS:
        return builtin_task(kind, rest)
    if kind == "jsonl" and rest:
        from botgrpo.tasks.jsonl import JsonlTask

        return JsonlTask(rest)
    if kind == "reasoning_gym" and rest:
        from botgrpo.tasks.reasoning_gym import ReasoningGymTask

        return ReasoningGymTask(rest)
    if (rest and "." in kind) or (rest and kind):
        try:
            factory = getattr(importlib.import_module(kind), rest)
        except ImportError as err:
            raise ValueError(
                f"cannot load task factory {spec!r}: {import_hint(err, spec)}"
            ) from err
        except AttributeError as err:
            raise ValueError(f"cannot load task factory {spec!r}: {err}") from err
        try:
            task = factory()
        except SystemExit as err:
            raise ValueError(
                f"task factory {spec!r} exited (SystemExit {err.code}); name a function returning a task"
            ) from None
        return check_task(task)
    raise ValueError(
        f"unknown task {spec!r}: use one of {', '.join(BUILTIN_TASKS)}, jsonl:PATH, "
        "reasoning_gym:DATASET or package.module:factory"
    )


__all__ = [
    "BUILTIN_TASKS",
    "ChainArithmetic",
    "ColumnAddition",
    "Example",
    "NoisyLines",
    "NoisyVerdicts",
    "PythonFunctions",
    "ReactComponents",
    "Score",
    "StepVerdict",
    "Task",
    "Teacher",
    "VerdictNoise",
    "VerdictWrapper",
    "builtin_task",
    "check_task",
    "load_task",
]
