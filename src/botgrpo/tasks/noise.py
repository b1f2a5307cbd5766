"""Noisy step verdicts: any task judged as an imperfect judge or process reward model would.

:class:`NoisyVerdicts` wraps an object of the task protocol and changes only the step verdicts
of its scores, before error propagation and composition turn them into token rewards (where a
noisy LLM judge or PRM would err). The outcome, the step spans, the format and the task's
metrics are never touched, so outcome-only methods (GRPO, DAPO, ...) see exactly what they see
on the clean task, and evaluations read the clean task (:func:`clean_task`).

Kinds, at rate ``p`` (each applies to nonzero verdicts; an uncertain 0 stays 0):

- ``flip``: each verdict inverted with probability p (a judge that is right 1 - p of the time);
- ``false_alarm``: each correct step (+1) judged incorrect with probability p;
- ``miss``: each incorrect step (-1) judged correct with probability p;
- ``random``: with probability p a verdict is replaced by a draw independent of the step's
  correctness, +1 with the clean verdicts' share of +1 (``share``; by default the share among
  all clean verdicts this wrapper has judged so far). ``random`` at p = 1 is the random-verdict
  control: token rewards still vary within a group, but carry no information about which
  steps were wrong.

The noise of a step is a function of (seed, prompt, completion, step index): the same
completion gets the same verdicts in every method, every run and every re-scoring (for
``random`` with ``share=None``, the odds of a +1 also follow the share of +1 among the
completions judged before, so they depend on what was judged first; give ``share`` to fix
them).
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from botgrpo.tasks.base import Example, Score, Task, check_task, score_all

NOISE_KINDS = ("flip", "false_alarm", "miss", "random")


@dataclass(frozen=True)
class VerdictNoise:
    """What noise a judge adds to step verdicts.

    Attributes:
        rate: probability p in [0, 1] that the kind's change applies to a verdict.
        kind: one of :data:`NOISE_KINDS`.
    """

    rate: float
    kind: str = "flip"

    def __post_init__(self) -> None:
        if isinstance(self.rate, bool) or not isinstance(self.rate, int | float):
            raise ValueError(f"verdict noise rate must be a number in [0, 1], got {self.rate!r}")
        if not 0.0 <= float(self.rate) <= 1.0:  # also refuses nan
            raise ValueError(f"verdict noise rate must lie in [0, 1], got {self.rate!r}")
        if self.kind not in NOISE_KINDS:
            raise ValueError(
                f"unknown verdict noise kind {self.kind!r}; use one of {', '.join(NOISE_KINDS)}"
            )

    @classmethod
    def parse(cls, text: str) -> VerdictNoise:
        """``RATE[:KIND]``, e.g. ``0.2`` (flip), ``0.3:miss``, ``1:random``.

        >>> VerdictNoise.parse("0.3:miss")
        VerdictNoise(rate=0.3, kind='miss')
        """
        rate_text, colon, kind = str(text).strip().partition(":")
        if colon and not kind.strip():
            raise ValueError(
                f"verdict noise {text!r}: the kind after ':' is missing; write RATE[:KIND], "
                f"KIND one of {', '.join(NOISE_KINDS)}"
            )
        try:
            return cls(float(rate_text) + 0.0, kind.strip() or "flip")  # + 0.0: no -0
        except ValueError as err:
            reason = (
                str(err).removeprefix("verdict noise ")
                if "could not convert" not in str(err)
                else f"{rate_text!r} is not a rate in [0, 1]"
            )
            raise ValueError(
                f"verdict noise {text!r}: {reason}; write RATE[:KIND], e.g. 0.2 or 0.3:miss"
            ) from None

    def spec(self) -> str:
        """The ``RATE:KIND`` text of this noise (inverse of :meth:`parse`)."""
        return f"{float(self.rate)!r}".removesuffix(".0") + f":{self.kind}"

    def describe(self) -> str:
        """One phrase for summaries, e.g. ``20% of step verdicts flipped``."""
        share = f"{self.rate:.0%}"
        return {
            "flip": f"{share} of step verdicts flipped",
            "false_alarm": f"{share} of correct steps judged incorrect",
            "miss": f"{share} of incorrect steps judged correct",
            "random": f"{share} of step verdicts drawn at random (independent of correctness)",
        }[self.kind]


def _uniforms(seed: int, prompt: str, completion: str, n: int) -> np.ndarray:
    """Two uniforms per step, [n, 2], a function of (seed, prompt, completion) only."""
    digest = hashlib.blake2b(
        f"{seed}\x00{prompt}\x00{completion}".encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()
    return np.random.default_rng(int.from_bytes(digest, "little")).random((n, 2))


class NoisyVerdicts:
    """``task`` judged by a noisy judge: the same task, with step verdicts changed by
    :class:`VerdictNoise` (see the module docstring). Everything but ``score`` (and
    ``score_batch``) is the wrapped task's, attribute lookups included.

    Args:
        task: any object of the task protocol whose reward is built from its step verdicts
            (a task bringing its own ``reward_function``, like the code tasks' line recipes, is
            refused: the wrapper would not reach its verdicts).
        rate: probability of the kind's change per verdict, in [0, 1].
        kind: ``flip``, ``false_alarm``, ``miss`` or ``random``.
        seed: the noise's seed (the same for every method of a comparison).
        share: for ``random``, the probability of a +1 draw; None = the share of +1 among the
            clean nonzero verdicts of the completions judged before (the completion's own for
            the first), which follows the policy as it improves.

    >>> from botgrpo.tasks.chain import ChainArithmetic
    >>> noisy = NoisyVerdicts(ChainArithmetic(), 1.0)  # every verdict inverted
    >>> ex = noisy.sample(random.Random(0))
    >>> text = noisy.demonstration(ex)
    >>> [s.verdict for s in noisy.score(ex, text).steps] == [
    ...     -s.verdict for s in noisy.clean.score(ex, text).steps]
    True
    """

    def __init__(
        self,
        task: Task,
        rate: float,
        kind: str = "flip",
        seed: int = 0,
        share: float | None = None,
    ) -> None:
        check_task(task)
        if isinstance(task, NoisyVerdicts):
            raise ValueError(
                "the task already has noisy verdicts; wrap the clean task once (one rate, one kind)"
            )
        if callable(getattr(task, "reward_function", None)):
            raise ValueError(
                f"task {task.name!r} trains with its own reward function (the line recipes of "
                "the code tasks), which step-verdict noise does not reach; use a task whose "
                "reward comes from its step verdicts (chain, columns, jsonl:PATH, ...)"
            )
        if share is not None and not 0.0 <= share <= 1.0:
            raise ValueError(f"share must lie in [0, 1], got {share!r}")
        self.clean = task
        self.noise = VerdictNoise(rate, kind)
        self.seed = int(seed)
        self.share = share
        self._counts = [0, 0]  # clean +1 and -1 verdicts judged so far (for share=None)

    @property
    def name(self) -> str:
        return self.clean.name

    def __getattr__(self, attr: str) -> Any:  # the task's own options and defaults
        if attr == "clean":  # not set yet (during unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self.clean, attr)

    def fingerprint(self) -> str:
        """The clean task's identity with this noise (the warm start uses the clean task's)."""
        from botgrpo.tasks.base import task_fingerprint

        return f"{task_fingerprint(self.clean)}|{self.noise.spec()}|{self.seed}|{self.share}"

    def __repr__(self) -> str:
        return f"NoisyVerdicts({self.clean!r}, {self.noise.spec()!r}, seed={self.seed})"

    def sample(self, rng: random.Random) -> Example:
        return self.clean.sample(rng)

    def demonstration(self, example: Example) -> str:
        return self.clean.demonstration(example)

    def score(self, example: Example, completion: str) -> Score:
        return self.noisy(example, completion, self.clean.score(example, completion))

    def score_batch(self, examples: Sequence[Example], completions: Sequence[str]) -> list[Score]:
        clean = score_all(self.clean, examples, completions)
        return [self.noisy(e, c, s) for e, c, s in zip(examples, completions, clean, strict=True)]

    def noisy(self, example: Example, completion: str, score: Score) -> Score:
        """``score`` with its verdicts changed (outcome, spans, format and metrics kept)."""
        raw = [s.verdict for s in score.steps]
        share = self._positive_share(raw.count(1), raw.count(-1))
        self._counts[0] += raw.count(1)
        self._counts[1] += raw.count(-1)
        u = _uniforms(self.seed, example.prompt, completion, len(raw))
        verdicts = [self._change(v, u[i, 0], u[i, 1], share) for i, v in enumerate(raw)]
        steps = tuple(
            dataclasses.replace(s, verdict=v) if v != s.verdict else s
            for s, v in zip(score.steps, verdicts, strict=True)
        )
        return dataclasses.replace(score, steps=steps)

    def _change(self, verdict: int, u: float, v: float, share: float) -> int:
        rate, kind = self.noise.rate, self.noise.kind
        if verdict == 0 or u >= rate:
            return verdict
        if kind == "flip":
            return -verdict
        if kind == "false_alarm":
            return -1 if verdict == 1 else verdict
        if kind == "miss":
            return 1 if verdict == -1 else verdict
        return 1 if v < share else -1

    def _positive_share(self, positive_here: int, negative_here: int) -> float:
        """The odds of a +1 draw: ``share``, else the clean share judged before this
        completion, else (the first completion) its own."""
        if self.share is not None:
            return self.share
        positive, negative = self._counts
        if positive + negative == 0:
            positive, negative = positive_here, negative_here
        return positive / (positive + negative) if positive + negative else 0.5


def clean_task(task: Task) -> Task:
    """The task without noisy or learned verdicts (evaluations and warm starts use it)."""
    while isinstance(task, NoisyVerdicts) or getattr(type(task), "wraps_verdicts", False):
        task = task.clean
    return task


def with_verdict_noise(task: Task, spec: str | VerdictNoise | None, seed: int = 0) -> Task:
    """``task`` judged with the noise of ``spec`` (``RATE[:KIND]``); ``task`` itself when
    ``spec`` is empty or None."""
    if spec is None or spec == "":
        return task
    noise = spec if isinstance(spec, VerdictNoise) else VerdictNoise.parse(spec)
    return NoisyVerdicts(task, noise.rate, noise.kind, seed=seed)


__all__ = ["NOISE_KINDS", "NoisyVerdicts", "VerdictNoise", "clean_task", "with_verdict_noise"]
