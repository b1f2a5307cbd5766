"""Learning-speed statistics that noise cannot fake.

Curves are ``method -> seed -> (steps, values)`` of one metric (:func:`results.eval_curves`).

- Start: the mean over every run of the step-0 value (all runs share the initial checkpoint).
- Plateau: the highest, over methods, seed-averaged mean of a run's last third of evaluations
  (at least two points). A single noisy peak cannot set it, unlike the best value.
- Thresholds: 25/50/75% of the way from the start to the plateau. None when the plateau is
  less than three standard errors of one evaluation above the start: then nothing learned
  that an evaluation can see, and steps-to-threshold would measure noise.
- Crossing: the first evaluation at or above the threshold whose *next* evaluation is too (the
  level is held for two consecutive evaluations), so one lucky evaluation does not count; a
  run that never holds it is censored at the budget. The step is read off the straight line
  between that evaluation and the one before it, so steps-to-threshold is not rounded up to
  the evaluation grid (with evaluations every 5 steps, crossings at 15 and 20 would otherwise
  read as a 1.33x speedup whether the true steps were 11 and 19 or 14 and 16).
- Area under the curve: the mean gain over the start across the run (trapezoid rule over the
  evaluation steps, divided by the budget). A second statistic that uses every evaluation and
  needs no threshold.
- Intervals: paired percentile bootstrap over seeds (:func:`botgrpo.metrics.bootstrap_ratio_ci`),
  only with at least ``MIN_SEEDS_FOR_INTERVAL`` seeds; with fewer, a ratio is one observation,
  reported as such.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from botgrpo.metrics import bootstrap_ratio_ci

#: Fewer seeds than this give no interval (a bootstrap over 1-2 seeds is not an interval).
MIN_SEEDS_FOR_INTERVAL = 3
#: The plateau must sit this many standard errors of one evaluation above the start.
NOISE_SE = 3.0
#: Thresholds as fractions of the way from the start to the plateau.
THRESHOLD_FRACTIONS = (0.25, 0.5, 0.75)

Curves = dict[str, dict[int, tuple[list, list]]]


def start_value(curves: Curves) -> float:
    """Mean over every run of its first (step-0) value."""
    return float(np.mean([v[0] for seeds in curves.values() for _, v in seeds.values()]))


def tail_mean(values: Sequence[float]) -> float:
    """Mean of the last third of a curve (at least its last two points; one point alone).

    >>> tail_mean([0.1, 0.2, 0.8, 0.9, 0.7, 0.8])
    0.75
    """
    n = max(2, math.ceil(len(values) / 3))
    return float(np.mean(values[-n:]))


def plateau_value(curves: Curves) -> float:
    """Highest seed-averaged tail mean over methods."""
    return max(
        float(np.mean([tail_mean(v) for _, v in seeds.values()])) for seeds in curves.values()
    )


def evaluation_se(p: float, n: int) -> float:
    """Binomial standard error of a rate ``p`` measured on ``n`` independent problems (p kept
    at least 1/n from 0 and 1, so a rate of 0 still has a noise floor).

    >>> round(evaluation_se(0.5, 100), 3)
    0.05
    """
    p = min(max(p, 1.0 / n), 1.0 - 1.0 / n)
    return math.sqrt(p * (1 - p) / n)


@dataclass(frozen=True)
class Levels:
    """Start, plateau and the thresholds derived from them.

    Attributes:
        start: mean step-0 value.
        plateau: highest seed-averaged tail mean.
        se: standard error of one evaluation at the start.
        thresholds: the thresholds (empty when the gain is inside the noise).
        given: whether the thresholds were given by the user.
    """

    start: float
    plateau: float
    se: float
    thresholds: tuple[float, ...]
    given: bool = False

    @property
    def learned(self) -> bool:
        """Whether the plateau is clear of the start's evaluation noise."""
        return self.plateau - self.start >= NOISE_SE * self.se


def levels(curves: Curves, n_problems: int, given: Sequence[float] = ()) -> Levels:
    """Start, plateau, noise and thresholds (the given ones, else 25/50/75% of the gain)."""
    start, plateau = start_value(curves), plateau_value(curves)
    se = evaluation_se(start, n_problems)
    if given:
        return Levels(start, plateau, se, tuple(sorted(given)), given=True)
    if plateau - start < NOISE_SE * se:
        return Levels(start, plateau, se, ())
    gain = plateau - start
    return Levels(
        start, plateau, se, tuple(round(start + f * gain, 3) for f in THRESHOLD_FRACTIONS)
    )


