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
- ``react``: ``"tag"`` (a closing tag that does not match: ``<h1>Cart</h2>``), ``"attr"``
  (``class=``/``onclick=`` for ``className=``/``onClick=``), ``"key"`` (a list item without
  ``key``), ``"hook"`` (a state hook called under a condition), ``"undefined"`` (a list item
  that names an undefined variable).
- ``python``: ``"colon"`` (a ``def``/``for``/``if`` line without its colon), ``"name"`` (a
  name that was never assigned), ``"off_by_one"`` (a wrong comparison or range bound).

Several kinds mix with ``+`` (``Teacher("tag+undefined", 0.3)``): each opportunity of any of
them slips at the rate. ``Teacher()`` (``rate`` 0) demonstrates perfectly.
"""

from __future__ import annotations

import inspect
import random
from dataclasses import dataclass

from botgrpo.tasks.base import Example, Task

SLIP_KINDS = (
    "none",
    "carry",
    "borrow",
    "tag",
    "attr",
    "key",
    "hook",
    "undefined",
    "colon",
    "name",
    "off_by_one",
)


@dataclass(frozen=True)
class Teacher:
    """A demonstrator with one systematic slip.

    Attributes:
        slip: the kind of slip, or several joined with "+" (see the module docstring; "none"
            for a perfect teacher).
        rate: probability of slipping at each opportunity, in [0, 1].
    """

    slip: str = "none"
    rate: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.slip, str) or not all(k in SLIP_KINDS for k in self.kinds):
            raise ValueError(f"unknown slip {self.slip!r}; valid: {', '.join(SLIP_KINDS)}")
        if len(set(self.kinds)) != len(self.kinds):
            raise ValueError(f"slip {self.slip!r} names a kind twice; name each once")
        if "none" in self.kinds and len(self.kinds) > 1:
            raise ValueError(
                f"slip {self.slip!r} mixes 'none' with slip kinds; give one or the other"
            )
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"slip rate must be in [0, 1], got {self.rate!r}")
        if self.slip == "none" and self.rate:
            raise ValueError("a slip rate needs a slip kind (slip='carry', ...)")

    @property
    def kinds(self) -> tuple[str, ...]:
        """The slip kinds (one, or several joined with "+")."""
        return tuple(k.strip() for k in self.slip.split("+")) if isinstance(self.slip, str) else ()

    def check_kind(self, task_name: str, kinds: tuple[str, ...]) -> None:
        """Raise unless the slip is "none" or each of its kinds is one of the task's ``kinds``."""
        wrong = [k for k in self.kinds if k != "none" and k not in kinds]
        if wrong:
            raise ValueError(
                f"task {task_name!r} has no {wrong[0]!r} slip; valid: none, {', '.join(kinds)}"
            )

    def slips(self, kind: str, rng: random.Random) -> bool:
        """Whether the teacher slips at an opportunity for a slip of ``kind``."""
        return kind in self.kinds and self.rate > 0 and rng.random() < self.rate


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
