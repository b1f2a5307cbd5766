"""Column-wise multi-digit addition with carries, one column per line.

Prompt ``"4827+3956\n"``; the demonstrated completion adds digit columns right to left, each
line ``a+b+carry=sum``, then the answer::

    7+6+0=13
    2+5+1=8
    8+9+0=17
    4+3+1=8
    Answer: 8783

A line is correct when its digits are the column's digits, its carry is the previous line's
carry out (0 for the first line) and its arithmetic holds (exact integer arithmetic). The
structure differs from chain arithmetic: steps are independent except through the carry, and
the answer must be assembled from all steps.

The default teacher is flawed (:mod:`botgrpo.tasks.teacher`): 70% of the time a column whose
incoming carry is 1 is written with carry 0 (``4+3+0=7``), and the solution goes on from there,
its answer assembled from the digits it wrote. ``ColumnAddition(teacher=Teacher())``
demonstrates perfectly.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from botgrpo.rewards.steps import parse_steps
from botgrpo.rewards.text import remove_blanks, strip_blanks
from botgrpo.tasks.base import Example, Score, StepVerdict
from botgrpo.tasks.teacher import Teacher, demonstration_rng

_LINE = re.compile(r"^(\d)\+(\d)\+(\d)=(\d+)$", re.ASCII)  # ASCII digits only


@dataclass(frozen=True)
class ColumnAddition:
    """Sums of two numbers of ``min_digits``..``max_digits`` digits (the first the longer).

    Attributes:
        min_digits: fewest digits of the longer addend.
        max_digits: most digits of the longer addend.
        teacher: who writes the demonstrations: slip "carry" with a rate (the default forgets
            70% of incoming carries), or ``Teacher()`` for perfect ones.
    """

    min_digits: int = 4
    max_digits: int = 6
    teacher: Teacher = field(default_factory=lambda: Teacher("carry", 0.7))
    name: str = "columns"

    SLIPS = ("carry",)
    #: Its warm start (none ships) trains exactly 3000 steps (WarmStartConfig.stop) on padded
    #: batches; published results with --warm-start-stop converged used the first rule (a
    #: short anneal once the check loss alone is flat).
    warm_start_stop = "steps"
    warm_start_patience = 0.0
    warm_start_watch_accuracy = False
    warm_start_packed = False

    def __post_init__(self) -> None:
        if not 1 <= self.min_digits <= self.max_digits:
            raise ValueError("need 1 <= min_digits <= max_digits")
        self.teacher.check_kind(self.name, self.SLIPS)

    def sample(self, rng: random.Random) -> Example:
        """Draw two addends; the second has at most as many digits as the first."""
        n = rng.randint(self.min_digits, self.max_digits)
        a = rng.randint(10 ** (n - 1), 10**n - 1)
        m = rng.randint(1, n)
        b = rng.randint(10 ** (m - 1), 10**m - 1)
        return Example(f"{a}+{b}\n", str(a + b), {"a": a, "b": b})

    @staticmethod
    def _columns(example: Example) -> list[tuple[int, int]]:
        a, b = str(example.meta["a"]), str(example.meta["b"])
        width = max(len(a), len(b))
        a, b = a.zfill(width), b.zfill(width)
        return [(int(x), int(y)) for x, y in zip(reversed(a), reversed(b), strict=True)]

    def demonstration(self, example: Example, rng: random.Random | None = None) -> str:
        """The teacher's column sums right to left, then the answer assembled from the digits
        it wrote; slips are drawn from ``rng`` (default: a fixed stream per prompt)."""
        rng = rng or demonstration_rng(example)
        carry, lines, digits = 0, [], []
        for x, y in self._columns(example):
            if carry and self.teacher.slips("carry", rng):
                carry = 0
            s = x + y + carry
            lines.append(f"{x}+{y}+{carry}={s}")
            digits.append(str(s % 10))
            carry = s // 10
        answer = str(int(("1" if carry else "") + "".join(reversed(digits))))
        return "\n".join(lines) + f"\nAnswer: {answer}"

    def score(self, example: Example, completion: str) -> Score:
        """Outcome (answer equals a + b), one verdict per line, format."""
        columns = self._columns(example)
        parsed = parse_steps(completion, "lines")
        verdicts, carry = [], 0
        for k, step in enumerate(parsed.steps):
            m = _LINE.match(remove_blanks(step.text))
            ok = m is not None and k < len(columns)
            if ok:
                ok = (int(m[1]), int(m[2])) == columns[k] and int(m[3]) == carry
                ok = ok and int(m[1]) + int(m[2]) + int(m[3]) == int(m[4])
            carry = int(m[4]) // 10 if m is not None else -1
            verdicts.append(StepVerdict(step.start, step.end, 1 if ok else -1))
        answer = parsed.final_text
        solved = answer is not None and strip_blanks(answer) == example.answer
        well_formed = parsed.verdict == "well_formed" and answer is not None
        well_formed = well_formed and len(parsed.steps) == len(columns)
        return Score(float(solved), tuple(verdicts), well_formed, answer)
