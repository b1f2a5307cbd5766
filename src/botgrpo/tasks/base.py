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
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


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


def task_fingerprint(task: Task) -> str:
    """A stable identity of a task for caches: ``task.fingerprint()`` when the task defines one
    (e.g. a hash of its data file), else its repr without memory addresses."""
    custom = getattr(task, "fingerprint", None)
    text = custom() if callable(custom) else re.sub(r" at 0x[0-9a-fA-F]+", "", repr(task))
    return hashlib.sha256(
        f"{type(task).__module__}.{type(task).__qualname__}|{text}".encode()
    ).hexdigest()
