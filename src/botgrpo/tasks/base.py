"""The task protocol: what the trainer, the demo and `botgrpo compare` need from a task.

A task is any object with a ``name`` and three methods::

    class MyTask:
        name = "my-task"
        def sample(self, rng: random.Random) -> Example: ...          # one problem
        def demonstration(self, example: Example) -> str: ...         # a correct completion
        def score(self, example: Example, completion: str) -> Score: ...

``score`` returns the outcome G (1.0 correct, 0.0 not, or anything continuous), the character
spans of the completion's steps with a verdict each (+1 correct, -1 incorrect, 0 uncertain), and
whether the completion is well formed (None: the task has no format to check). Optional: a
``score_batch(examples, completions)`` that scores many at once, and a
``reward_function(tokenizer)`` that returns the TRL reward function to train with instead of
the step reward built from ``score`` (the code tasks' line recipes). The reward
toolkit turns a :class:`Score` into token rewards (:mod:`botgrpo.tasks.reward`), so every
method reads the same information. Load a task with ``botgrpo compare --task NAME`` (a built-in
name, ``jsonl:PATH``, ``reasoning_gym:DATASET``) or ``--task package.module:factory``.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class Example:
    """One problem of a task.

    Attributes:
        prompt: the text the model continues.
        answer: the reference final answer, as text.
        meta: task-specific data needed to score a completion (must be JSON-serialisable: it
            travels through the dataset as a column).
    """

    prompt: str
    answer: str
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_row(self) -> dict[str, str]:
        """The dataset row: prompt, answer and meta as JSON."""
        return {"prompt": self.prompt, "answer": self.answer, "meta": json.dumps(dict(self.meta))}

    @classmethod
    def from_row(cls, prompt: str, answer: str, meta: str | Mapping[str, Any]) -> Example:
        """Inverse of :meth:`to_row`."""
        return cls(prompt, answer, json.loads(meta) if isinstance(meta, str) else dict(meta))


@dataclass(frozen=True)
class StepVerdict:
    """One step of a completion and its verdict.

    Attributes:
        start: first character of the step in the completion.
        end: one past its last character.
        verdict: +1 correct, -1 incorrect, 0 uncertain.
    """

    start: int
    end: int
    verdict: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"step span ({self.start}, {self.end}) is not a valid span")
        if self.verdict not in (-1, 0, 1):
            raise ValueError(f"step verdict must be -1, 0 or +1, got {self.verdict!r}")


@dataclass(frozen=True)
class Score:
    """A task's judgement of one completion.

    Attributes:
        outcome: the global outcome G (1.0 = solved for binary tasks).
        steps: the completion's steps with verdicts, in order.
        well_formed: True / False for the format bonus; None when the task has no format.
        answer: the final answer the completion gave, if any (for logs).
        metrics: further per-completion rates in [0, 1] the evaluation averages and reports as
            ``greedy_<name>`` and ``sampled_<name>`` (the code tasks' ``compiled`` and
            ``clean``; see :data:`botgrpo.harness.results.EVAL_METRICS`).
    """

    outcome: float
    steps: tuple[StepVerdict, ...] = ()
    well_formed: bool | None = None
    answer: str | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)

    @property
    def solved(self) -> bool:
        """Whether the outcome counts as solved (outcome >= 1)."""
        return self.outcome >= 1.0


@runtime_checkable
class Task(Protocol):
    """What a task provides (see the module docstring)."""

    name: str

    def sample(self, rng: random.Random) -> Example:
        """Draw one problem."""
        ...

    def demonstration(self, example: Example) -> str:
        """A correct, well-formed completion of ``example`` (for the warm start)."""
        ...

    def score(self, example: Example, completion: str) -> Score:
        """Outcome, step verdicts and format of ``completion``."""
        ...


class VerdictWrapper:
    """A task with changed verdicts around ``clean``, the task with its own: the name, the
    options and defaults (any other attribute), the problems and the demonstrations are the
    clean task's; a subclass changes ``score`` and ``score_batch``, or the reward function.
    Evaluations and warm starts read ``clean`` (``botgrpo.tasks.noise.clean_task``)."""

    #: Marks a wrapper whose ``clean`` is the task with its own verdicts.
    wraps_verdicts = True
    clean: Task

    @property
    def name(self) -> str:
        return self.clean.name

    def __getattr__(self, attr: str) -> Any:  # the task's own options and defaults
        if attr == "clean":  # not set yet (during unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self.clean, attr)

    def sample(self, rng: random.Random) -> Example:
        return self.clean.sample(rng)

    def demonstration(self, example: Example) -> str:
        return self.clean.demonstration(example)


def score_all(task: Task, examples: Sequence[Example], completions: Sequence[str]) -> list[Score]:
    """``task.score`` of each (example, completion); through ``task.score_batch`` when the task
    has one (code tasks check a whole batch in their worker pools at once)."""
    batch = getattr(task, "score_batch", None)
    if callable(batch):
        scores = list(batch(list(examples), list(completions)))
        if len(scores) != len(completions):
            raise ValueError(
                f"{type(task).__name__}.score_batch returned {len(scores)} scores for "
                f"{len(completions)} completions"
            )
        return scores
    return [task.score(ex, c) for ex, c in zip(examples, completions, strict=True)]


def check_task(task: object) -> Task:
    """Raise a clear error unless ``task`` implements the protocol."""
    missing = [m for m in ("name", "sample", "demonstration", "score") if not hasattr(task, m)]
    if missing:
        raise TypeError(
            f"{type(task).__name__} is not a task: it lacks {', '.join(missing)} "
            "(see botgrpo.tasks.base for the protocol)"
        )
    return task  # type: ignore[return-value]


def repr_leaving_out(obj: object, defaults: Mapping[str, object]) -> str:
    """A dataclass's repr without the fields of ``defaults`` that hold their value there: the
    repr a built-in task had before those options existed, so its warm-start key (which reads
    the repr) stays the one its shipped checkpoint was made with.

    >>> from botgrpo.tasks.components import ReactComponents
    >>> repr(ReactComponents(sections=0)) == repr(ReactComponents())
    True
    >>> "sections=3" in repr(ReactComponents(sections=3))
    True
    """
    import dataclasses

    shown = [
        f"{f.name}={getattr(obj, f.name)!r}"
        for f in dataclasses.fields(obj)  # type: ignore[arg-type]
        if f.repr and not (f.name in defaults and getattr(obj, f.name) == defaults[f.name])
    ]
    return f"{type(obj).__qualname__}({', '.join(shown)})"


def task_fingerprint(task: Task) -> str:
    """A stable identity of a task for caches (the warm start's key): its class, then
    ``task.fingerprint()`` when the task defines one (e.g. a hash of its data file; a string),
    else its repr without memory addresses; and, for a task whose class is defined outside
    botgrpo, the source of the module that defines it, so editing a task's code trains a new
    warm start. (The built-in tasks' code is covered by the warm start's version.)"""
    custom = getattr(task, "fingerprint", None)
    text = custom() if callable(custom) else re.sub(r" at 0x[0-9a-fA-F]+", "", repr(task))
    cls = type(task)
    code = "" if cls.__module__.split(".")[0] == "botgrpo" else _module_source_hash(cls)
    identity = f"{cls.__module__}.{cls.__qualname__}|{text}" + (f"|{code}" if code else "")
    return hashlib.sha256(identity.encode()).hexdigest()  # the built-in tasks' keys as shipped


def _module_source_hash(cls: type) -> str:
    """sha256 of the file defining ``cls`` ('' when it has none, e.g. a class made in a REPL)."""
    import inspect

    try:
        path = inspect.getsourcefile(cls)
        data = open(path, "rb").read() if path else b""  # noqa: SIM115
    except (OSError, TypeError):
        return ""
    return hashlib.sha256(data).hexdigest() if data else ""


def _same_json(a: object, b: object) -> bool:
    """Whether ``b`` (``a`` after a trip through JSON) is ``a`` exactly, types included."""
    if isinstance(a, Mapping):
        return isinstance(b, dict) and list(a) == list(b) and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same_json, a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def _meta_problem(meta: object) -> str:
    """Why ``meta`` would not reach training as it is ('' when it would)."""
    if not isinstance(meta, Mapping):
        return f"meta must be a dict, got a {type(meta).__name__}"
    try:
        text = json.dumps(dict(meta), allow_nan=False)
    except (TypeError, ValueError) as err:
        return f"meta is not JSON-serialisable ({err})"
    if not _same_json(dict(meta), json.loads(text)):
        return (
            "meta changes on its way to training through JSON (tuples become lists, "
            "non-string keys become strings): use lists and string keys"
        )
    return ""


def _is_number(value: object) -> bool:
    """A real number that is not a bool (NumPy's scalars included)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _score_problem(score: object, completion: str) -> str:
    """What is wrong with a score of ``completion`` ('' when nothing)."""
    if not isinstance(score, Score):
        return f"returned a {type(score).__name__}, not a Score (botgrpo.tasks.base.Score)"
    outcome = score.outcome
    if not _is_number(outcome) or not math.isfinite(float(outcome)):  # type: ignore[arg-type]
        return f"gave an outcome {outcome!r}; it must be a finite number"
    if not all(isinstance(s, StepVerdict) for s in score.steps):
        return "gave steps that are not StepVerdict objects"
    if any(s.end > len(completion) for s in score.steps):
        return f"gave a step span past the completion's end ({len(completion)} characters)"
    for i, (before, step) in enumerate(zip(score.steps, score.steps[1:], strict=False), 1):
        if step.start < before.end:
            return (
                f"gave step span {i} = ({step.start}, {step.end}) overlapping or before span "
                f"{i - 1} = ({before.start}, {before.end}): spans must be in order and disjoint"
            )
    if score.well_formed not in (True, False, None):
        return f"gave well_formed {score.well_formed!r}; it must be True, False or None"
    if isinstance(score.metrics, str) or not isinstance(score.metrics, Mapping):
        return f"gave metrics {score.metrics!r}; a mapping of names to rates in [0, 1]"
    bad = {
        k: v
        for k, v in score.metrics.items()
        if not _is_number(v) or not 0.0 <= float(v) <= 1.0  # type: ignore[arg-type]
    }
    if bad:
        return f"gave metrics {bad!r}; each must be a number in [0, 1]"
    return ""


def _odd_completions(demo: str) -> dict[str, str]:
    """Completions a policy writes that its task must score without raising: the empty one,
    a cut-off demonstration, text in no expected form (see :func:`validate_task`)."""
    return {
        "the empty completion": "",
        "the demonstration cut off half-way": demo[: len(demo) // 2],
        "a completion in no expected form": "I am not sure.\nAnswer: six\n```\n",
    }


def validate_task(task: object, *, score: bool = True) -> Task:
    """Check a task in full before anything starts, raising ValueError with the reason: it
    implements the protocol; a seeded draw repeated gives the same problems; each problem is an
    :class:`Example` whose ``meta`` survives the trip to training exactly (JSON, types
    included); and (``score``) a demonstration is a string and its score has the documented
    types (:class:`Score`, a finite outcome, spans in order inside the completion, rates in
    [0, 1]), and the empty, a cut-off and an unreadable completion score without raising."""
    import random

    task = check_task(task)
    first = [task.sample(random.Random(f"check-{i}")) for i in range(3)]
    again = [task.sample(random.Random(f"check-{i}")) for i in range(3)]
    for ex in first:
        if not isinstance(ex, Example):
            raise ValueError(f"sample() returned a {type(ex).__name__}, not an Example")
        if not isinstance(ex.prompt, str) or not isinstance(ex.answer, str):
            raise ValueError(
                f"sample() gave a prompt {type(ex.prompt).__name__} and an answer "
                f"{type(ex.answer).__name__}; both must be strings"
            )
        problem = _meta_problem(ex.meta)
        if problem:
            raise ValueError(problem)
    if [e.to_row() for e in first] != [e.to_row() for e in again]:
        raise ValueError(
            "sample() gave different problems for the same seed: draw only from the rng it is "
            "given (not the random module or the clock), so runs are reproducible"
        )
    if not score:
        return task
    demo = task.demonstration(first[0])
    if not isinstance(demo, str):
        raise ValueError(f"demonstration() returned a {type(demo).__name__}, not a string")
    problem = _score_problem(task.score(first[0], demo), demo)
    if problem:
        raise ValueError(f"score() of its own demonstration {problem}")
    for what, completion in _odd_completions(demo).items():
        try:
            problem = _score_problem(task.score(first[0], completion), completion)
        except Exception as err:  # a user's scorer failing in its own code
            raise ValueError(
                f"score() raised {type(err).__name__}: {err} on {what} ({completion!r:.60}): "
                "a policy writes such text too; score what it cannot read as unsolved"
            ) from err
        if problem:
            raise ValueError(f"score() of {what} {problem}")
    return task
