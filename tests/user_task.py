"""A user-defined task loaded by ``--task tests.user_task:make_task`` in the harness tests."""

from __future__ import annotations

import random

from botgrpo.tasks.base import Example, Score, StepVerdict


class Doubling:
    """Double a digit in one step: prompt "3\\n", completion "3+3=6\\nAnswer: 6"."""

    name = "doubling"

    def sample(self, rng: random.Random) -> Example:
        d = rng.randint(0, 9)
        return Example(f"{d}\n", str(2 * d), {"d": d})

    def demonstration(self, example: Example) -> str:
        d = example.meta["d"]
        return f"{d}+{d}={2 * d}\nAnswer: {2 * d}"

    def score(self, example: Example, completion: str) -> Score:
        line, _, rest = completion.partition("\n")
        ok = line == self.demonstration(example).split("\n")[0]
        answer = rest.removeprefix("Answer: ").strip() if rest.startswith("Answer: ") else None
        return Score(
            float(answer == example.answer),
            (StepVerdict(0, len(line), 1 if ok else -1),),
            answer is not None,
            answer,
        )


def make_task() -> Doubling:
    return Doubling()
