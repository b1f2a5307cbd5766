"""pass@k, steps-to-threshold and the bootstrap speedup interval."""

from __future__ import annotations

import doctest
from math import comb

import pytest

import botgrpo.metrics as metrics
from botgrpo.metrics import bootstrap_ratio_ci, pass_at_k, steps_to_threshold


def test_doctests():
    assert doctest.testmod(metrics).failed == 0


@pytest.mark.parametrize(
    ("n", "c", "k"), [(10, 3, 1), (10, 3, 4), (20, 5, 10), (8, 0, 2), (5, 5, 5)]
)
def test_pass_at_k_matches_binomial_form(n, c, k):
    exact = 1 - comb(n - c, k) / comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)


def test_pass_at_k_stable_for_large_n():
    # C(10000, 5000) overflows a float; the product form does not
    value = pass_at_k(10_000, 1, 5000)
    assert value == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize(
    ("n", "c", "k"), [(5, 6, 1), (5, 2, 0), (5, 2, 6), (-1, 0, 1), (5, 2.5, 1)]
)
def test_pass_at_k_bad_input(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_steps_to_threshold():
    assert steps_to_threshold([10, 20, 30], [0.2, 0.5, 0.9], 0.5) == 20
    assert steps_to_threshold([10, 20, 30], [0.2, 0.3, 0.4], 0.5) is None
    with pytest.raises(ValueError, match="strictly increasing"):
        steps_to_threshold([10, 10], [0.1, 0.2], 0.5)
    with pytest.raises(ValueError, match="differ in length"):
        steps_to_threshold([10], [0.1, 0.2], 0.5)


def test_bootstrap_ratio_ci_contains_ratio_and_is_deterministic():
    base, meth = [100, 120, 80, 110, 90], [50, 60, 45, 55, 50]
    ci = bootstrap_ratio_ci(base, meth, seed=1)
    # ratio of means: 500 / 260
    assert ci.ratio == pytest.approx(500 / 260)
    assert ci.low <= ci.ratio <= ci.high
    assert ci.low > 1.5
    assert ci == bootstrap_ratio_ci(base, meth, seed=1)


def test_bootstrap_identical_seeds_give_a_point_interval():
    ci = bootstrap_ratio_ci([40, 40, 40], [20, 20, 20])
    assert (ci.low, ci.ratio, ci.high) == (2.0, 2.0, 2.0)


def test_bootstrap_censoring_needs_a_budget():
    with pytest.raises(ValueError, match="never reached the threshold"):
        bootstrap_ratio_ci([None, 100], [50, 50])
    ci = bootstrap_ratio_ci([None, 100], [50, 50], budget=200)
    assert ci.ratio == pytest.approx(3.0)
    assert ci.censored == 1


def test_bootstrap_unpaired_allows_different_seed_counts():
    ci = bootstrap_ratio_ci([100, 100, 100], [50, 50], paired=False)
    assert ci.ratio == pytest.approx(2.0)
    with pytest.raises(ValueError, match="paired bootstrap needs equal seeds"):
        bootstrap_ratio_ci([100, 100, 100], [50, 50])
