"""Noisy verdicts: any task judged as an imperfect judge or process reward model would.

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

A code task, which trains with its own line recipe, is wrapped by :class:`NoisyLines`
instead: the noise then changes the recipe's line penalties (kinds ``random``, each penalty
moved to a line drawn at random, and ``miss``, each penalty dropped; see
:mod:`botgrpo.rewards.noise`). :func:`with_verdict_noise` picks the wrapper.

The noise of a step is a function of (seed, prompt, completion, step index): the same
completion gets the same verdicts in every method, every run and every re-scoring (for
``random`` with ``share=None``, the odds of a +1 also follow the share of +1 among the
completions judged before, so they depend on what was judged first; give ``share`` to fix
them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from botgrpo.rewards.noise import NOISE_KINDS, VerdictNoise, line_noise, noise_uniforms
from botgrpo.tasks.base import Example, Score, Task, VerdictWrapper, check_task, score_all


class NoisyVerdicts(VerdictWrapper):
    """``task`` judged by a noisy judge: the same task, with step verdicts changed by
    :class:`VerdictNoise` (see the module docstring). Everything but ``score`` (and
    ``score_batch``) is the wrapped task's, attribute lookups included.

    Args:
        task: any object of the task protocol whose reward is built from its step verdicts
            (a task bringing its own ``reward_function``, like the code tasks' line recipes, is
            refused: :class:`NoisyLines` changes those).
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
                "the code tasks), which step-verdict noise does not reach; wrap it with "
                "NoisyLines (with_verdict_noise picks the wrapper)"
            )
        if share is not None and not 0.0 <= share <= 1.0:
            raise ValueError(f"share must lie in [0, 1], got {share!r}")
        self.clean = task
        self.noise = VerdictNoise(rate, kind)
        self.seed = int(seed)
        self.share = share
        self._counts = [0, 0]  # clean +1 and -1 verdicts judged so far (for share=None)

    def fingerprint(self) -> str:
        """The clean task's identity with this noise (the warm start uses the clean task's)."""
        from botgrpo.tasks.base import task_fingerprint

        return f"{task_fingerprint(self.clean)}|{self.noise.spec()}|{self.seed}|{self.share}"

    def __repr__(self) -> str:
        return f"NoisyVerdicts({self.clean!r}, {self.noise.spec()!r}, seed={self.seed})"

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
        u = noise_uniforms(self.seed, (example.prompt, completion), len(raw))
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


class NoisyLines(VerdictWrapper):
    """``task``, a code task that trains with its own line recipe, with noisy line penalties:
    its reward function gets ``lines.noise`` (:attr:`botgrpo.rewards.LineSignalConfig.noise`),
    so each line penalty is moved to a line drawn at random (``random``) or dropped (``miss``)
    with probability ``rate`` before it decays over neighbouring lines. Everything else, the
    outcome and ``score`` included, is the wrapped task's: outcome-only methods see what they
    see on the clean task, and evaluations read the clean task (:func:`clean_task`).

    The draws are a function of the code alone, so the same code gets the same noise in every
    method and run. ``NoisyLines(task, 1.0, "random")`` is the random-verdict control of code:
    the same number and size of penalties, on lines that say nothing about where the flaw is.
    """

    def __init__(self, task: Task, rate: float, kind: str = "random") -> None:
        check_task(task)
        if not callable(getattr(task, "reward_function", None)):
            raise ValueError(
                f"task {task.name!r} has no line recipe of its own: wrap it with NoisyVerdicts "
                "(with_verdict_noise picks the wrapper)"
            )
        if isinstance(task, VerdictWrapper):
            raise ValueError("the task already has changed verdicts; wrap the clean task once")
        noise = line_noise(VerdictNoise(rate, kind))
        assert noise is not None
        self.clean = task
        self.noise = noise

    def fingerprint(self) -> str:
        """The clean task's identity with this noise (the warm start uses the clean task's)."""
        from botgrpo.tasks.base import task_fingerprint

        return f"{task_fingerprint(self.clean)}|lines {self.noise.spec()}"

    def __repr__(self) -> str:
        return f"NoisyLines({self.clean!r}, {self.noise.spec()!r})"

    def score(self, example: Example, completion: str) -> Score:
        return self.clean.score(example, completion)

    def score_batch(self, examples: Sequence[Example], completions: Sequence[str]) -> list[Score]:
        return score_all(self.clean, examples, completions)

    def reward_function(self, tokenizer: Any, config: Any = None):
        """The clean task's reward function, its ``config`` (None, a mapping or the recipe's
        config) given this noise on its line penalties."""
        return self.clean.reward_function(tokenizer, config=_with_line_noise(config, self.noise))


def _with_line_noise(config: Any, noise: VerdictNoise) -> Any:
    """A recipe ``config`` (None, a mapping or a config dataclass) with ``lines.noise`` set."""
    spec = noise.spec()
    if config is None:
        return {"lines": {"noise": spec}}
    if isinstance(config, Mapping):
        lines = config.get("lines") or {}
        if isinstance(lines, Mapping):
            own = lines.get("noise")
            lines = {**lines, "noise": spec}
        else:
            own, lines = lines.noise, dataclasses.replace(lines, noise=spec)
        out = {**config, "lines": lines}
    else:
        own = config.lines.noise
        out = dataclasses.replace(config, lines=dataclasses.replace(config.lines, noise=spec))
    if own and line_noise(own).spec() != spec:
        raise ValueError(f"the reward config already sets lines.noise={own!r}; give the noise once")
    return out


def clean_task(task: Task) -> Task:
    """The task without noisy or learned verdicts (evaluations and warm starts use it)."""
    while isinstance(task, VerdictWrapper):
        task = task.clean
    return task


def with_verdict_noise(task: Task, spec: str | VerdictNoise | None, seed: int = 0) -> Task:
    """``task`` judged with the noise of ``spec`` (``RATE[:KIND]``); ``task`` itself when
    ``spec`` is empty or None."""
    if spec is None or spec == "":
        return task
    noise = spec if isinstance(spec, VerdictNoise) else VerdictNoise.parse(spec)
    if callable(getattr(task, "reward_function", None)):
        if seed:
            raise ValueError(
                f"task {task.name!r}: the line noise of code is drawn from the code alone; "
                "leave its seed at 0"
            )
        return NoisyLines(task, noise.rate, noise.kind)
    return NoisyVerdicts(task, noise.rate, noise.kind, seed=seed)


__all__ = [
    "NOISE_KINDS",
    "NoisyLines",
    "NoisyVerdicts",
    "VerdictNoise",
    "clean_task",
    "with_verdict_noise",
]
