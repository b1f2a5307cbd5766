"""Evaluation metrics: unbiased pass@k, steps-to-threshold, and a bootstrap CI for speedups.

- pass@k (Chen et al. 2021, arXiv 2107.03374): from n samples with c correct,
  pass@k = 1 - C(n-c, k) / C(n, k), computed as 1 - prod_{i=n-c+1}^{n} (1 - k/i) to stay
  stable for large n (no huge binomials).
- steps-to-threshold: the first evaluation step whose metric reaches the threshold.
- speedup: mean steps-to-threshold of a baseline over that of a method, with a percentile
  bootstrap interval over seeds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimate from ``n`` samples of which ``c`` are correct.

    >>> pass_at_k(10, 0, 1), pass_at_k(10, 10, 5), round(pass_at_k(10, 3, 1), 6)
    (0.0, 1.0, 0.3)
    """
    for name, value in (("n", n), ("c", c), ("k", k)):
        if not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(f"pass_at_k: {name} must be a non-negative int, got {value!r}")
    if c > n:
        raise ValueError(f"pass_at_k: c={c} correct exceeds n={n} samples")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k: k={k} must be between 1 and n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def steps_to_threshold(
    steps: Sequence[float], values: Sequence[float], threshold: float
) -> float | None:
    """First step whose value is >= ``threshold``; None if it is never reached.

    >>> steps_to_threshold([0, 10, 20, 30], [0.1, 0.4, 0.6, 0.7], 0.5)
    20
    """
    if len(steps) != len(values):
        raise ValueError(f"steps ({len(steps)}) and values ({len(values)}) differ in length")
    if any(b <= a for a, b in itertools.pairwise(steps)):
        raise ValueError("steps must be strictly increasing")
    for step, value in zip(steps, values, strict=True):
        if math.isnan(value):
            raise ValueError(f"value at step {step} is NaN")
        if value >= threshold:
            return step
    return None


@dataclass(frozen=True)
class RatioCI:
    """A speedup ratio with its bootstrap confidence interval.

    Attributes:
        ratio: mean(baseline steps) / mean(method steps) on the observed seeds.
        low: lower end of the interval.
        high: upper end of the interval.
        confidence: the interval's nominal coverage (e.g. 0.95).
        n_seeds: number of seeds per method.
        censored: number of runs that never reached the threshold and were counted at the budget.
    """

    ratio: float
    low: float
    high: float
    confidence: float
    n_seeds: int
    censored: int


def _censor(steps: Sequence[float | None], budget: float | None, who: str) -> np.ndarray:
    missing = sum(s is None for s in steps)
    if missing and budget is None:
        raise ValueError(
            f"{missing} {who} run(s) never reached the threshold: pass budget= (the step budget) "
            "to count them at the budget, which makes the ratio a bound, or raise the budget"
        )
    return np.array([budget if s is None else s for s in steps], dtype=float)


def bootstrap_ratio_ci(
    baseline_steps: Sequence[float | None],
    method_steps: Sequence[float | None],
    *,
    confidence: float = 0.95,
    n_boot: int = 10_000,
    paired: bool = True,
    budget: float | None = None,
    seed: int = 0,
) -> RatioCI:
    """Speedup of a method over a baseline (mean steps-to-threshold ratio) with a bootstrap CI.

    ``paired=True`` resamples seed indices jointly (the runs of one seed share data and initial
    checkpoint); otherwise each method's seeds are resampled independently. Runs that never
    reached the threshold (None) count at ``budget``; without a budget they raise.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    base = _censor(baseline_steps, budget, "baseline")
    meth = _censor(method_steps, budget, "method")
    if len(base) == 0 or len(meth) == 0:
        raise ValueError("need at least one seed per method")
    if paired and len(base) != len(meth):
        raise ValueError(f"paired bootstrap needs equal seeds, got {len(base)} and {len(meth)}")
    if (meth <= 0).any() or (base <= 0).any():
        raise ValueError("steps-to-threshold must be positive to form a ratio")
    rng = np.random.default_rng(seed)
    idx_b = rng.integers(0, len(base), size=(n_boot, len(base)))
    idx_m = idx_b if paired else rng.integers(0, len(meth), size=(n_boot, len(meth)))
    ratios = base[idx_b].mean(axis=1) / meth[idx_m].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(ratios, [alpha, 1 - alpha])
    censored = sum(s is None for s in baseline_steps) + sum(s is None for s in method_steps)
    return RatioCI(
        float(base.mean() / meth.mean()), float(low), float(high), confidence, len(base), censored
    )
