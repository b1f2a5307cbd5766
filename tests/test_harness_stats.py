"""Learning-speed statistics and the summary on hand-made curves and records."""

from __future__ import annotations

import json
import re

import pytest

from botgrpo.harness import stats
from botgrpo.harness.config import CompareConfig
from botgrpo.harness.summary import build_summary, render_markdown, write_summary


def _curves(**runs):
    """method -> seed -> (steps, values) from lists of values at steps 0, 10, 20, ..."""
    return {
        m: {s: (list(range(0, 10 * len(v), 10)), v) for s, v in enumerate(vals)}
        for m, vals in runs.items()
    }


def test_thresholds_come_from_the_start_and_the_plateau_not_a_noise_peak():
    # grpo has a one-evaluation peak at 0.9; both methods settle near 0.5-0.6
    curves = _curves(
        grpo=[[0.1, 0.9, 0.4, 0.5, 0.5, 0.5]],
        bot=[[0.1, 0.3, 0.5, 0.6, 0.6, 0.6]],
    )
    lv = stats.levels(curves, n_problems=500)
    # plateau = bot's mean of its last third (0.6, 0.6); start 0.1; gain 0.5
    assert (lv.start, lv.plateau) == pytest.approx((0.1, 0.6))
    assert lv.thresholds == (0.225, 0.35, 0.475)
    assert lv.learned and not lv.given
    assert stats.levels(curves, 500, given=(0.3,)).thresholds == (0.3,)


def test_no_thresholds_inside_evaluation_noise():
    flat = _curves(grpo=[[0.05, 0.052, 0.058, 0.06]], bot=[[0.05, 0.06, 0.062, 0.061]])
    # start 0.05 on 500 problems: SE = sqrt(0.05 * 0.95 / 500) = 0.0097; gain 0.0115 < 3 SE
    lv = stats.levels(flat, n_problems=500)
    assert lv.se == pytest.approx(0.00975, abs=1e-4)
    assert lv.thresholds == () and not lv.learned


def test_a_single_lucky_evaluation_is_not_a_crossing():
    # the blip at step 10 falls back; the level is held from step 30 on, crossed at 0.5 on the
    # line from (20, 0.3) to (30, 0.55): step 28
    assert stats.held_crossing([0, 10, 20, 30, 40], [0.1, 0.6, 0.3, 0.55, 0.7], 0.5) == 28
    # already there at the first evaluation
    assert stats.held_crossing([0, 10, 20], [0.6, 0.7, 0.7], 0.5) == 0
    # reached only at the last evaluation: not held, so censored
    assert stats.held_crossing([0, 10, 20], [0.1, 0.2, 0.9], 0.5) is None
    with pytest.raises(ValueError, match="differ in length"):
        stats.held_crossing([0, 10], [0.1], 0.5)


def test_area_under_the_curve_is_the_mean_gain_over_the_run():
    # trapezoids: (0 + 0.4) * 10 / 2 + (0.4 + 0.4) * 10 / 2 = 6; over 20 steps = 0.3
    assert stats.auc_gain([0, 10, 20], [0.2, 0.6, 0.6], 0.2) == pytest.approx(0.3)
    fast, slow = (
        stats.auc_gain([0, 10, 20], [0.2, 0.8, 0.8], 0.2),
        stats.auc_gain([0, 10, 20], [0.2, 0.2, 0.8], 0.2),
    )
    assert fast > slow  # the same final value reached earlier has more area


def test_one_seed_gives_a_ratio_but_no_interval():
    steps = {"grpo": [30], "bot": [10]}
    s = stats.speedup(steps, "grpo", "bot", 0.5, budget=50)
    assert s.ratio == pytest.approx(3.0) and not s.has_interval and s.n_seeds == 1


def test_three_seeds_give_a_paired_interval_and_censoring_direction():
    s = stats.speedup({"grpo": [30, 40, 20], "bot": [10, 20, 10]}, "grpo", "bot", 0.5, 50)
    # mean 30 / mean 13.33 = 2.25
    assert s.ratio == pytest.approx(2.25) and s.has_interval
    assert s.low <= s.ratio <= s.high and s.low > 1
    censored = stats.speedup({"grpo": [None, 40, 20], "bot": [10, 20, 10]}, "grpo", "bot", 0.5, 50)
    assert "the ratio is a lower bound" in censored.censoring()
    both = stats.speedup({"grpo": [None, 40, 20], "bot": [None, 20, 10]}, "grpo", "bot", 0.5, 50)
    assert "not a bound either way" in both.censoring()
    assert stats.speedup({"grpo": [None], "bot": [None]}, "grpo", "bot", 0.5, 50) is None


def test_paired_difference_needs_three_seeds():
    assert stats.paired_difference_ci([0.3, 0.4], [0.1, 0.2]) is None
    mean, low, high = stats.paired_difference_ci([0.5, 0.6, 0.55], [0.3, 0.4, 0.35])
    assert mean == pytest.approx(0.2) and low == pytest.approx(0.2) and high == pytest.approx(0.2)


def _records(curves_by_method: dict, metric: str = "sampled_solved") -> list[dict]:
    out = []
    for method, seeds in curves_by_method.items():
        for seed, values in enumerate(seeds):
            for i, v in enumerate(values):
                out.append(
                    {
                        "kind": "eval",
                        "method": method,
                        "seed": seed,
                        "step": 10 * i,
                        metric: v,
                        "greedy_solved": v / 2,
                        "greedy_step_acc": 0.9,
                        "weight_drift": 0.01 * i,
                    }
                )
            for step in range(1, 10 * (len(values) - 1) + 1):
                out.append(
                    {
                        "kind": "train",
                        "method": method,
                        "seed": seed,
                        "step": step,
                        "solved": 0.5,
                        "bot/frac_zero_signal_groups": 0.25 if method == "grpo" else 0.0,
                    }
                )
    return out


