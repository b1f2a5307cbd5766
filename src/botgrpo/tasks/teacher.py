"""Flawed teachers: demonstrations that make one systematic slip some of the time.

Why: RL on a language model re-weights behaviour the model already produces; it rarely teaches
a missing skill. A warm start trained on perfect demonstrations has nothing left for RL to fix,
and one stopped early makes errors of missing knowledge (wrong lookups, wrong operators) that no
method repairs in a small budget. The regime where RL works, and where step-level credit can
show its worth, is a *converged* warm start that imitates a teacher with a systematic,
context-dependent slip: the right step is in the model's distribution, just not preferred, and
reward can move probability onto it.

A :class:`Teacher` names the slip and its probability. At every step where the slip is possible
(an *opportunity*, e.g. an addition that crosses a tens boundary for ``"carry"``), the teacher
makes it with probability ``rate`` and the demonstration goes on from the wrong value, as a
sloppy solver's would, so the later steps stay locally correct. Kinds are task-specific:

- ``chain``: ``"carry"`` (an addition that crosses a tens boundary forgets the carry:
  ``28+5=23``), ``"borrow"`` (a subtraction that crosses one forgets the borrow: ``32-5=37``).
- ``columns``: ``"carry"`` (a column forgets the incoming carry: ``4+3+0=7`` where the carry
  is 1).

``Teacher()`` (``rate`` 0) demonstrates perfectly.
"""

from __future__ import annotations

import inspect
import random
from dataclasses import dataclass

from botgrpo.tasks.base import Example, Task

SLIP_KINDS = ("none", "carry", "borrow")


@dataclass(frozen=True)
class Teacher:
    """A demonstrator with one systematic slip.

    Attributes:
        slip: the kind of slip (see the module docstring; "none" for a perfect teacher).
        rate: probability of slipping at each opportunity, in [0, 1].
    """

    slip: str = "none"
    rate: float = 0.0

    def __post_init__(self) -> None:
        if self.slip not in SLIP_KINDS:
            raise ValueError(f"unknown slip {self.slip!r}; valid: {', '.join(SLIP_KINDS)}")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"slip rate must be in [0, 1], got {self.rate!r}")
        if self.slip == "none" and self.rate:
            raise ValueError("a slip rate needs a slip kind (slip='carry', ...)")

    def check_kind(self, task_name: str, kinds: tuple[str, ...]) -> None:
        """Raise unless the slip is "none" or one of the task's ``kinds``."""
        if self.slip != "none" and self.slip not in kinds:
            raise ValueError(
                f"task {task_name!r} has no {self.slip!r} slip; valid: none, {', '.join(kinds)}"
            )

    def slips(self, kind: str, rng: random.Random) -> bool:
        """Whether the teacher slips at an opportunity for a slip of ``kind``."""
        return self.slip == kind and self.rate > 0 and rng.random() < self.rate


def demonstration_rng(example: Example) -> random.Random:
    """The slip stream of ``example`` when the caller gives none (one fixed draw per prompt)."""
    return random.Random(f"teacher|{example.prompt}")


def demonstrate(task: Task, example: Example, rng: random.Random) -> str:
    """``task.demonstration(example)``, passing ``rng`` when the task's demonstration accepts
    it, so a flawed teacher draws fresh slips every time (user tasks need not take one)."""
    try:
        takes_rng = "rng" in inspect.signature(task.demonstration).parameters
    except (TypeError, ValueError):
        takes_rng = False
    return task.demonstration(example, rng=rng) if takes_rng else task.demonstration(example)
