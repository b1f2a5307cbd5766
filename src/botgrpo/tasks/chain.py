"""Long chain arithmetic: "7+5-3+9-2..." solved one running total per line.

Keyed layout (default): every operation carries a letter key in the prompt and the step that
applies it starts with that key, so finding the next operand is a content lookup rather than
counting positions (which a tiny model does poorly)::

    prompt:      7 a+5 b-3 c+9 d-2
    completion:  a:7+5=12
                 b:12-3=9
                 c:9+9=18
                 d:18-2=16
                 Answer: 16

Plain layout (``keyed=False``): prompt ``7+5-3+9-2`` and lines ``7+5=12``, ``12-3=9``, ...

Tags layout (``tags=True`` with ``keyed=False``, for chat models): the paper's math step layout
(Eq. 8), the plain prompt, each step in numbered tags and the answer in ``<final>`` tags::

    prompt:      7+5-3
    completion:  <step 1>7 + 5 = 12</step 1>
                 <step 2>12 - 3 = 9</step 2>
                 <final>9</final>

A step is correct when it continues the chain (its key is the next operation's, its left operand
is the previous line's result, or the first number for the first line; its operator and right
operand are the next ones of the prompt) and its arithmetic holds (exact integer arithmetic on
the parsed line). A line that continues from a wrong earlier result is locally correct; the
outcome is not.

The default teacher is flawed (:mod:`botgrpo.tasks.teacher`): it forgets the carry of an
addition that crosses a tens boundary 70% of the time and goes on from the wrong total, so a
warm start trained on its demonstrations has the right step in its distribution but prefers the
slip. Single slips are likely; chains of 4-16 steps have typically 1-4 opportunities (up to about 10), so whole solutions
are rarely right at first: the regime where RL works on a small model and process reward
should matter most. ``ChainArithmetic(teacher=Teacher())`` demonstrates perfectly.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from botgrpo.rewards.steps import parse_steps
from botgrpo.rewards.text import remove_blanks, strip_blanks
from botgrpo.tasks.base import Example, Score, StepVerdict, repr_leaving_out
from botgrpo.tasks.teacher import Teacher, demonstration_rng

_LINE = re.compile(r"^(?:([a-z]):)?(-?\d+)([+-])(\d+)=(-?\d+)$", re.ASCII)  # ASCII digits only
_KEYS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, repr=False)
class ChainArithmetic:
    """Chains of single-digit additions and subtractions with a bounded running total.

    Attributes:
        min_steps: fewest operations per problem.
        max_steps: most operations per problem.
        max_operand: operands are drawn from 1..max_operand.
        max_total: the running total stays within 0..max_total.
        keyed: label each operation with a letter (see the module docstring).
        teacher: who writes the demonstrations: slip "carry" or "borrow" with a rate (the
            default forgets 70% of carries), or ``Teacher()`` for perfect ones.
        tags: write steps as ``<step k>a + b = c</step k>`` and the answer as
            ``<final>c</final>`` (the paper's math layout, for chat models; needs
            ``keyed=False``).
    """

    min_steps: int = 4
    max_steps: int = 16
    max_operand: int = 9
    max_total: int = 99
    keyed: bool = True
    teacher: Teacher = field(default_factory=lambda: Teacher("carry", 0.7))
    name: str = "chain"
    tags: bool = False

    SLIPS = ("carry", "borrow")
    #: The shipped warm start trains exactly 3000 steps (WarmStartConfig.stop) on padded
    #: batches; published results with --warm-start-stop converged used the first rule (a
    #: short anneal once the check loss alone is flat). Other values train a new warm start.
    warm_start_stop = "steps"
    warm_start_patience = 0.0
    warm_start_watch_accuracy = False
    warm_start_packed = False

    def __repr__(self) -> str:  # ``tags`` off left out: the shipped warm start's key
        return repr_leaving_out(self, {"tags": False})

    def __post_init__(self) -> None:
        if self.tags and self.keyed:
            raise ValueError("tags=true writes the plain layout's steps: set keyed=false too")
        if not 1 <= self.min_steps <= self.max_steps:
            raise ValueError(
                f"need 1 <= min_steps <= max_steps, got {self.min_steps}, {self.max_steps}"
            )
        if self.max_operand < 1 or self.max_total < self.max_operand:
            raise ValueError("need 1 <= max_operand <= max_total")
        if self.keyed and self.max_steps > len(_KEYS):
            raise ValueError(f"the keyed layout has {len(_KEYS)} keys: max_steps must be <= 26")
        self.teacher.check_kind(self.name, self.SLIPS)

    def sample(self, rng: random.Random) -> Example:
        """Draw a chain whose running total stays in 0..max_total."""
        n_ops = rng.randint(self.min_steps, self.max_steps)
        total = rng.randint(1, self.max_operand)
        numbers, ops = [total], []
        for _ in range(n_ops):
            d = rng.randint(1, self.max_operand)
            can_add, can_sub = total + d <= self.max_total, total - d >= 0
            op = "+" if can_add and (not can_sub or rng.random() < 0.5) else "-"
            total = total + d if op == "+" else total - d
            numbers.append(d)
            ops.append(op)
        pairs = zip(_KEYS, ops, numbers[1:], strict=False)
        if self.keyed:
            prompt = f"{numbers[0]} " + " ".join(f"{k}{o}{d}" for k, o, d in pairs)
        else:
            prompt = str(numbers[0]) + "".join(f"{o}{d}" for _, o, d in pairs)
        return Example(prompt + "\n", str(total), {"numbers": numbers, "ops": ops})

    def demonstration(self, example: Example, rng: random.Random | None = None) -> str:
        """The teacher's step-by-step solution; slips are drawn from ``rng`` (default: a fixed
        stream per prompt) and the solution goes on from the value a slip wrote."""
        rng = rng or demonstration_rng(example)
        numbers, ops = example.meta["numbers"], example.meta["ops"]
        total, lines = numbers[0], []
        for k, (key, op, d) in enumerate(zip(_KEYS, ops, numbers[1:], strict=False), start=1):
            new = self._teacher_result(total, op, d, rng)
            if self.tags:
                lines.append(f"<step {k}>{total} {op} {d} = {new}</step {k}>")
            else:
                lines.append(f"{key}:" * self.keyed + f"{total}{op}{d}={new}")
            total = new
        if self.tags:
            return "\n".join(lines) + f"\n<final>{total}</final>"
        return "\n".join(lines) + f"\nAnswer: {total}"

    def _teacher_result(self, total: int, op: str, d: int, rng: random.Random) -> int:
        """``total op d`` as the teacher writes it: a forgotten carry is 10 short, a forgotten
        borrow 10 over (only where the step crosses a tens boundary)."""
        if op == "+":
            crosses = total >= 0 and total % 10 + d >= 10
            return total + d - 10 * (crosses and self.teacher.slips("carry", rng))
        crosses = total >= 10 and total % 10 < d
        return total - d + 10 * (crosses and self.teacher.slips("borrow", rng))

    def score(self, example: Example, completion: str) -> Score:
        """Outcome (final answer equals the chain's value), one verdict per line, format."""
        numbers, ops = example.meta["numbers"], example.meta["ops"]
        parsed = parse_steps(completion, "tags" if self.tags else "lines")
        verdicts, previous = [], numbers[0]
        for k, step in enumerate(parsed.steps):
            verdict, previous = self._step_verdict(step.text, k, numbers, ops, previous, self.keyed)
            verdicts.append(StepVerdict(step.start, step.end, verdict))
        answer = parsed.final_text
        solved = answer is not None and strip_blanks(answer) == example.answer
        well_formed = parsed.verdict == "well_formed" and answer is not None
        well_formed = well_formed and len(parsed.steps) == len(ops)
        return Score(float(solved), tuple(verdicts), well_formed, answer)

    @staticmethod
    def _step_verdict(
        text: str, k: int, numbers: list[int], ops: list[str], previous: int | None, keyed: bool
    ) -> tuple[int, int | None]:
        """(verdict, the result this line claims) for line k."""
        m = _LINE.match(remove_blanks(text))
        if m is None or k >= len(ops):
            return -1, None
        key, left, op, right, result = m[1], int(m[2]), m[3], int(m[4]), int(m[5])
        follows = left == previous and op == ops[k] and right == numbers[k + 1]
        follows = follows and key == (_KEYS[k] if keyed else None)
        holds = result == (left + right if op == "+" else left - right)
        return (1 if follows and holds else -1), result