def held_crossing(steps: Sequence[int], values: Sequence[float], threshold: float) -> float | None:
    """Step at which the curve crosses ``threshold`` for good: the first evaluation whose value
    and the next evaluation's value are both >= ``threshold``, interpolated linearly from the
    evaluation before it (0 when the very first evaluation is there already).

    >>> held_crossing([0, 5, 10, 15, 20], [0.1, 0.6, 0.2, 0.6, 0.7], 0.5)  # 5 is a blip
    13.75
    >>> held_crossing([0, 10, 20], [0.2, 0.8, 0.9], 0.5)  # halfway from 0.2 to 0.8
    5.0
    >>> held_crossing([0, 5, 10], [0.1, 0.2, 0.9], 0.5) is None  # not held: the last point
    True
    """
    if len(steps) != len(values):
        raise ValueError(f"steps ({len(steps)}) and values ({len(values)}) differ in length")
    for i in range(len(steps) - 1):
        if values[i] >= threshold and values[i + 1] >= threshold:
            if i == 0:  # (values[i - 1] < threshold, or i - 1 would have been found)
                return float(steps[0])
            s0, v0, s1, v1 = steps[i - 1], values[i - 1], steps[i], values[i]
            return round(s0 + (threshold - v0) / (v1 - v0) * (s1 - s0), 6)
    return None


def auc_gain(steps: Sequence[int], values: Sequence[float], start: float) -> float:
    """Mean gain over ``start`` across the run: trapezoid area of (value - start) over the
    steps, divided by the span of the steps.

    >>> auc_gain([0, 10, 20], [0.2, 0.6, 0.6], 0.2)
    0.3
    """
    x = np.asarray(steps, dtype=float)
    y = np.asarray(values, dtype=float) - start
    if len(x) < 2 or x[-1] <= x[0]:
        return float(y[-1]) if len(y) else 0.0
    area = float(np.sum((y[1:] + y[:-1]) * np.diff(x)) / 2)
    return round(area / float(x[-1] - x[0]), 12)


def crossings(curves: Curves, threshold: float) -> dict[str, list[float | None]]:
    """method -> held crossing step of each seed (None: never held), seeds in order."""
    return {
        m: [held_crossing(s, v, threshold) for _, (s, v) in sorted(seeds.items())]
        for m, seeds in curves.items()
    }


def auc_gains(curves: Curves, start: float) -> dict[str, list[float]]:
    """method -> AUC gain of each seed, seeds in order."""
    return {
        m: [auc_gain(s, v, start) for _, (s, v) in sorted(seeds.items())]
        for m, seeds in curves.items()
    }


@dataclass(frozen=True)
class Speedup:
    """How much faster ``method`` reached a threshold than ``baseline``.

    Attributes:
        baseline: the baseline method.
        method: the method compared.
        threshold: the level reached.
        ratio: mean baseline steps / mean method steps (runs never there count at the budget).
        low: lower end of the 95% interval; None with too few seeds.
        high: upper end; None with too few seeds.
        n_seeds: paired seeds.
        censored_baseline: baseline runs that never held the threshold.
        censored_method: method runs that never held it.
    """

    baseline: str
    method: str
    threshold: float
    ratio: float
    low: float | None
    high: float | None
    n_seeds: int
    censored_baseline: int
    censored_method: int

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def censoring(self) -> str:
        """Which way censored runs bias the ratio ("" when none were censored)."""
        b, m = self.censored_baseline, self.censored_method
        if b and m:
            return f"{b} + {m} runs never got there: not a bound either way"
        if b:
            return f"{b} {self.baseline} run(s) never got there: the ratio is a lower bound"
        if m:
            return f"{m} {self.method} run(s) never got there: the ratio is an upper bound"
        return ""


def speedup(
    steps: dict[str, list[float | None]], baseline: str, method: str, threshold: float, budget: int
) -> Speedup | None:
    """The speedup of ``method`` over ``baseline`` at one threshold; None when neither ever
    held it or a crossing at step 0 leaves no ratio."""
    base, meth = steps[baseline], steps[method]
    if all(s is None for s in base + meth):
        return None
    counted = [budget if s is None else s for s in base + meth]
    if any(s <= 0 for s in counted) or len(base) != len(meth):
        return None
    ratio = float(np.mean(counted[: len(base)]) / np.mean(counted[len(base) :]))
    low = high = None
    if len(base) >= MIN_SEEDS_FOR_INTERVAL:
        ci = bootstrap_ratio_ci(base, meth, budget=budget, seed=0)
        low, high = ci.low, ci.high
    return Speedup(
        baseline,
        method,
        threshold,
        ratio,
        low,
        high,
        len(base),
        sum(s is None for s in base),
        sum(s is None for s in meth),
    )


def paired_difference_ci(
    a: Sequence[float], b: Sequence[float], *, n_boot: int = 10_000, seed: int = 0
) -> tuple[float, float, float] | None:
    """mean(a - b) with a paired percentile-bootstrap 95% interval; None with too few seeds.

    >>> paired_difference_ci([0.3, 0.4], [0.1, 0.2]) is None
    True
    """
    if len(a) != len(b) or len(a) < MIN_SEEDS_FOR_INTERVAL:
        return None
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n_boot, len(diff)))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(diff.mean()), float(low), float(high)