def _cfg(seeds: int) -> CompareConfig:
    return CompareConfig(name="t", methods=("grpo", "bot"), seeds=seeds, steps=50, eval_every=10)


def test_summary_json_fields_and_the_verdict_in_words(tmp_path):
    records = _records(
        {
            "grpo": [[0.1, 0.2, 0.4, 0.6, 0.7, 0.7]] * 3,
            "bot": [[0.1, 0.4, 0.6, 0.7, 0.7, 0.7], [0.1, 0.5, 0.7, 0.7, 0.7, 0.7]] * 1
            + [[0.1, 0.4, 0.6, 0.7, 0.7, 0.7]],
        }
    )
    path = write_summary(records, _cfg(3), {}, tmp_path / "summary.md", seconds=60.0)
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["metric"] == "sampled_solved" and s["n_seeds"] == 3 and s["learned"]
    assert s["thresholds"] == [0.25, 0.4, 0.55]
    bot = s["methods"]["bot"]
    assert set(bot) >= {
        "lr",
        "seeds",
        "metrics",
        "steps_to_threshold",
        "auc_gain",
        "groups_with_signal",
        "train_solved_last10",
        "wall_seconds_per_run",
    }
    assert bot["metrics"]["sampled_solved"]["start"] == pytest.approx(0.1)
    assert bot["metrics"]["greedy_solved"]["final"] == pytest.approx(0.35)
    # seed 1 holds 0.4 from step 10 and crosses it 3/4 of the way from 0.1 (step 0) to 0.5
    assert bot["steps_to_threshold"]["0.4"] == [10, 7.5, 10]
    assert s["methods"]["grpo"]["steps_to_threshold"]["0.4"] == [20, 20, 20]
    mid = next(sp for sp in s["speedups"] if sp["threshold"] == 0.4)
    assert mid["ratio"] == pytest.approx(20 / (27.5 / 3)) and mid["low"] is not None
    assert s["methods"]["grpo"]["groups_with_signal"] == pytest.approx(0.75)
    text = path.read_text()
    assert "bot learned faster, and the interval excludes equal speed" in text
    assert "| bot | " in text and "**" not in text.split("|")[0]  # no bold claims


def test_one_seed_summary_says_it_is_not_evidence(tmp_path):
    records = _records({"grpo": [[0.1, 0.2, 0.5, 0.7, 0.7]], "bot": [[0.1, 0.5, 0.7, 0.7, 0.7]]})
    s = build_summary(records, _cfg(1), {}, seconds=1.0)
    assert all(sp["low"] is None for sp in s["speedups"])
    text = render_markdown(s)
    assert "one observation with no interval, not evidence" in text
    assert not re.search(r"interval -?\d", text) and "CI" not in text
    assert "(0.000)" not in text and "(1 seed: no sd)" in text  # no spread from one seed
    assert "2 methods x 1 seed," in text.splitlines()[0]


def test_summary_header_counts_the_seeds_each_method_ran(tmp_path):
    """Merged comparisons can hold methods with different seed counts: the header says so."""
    records = _records(
        {"grpo": [[0.1, 0.2, 0.5, 0.7, 0.7]] * 3, "bot": [[0.1, 0.5, 0.7, 0.7, 0.7]]}
    )
    header = render_markdown(build_summary(records, _cfg(3), {}, seconds=1.0)).splitlines()[0]
    assert "2 methods x 1-3 seeds," in header


def test_summary_gives_a_runs_own_time_besides_the_commands(tmp_path):
    records = _records({"grpo": [[0.1, 0.2, 0.5, 0.7, 0.7]], "bot": [[0.1, 0.5, 0.7, 0.7, 0.7]]})
    runs = {"grpo": [120.0], "bot": [240.0]}
    text = render_markdown(build_summary(records, _cfg(1), {}, seconds=3.0, run_seconds=runs))
    assert (
        "Wall time 0.1 min (runs finished before were reused, not rerun); a run takes 3.0" in text
    )
    resumed = build_summary(
        records, _cfg(1), {}, seconds=3.0, run_seconds=runs, earlier_seconds=357.0
    )
    assert resumed["wall_seconds"] == 360.0 and resumed["wall_seconds_command"] == 3.0
    assert (
        "Wall time 6.0 min, 0.1 of them this command's (runs finished before were reused, not "
        "rerun); a run takes 3.0 min on average." in render_markdown(resumed)
    )
    fresh = render_markdown(build_summary(records, _cfg(1), {}, seconds=300.0, run_seconds=runs))
    assert "a run takes 3.0 min on average." in fresh and "reused" not in fresh
    assert "a run takes" not in render_markdown(build_summary(records, _cfg(1), {}, seconds=3.0))


def test_flat_curves_report_no_speedup(tmp_path):
    records = _records({"grpo": [[0.1, 0.1, 0.11, 0.1]], "bot": [[0.1, 0.11, 0.1, 0.11]]})
    s = build_summary(records, _cfg(1), {}, seconds=1.0)
    assert not s["learned"] and s["thresholds"] == [] and s["speedups"] == []
    assert "No method learned beyond evaluation noise" in render_markdown(s)
