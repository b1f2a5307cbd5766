"""Adapter for reasoning-gym datasets (procedural problems with their own verifiers).

``ReasoningGymTask("basic_arithmetic")`` draws each problem from a one-item reasoning-gym
dataset seeded by the task's random stream, so training and held-out streams differ. The
outcome is reasoning-gym's own ``score_answer`` on the completion's final answer (the text after
``Answer:``, or the last line); steps are the completion's lines before it, judged by the
symbolic verifier (+1 / -1 / 0 when nothing is checkable). Demonstrations hold only the answer
(reasoning-gym gives no step-by-step solutions).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from botgrpo.rewards.steps import parse_steps
from botgrpo.rewards.verifiers.symbolic import check_step
from botgrpo.tasks.base import Example, Score, StepVerdict


@lru_cache(maxsize=4096)
def _entry(dataset: str, seed: int, config: tuple) -> tuple[Any, dict]:
    import reasoning_gym

    ds = reasoning_gym.create_dataset(dataset, size=1, seed=seed, **dict(config))
    return ds, ds[0]


@dataclass(frozen=True)
class ReasoningGymTask:
    """A reasoning-gym dataset as a task.

    Attributes:
        dataset: the reasoning-gym dataset name (e.g. "basic_arithmetic", "chain_sum").
        config: extra options of ``reasoning_gym.create_dataset``.
    """

    dataset: str
    config: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"reasoning_gym:{self.dataset}"

    def _lookup(self, seed: int) -> tuple[Any, dict]:
        return _entry(self.dataset, seed, tuple(sorted(self.config.items())))

    def sample(self, rng: random.Random) -> Example:
        """One problem from a freshly seeded one-item dataset."""
        seed = rng.randrange(2**31)
        _, entry = self._lookup(seed)
        return Example(entry["question"] + "\n", str(entry["answer"]), {"seed": seed})

    def demonstration(self, example: Example) -> str:
        """``Answer: <reference answer>``."""
        return f"Answer: {example.answer}"

    def score(self, example: Example, completion: str) -> Score:
        """reasoning-gym's score of the final answer; symbolic verdicts on the other lines."""
        ds, entry = self._lookup(int(example.meta["seed"]))
        parsed = parse_steps(completion, "lines")
        answer = parsed.final_text
        if answer is None:
            lines = completion.strip().splitlines()
            answer = lines[-1].strip() if lines else ""
        outcome = float(ds.score_answer(answer, entry) or 0.0)
        steps = tuple(StepVerdict(s.start, s.end, check_step(s.text).verdict) for s in parsed.steps)
        return Score(outcome, steps, parsed.final_text is not None, answer)
