"""benchmarks/code_regime.py carries a point's long warm start across clones: the cache's resume
point is mirrored into the committed records only when further along, and a committed one
further along than the cache's goes back into the cache (the warm start then resumes there); and
its fallback level, the highest every run holds, is one every run crosses by the crossing rule of
the statistics (two evaluations in a row at or above it), and no higher; and its report reads
a finished comparison's stored records."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from botgrpo.harness.stats import held_crossing

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(
        "code_regime", ROOT / "benchmarks" / "code_regime.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_script(*args: str) -> subprocess.CompletedProcess:
    """benchmarks/code_regime.py with ``args``, one thread, offline."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    script = str(ROOT / "benchmarks" / "code_regime.py")
    return subprocess.run(
        [sys.executable, script, *args], env=env, capture_output=True, text=True, timeout=120
    )


def regime_args(tmp_path: Path, **kw) -> argparse.Namespace:
    """The options the script's functions read, at their defaults (React, the hardest point)."""
    defaults = dict(
        out=str(tmp_path),
        task="react",
        point="hard",
        candidates=[],
        seeds=5,
        steps=50,
        eval_every=5,
        problems=200,
        workers=2,
    )
    return argparse.Namespace(**{**defaults, **kw})


def _state(path: Path, step: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"step": step, "model": {}}, path)


def test_resume_points_travel_only_forward(tmp_path):
    script = load_script()
    args = regime_args(tmp_path)
    task = script.point_task(args, "hard")
    cached, kept = script._resume_points(args, task)
    assert cached.parent.parent == tmp_path / ".cache"
    folder = "react_sections-3_max_parts-3_slip_rate-0.3"
    assert kept == tmp_path / "regime-warm" / folder / "state.pt"
    assert cached.parent.name.startswith(".warm-") and cached.parent.name.endswith(".resume")

    with pytest.raises(ValueError, match="nothing to keep"):  # nothing in the cache yet
        script.keep_resume(args, task)
    assert not kept.exists()
    _state(cached, 300)
    script.keep_resume(args, task)
    assert script._step_of(kept) == 300
    _state(kept, 700)  # a later clone got further and committed it
    script.keep_resume(args, task)  # the cache's 300 never replaces the records' 700
    assert script._step_of(kept) == 700
    script.restore_resume(args, task)
    assert script._step_of(cached) == 700
    _state(cached, 800)
    script.restore_resume(args, task)  # the cache's own later point stays
    assert script._step_of(cached) == 800


def test_each_candidate_warm_start_has_its_own_resume_point(tmp_path):
    """The candidates a family's points are chosen among, python's included, each keep their
    own resume point and mirror, and the options are part of each cache key."""
    script = load_script()
    args = regime_args(tmp_path, task="python", candidates=[0.3, 0.1])
    tasks = script.warm_tasks(args)
    assert tasks == ["python:helpers=3,slip_rate=0.3", "python:helpers=3,slip_rate=0.1"]
    (c1, k1), (c2, k2) = (script._resume_points(args, t) for t in tasks)
    assert c1 != c2 and k1 != k2
    assert k1.parent.name == "python_helpers-3_slip_rate-0.3"
    _state(c2, 100)
    script.keep_resume(args, tasks[1])
    assert script._step_of(k2) == 100 and not k1.exists()


def test_an_unreadable_resume_point_counts_as_none(tmp_path):
    script = load_script()
    bad = tmp_path / "state.pt"
    bad.write_text("not a checkpoint")
    assert script._step_of(bad) == -1
    good = tmp_path / "good.pt"
    _state(good, 100)
    assert script._copy_if_further(good, bad)
    assert script._step_of(bad) == 100


def test_the_mirror_works_while_the_comparison_holds_its_folder(tmp_path):
    from botgrpo.folders import own_folder

    script = load_script()
    args = regime_args(tmp_path)
    task = script.point_task(args, "hard")
    cached, kept = script._resume_points(args, task)
    _state(cached, 200)
    with own_folder(tmp_path / "regime-hard", "comparison", "code_regime.py --point hard"):
        script.keep_resume(args, task)
    assert script._step_of(kept) == 200


def test_every_run_holds_the_level_and_one_misses_anything_higher():
    script = load_script()
    steps = [0, 5, 10, 15, 20]
    runs = [
        [0.04, 0.30, 0.66, 0.70, 0.71],  # its peak is held
        [0.04, 0.10, 0.20, 0.60, 0.75],  # 0.75 only at the last evaluation: holds 0.60
        [0.04, 0.80, 0.30, 0.64, 0.64],  # a one-evaluation blip at 0.80
    ]
    assert [script.held_level(v) for v in runs] == [0.70, 0.60, 0.64]
    level = min(script.held_level(v) for v in runs)
    assert all(held_crossing(steps, v, level) is not None for v in runs)
    assert held_crossing(steps, runs[1], level + 0.001) is None


def _stored_hardest_point(tmp_path: Path) -> Path:
    """The stored comparison of the hardest point, its summary and records, under tmp_path."""
    import shutil

    stored = ROOT / "benchmarks" / "records" / "regime-hard"
    root = tmp_path / "regime-hard"
    root.mkdir()
    for name in ("summary.json", "metrics.jsonl"):
        shutil.copy(stored / name, root)
    return stored


def test_the_report_from_the_stored_hardest_point(tmp_path):
    """The report reads a finished comparison's records: arms, the paired comparison, costs,
    and a plot with a panel per rate the evaluations recorded."""
    import json

    script = load_script()
    _stored_hardest_point(tmp_path)
    args = regime_args(tmp_path, steps=10)  # the runs' own 50 steps count
    result = script.report(args, "hard")
    assert result["budget"] == 50
    pair = next(p for p in result["pairs"] if (p["arm"], p["baseline"]) == ("bot", "grpo"))
    half = pair["speedup"]["half-way"]
    assert half["low"] <= half["ratio"] <= half["high"] and len(pair["seeds"]) >= 5
    assert {r["arm"] for r in result["rows"]} >= {"bot", "grpo"}
    assert result["costs"]["grpo"]["groups_with_signal_step1"] < 1.0  # silent groups at the start
    assert 0 < result["costs"]["bot"]["local_share"] < 0.1
    saved = json.loads((tmp_path / "regime-hard-report.json").read_text())
    assert saved["levels"] == result["levels"] and "half-way" in saved["levels"]
    text = (tmp_path / "regime-hard-report.md").read_text()
    assert "| bot vs grpo |" in text and "| arm | s / step |" in text
    png = (tmp_path / "regime-hard-report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def test_an_arm_of_its_own_comparison_joins_the_report_without_moving_the_level(tmp_path):
    """otb, kept in a comparison of its own, pairs with grpo and bot by seed; an arm that breaks
    down counts as never reaching the level the comparison's own methods all hold."""
    import json

    script = load_script()
    stored = _stored_hardest_point(tmp_path)
    otb = tmp_path / "regime-hard-otb"
    otb.mkdir()
    lines = []
    for line in (stored / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("method") != "grpo":
            continue
        r["method"], r["lr"] = "otb", 2e-4
        if r.get("kind") == "eval" and r["step"] >= 10:
            r["sampled_compiled"] = 0.0  # broke down at step 10
        lines.append(json.dumps(r))
    (otb / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (otb / "summary.json").write_text(json.dumps({"methods": {"otb": {"lr": 2e-4}}}))
    args = regime_args(tmp_path)
    result = script.report(args, "hard")
    assert result["levels"]["highest every run holds"] == 0.6  # grpo's and bot's runs set it
    rows = {r["arm"]: r for r in result["rows"]}
    assert rows["otb"]["lr"] == 2e-4
    pairs = {(p["arm"], p["baseline"]): p for p in result["pairs"]}
    assert set(pairs) == {("bot", "grpo"), ("otb", "grpo"), ("bot", "otb")}
    assert pairs["bot", "otb"]["speedup"]["highest every run holds"]["censoring"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--report-only", "--warm-start-only"], "--report-only and --warm-start-only each pick"),
        (["--keep-resume", "--report-only"], "--report-only and --keep-resume each pick"),
        (["--candidates", "0.2"], "--candidates names warm starts to build or keep: add"),
        (["--steps", "10"], "--steps 10: a run warms its rate up over 10 steps"),
        (["--problems", "0"], "--problems 0: give 1 or more"),
        (["--keep-resume"], "nothing to keep"),
        (["--keep-resume", "--otb"], "--keep-resume trains no comparison: leave out --otb"),
        (["--warm-start-only", "--steps", "5"], "--steps 5: a run warms its rate up"),
    ],
)
def test_options_that_contradict_end_in_one_line_and_write_nothing(tmp_path, extra, says):
    done = run_script("--point", "hard", "--out", str(tmp_path), *extra)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines
    assert list(tmp_path.iterdir()) == []


def test_an_out_that_is_a_file_is_refused(tmp_path):
    out = tmp_path / "records"
    out.write_text("")
    done = run_script("--point", "hard", "--out", str(out), "--keep-resume")
    assert done.returncode == 2
    assert done.stderr.strip() == f"code_regime.py: error: --out {out} is a file: give a folder"


def test_a_bad_otb_rate_ends_before_any_run(tmp_path):
    """--otb's settings are checked with the main comparison's, before anything trains."""
    done = run_script("--point", "hard", "--otb", "--otb-rates", "0", "--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "code_regime.py: error: every lr_sweep rate must be a finite number > 0, got 0.0"
    ]
    assert list(tmp_path.iterdir()) == []


def test_the_control_joins_the_report_as_bot_on_random_lines(tmp_path):
    """The random-verdict control (bot, its line penalties on random lines) pairs with grpo and
    with bot on its clean lines, by seed."""
    import json

    script = load_script()
    stored = _stored_hardest_point(tmp_path)
    control = tmp_path / "regime-hard-random"
    control.mkdir()
    lines = [
        line
        for line in (stored / "metrics.jsonl").read_text().splitlines()
        if json.loads(line).get("method") == "bot"
    ]
    (control / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (control / "summary.json").write_text(json.dumps({"methods": {"bot": {"lr": 4e-4}}}))
    result = script.report(regime_args(tmp_path), "hard")
    pairs = {(p["arm"], p["baseline"]): p for p in result["pairs"]}
    assert set(pairs) == {
        ("bot", "grpo"),
        ("bot random lines", "grpo"),
        ("bot", "bot random lines"),
    }
    same = pairs["bot", "bot random lines"]["speedup"]["half-way"]
    assert same["ratio"] == 1.0  # the same records: no lead either way
    assert "bot random lines" in result["costs"]


def test_the_extra_arms_belong_to_the_hardest_point(tmp_path):
    done = run_script("--point", "middle", "--control", "--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "code_regime.py: error: --otb, --ablation and --control run at the hardest React "
        "point: --task react --point hard"
    ]
    assert list(tmp_path.iterdir()) == []
    done = run_script("--task", "python", "--point", "hard", "--otb", "--out", str(tmp_path))
    assert done.returncode == 2 and "at the hardest React point" in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("extra", [[], ["--warm-start-only"], ["--keep-resume"], ["--report-only"]])
def test_a_point_not_chosen_yet_says_how_to_choose_it(tmp_path, monkeypatch, capsys, extra):
    """A family's points are chosen by their warm starts' sampled compile rate: until one is,
    every mode that needs it names the command that builds the candidates, in one line, and
    writes nothing."""
    import dataclasses

    script = load_script()
    python = script.FAMILIES["python"]
    monkeypatch.setitem(script.FAMILIES, "python", dataclasses.replace(python, points={}))
    out = tmp_path / "records"
    argv = ["code_regime.py", "--task", "python", "--point", "middle", "--out", str(out), *extra]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as done:
        script.main()
    assert done.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    if extra == ["--report-only"]:
        assert "no finished comparison in" in lines[0] and "regime-python-middle" in lines[0]
    else:
        rates = " ".join(f"{r:g}" for r in python.candidates)
        assert "the python middle point is not chosen yet" in lines[0]
        assert f"--task python --point middle --warm-start-only --candidates {rates}" in lines[0]
    assert not out.exists()


def test_every_python_point_is_chosen_among_its_candidates():
    """The shipped points come from the candidates' warm starts, each its own slip rate."""
    python = load_script().FAMILIES["python"]
    assert set(python.points.values()) <= set(python.candidates)
    assert len(set(python.points.values())) == len(python.points)


def test_the_sweeps_figure_reads_every_arm_finished_or_not(tmp_path):
    """The hardest point's sweeps in one figure: the main comparison's and each extra arm's,
    a run stopped part-way drawn up to the steps all its rate's seeds reached."""
    import json
    import shutil

    script = load_script()
    args = regime_args(tmp_path)
    assert script.plot_sweeps(args, tmp_path / "none.png") is False
    stored = ROOT / "benchmarks" / "records" / "regime-hard" / "sweep"
    for run in ("grpo-lr0.0004-s0", "bot-lr0.0004-s0"):
        (tmp_path / "regime-hard" / "sweep" / run).mkdir(parents=True)
        shutil.copy(stored / run / "metrics.jsonl", tmp_path / "regime-hard" / "sweep" / run)
    records = [json.loads(x) for x in (stored / "bot-lr0.0004-s0" / "metrics.jsonl").open()]
    for seed, last in ((0, 50), (1, 12)):  # the second seed stopped at step 12
        run = tmp_path / "regime-hard-otb" / "sweep" / f"otb-lr1e-05-s{seed}"
        run.mkdir(parents=True)
        kept = [{**r, "method": "otb", "lr": 1e-5} for r in records if r["step"] <= last]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    runs = script._sweep_runs(tmp_path / "regime-hard-otb")
    assert list(runs) == [("otb", 1e-5)] and len(runs["otb", 1e-5]) == 2
    steps, mean = script._mean_curve(runs["otb", 1e-5], "eval", "sampled_compiled")
    assert steps == [0, 5, 10]
    full = [r["sampled_compiled"] for r in records if r.get("kind") == "eval"][:3]
    assert mean.tolist() == full
    assert script.plot_sweeps(args, tmp_path / "sweeps.png") is True
    png = (tmp_path / "sweeps.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def test_a_report_reads_the_runs_own_records_when_the_merged_file_is_missing(tmp_path):
    """A clone that keeps only the finished runs' files (runs/*/metrics.jsonl with done.json)
    reports the same comparison as the stored report, at the runs' own budget."""
    import json
    import shutil

    shutil.copytree(ROOT / "benchmarks" / "records" / "react-5seed", tmp_path / "react-5seed")
    assert not (tmp_path / "react-5seed" / "metrics.jsonl").exists()
    script = ROOT / "benchmarks" / "code_tasks.py"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(script), "--task", "react", "--out", str(tmp_path), "--report-only"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    made = json.loads((tmp_path / "react-5seed-report.json").read_text())
    stored = json.loads((ROOT / "docs" / "results" / "react-5seed.report.json").read_text())
    assert made["budget"] == stored["budget"] == 40

    def pair(result):
        return next(p for p in result["pairs"] if (p["arm"], p["baseline"]) == ("bot", "grpo"))

    assert pair(made)["speedup"] == pair(stored)["speedup"]
    assert pair(made)["auc_diff"] == pair(stored)["auc_diff"]


def test_a_report_without_any_runs_records_ends_in_one_line(tmp_path):
    import shutil

    (tmp_path / "regime-middle").mkdir()
    shutil.copy(
        ROOT / "benchmarks" / "records" / "regime-middle" / "summary.json",
        tmp_path / "regime-middle",
    )
    done = run_script("--point", "middle", "--out", str(tmp_path), "--report-only")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "keeps no runs' records" in lines[0], lines


def test_a_summary_over_part_of_the_runs_is_not_reported(tmp_path):
    """`botgrpo summarize` on a stopped comparison writes a summary of the runs finished so
    far; the report refuses it in one line, naming what is missing."""
    import shutil

    source = ROOT / "benchmarks" / "records" / "regime-middle"
    root = tmp_path / "regime-middle"
    for run in sorted((source / "runs").glob("*/done.json"))[:7]:  # 7 of the 10 runs
        (root / "runs" / run.parent.name).mkdir(parents=True)
        for name in ("metrics.jsonl", "done.json"):
            shutil.copy(run.parent / name, root / "runs" / run.parent.name)
    for name in ("config.json", "summary.json"):
        shutil.copy(source / name, root)
    done = run_script("--point", "middle", "--out", str(tmp_path), "--report-only")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "not every run has finished" in lines[0], lines
    assert "bot 5 of 5" in lines[0] and "grpo 2 of 5" in lines[0], lines


def test_arms_trained_for_different_budgets_are_not_compared(tmp_path):
    import json

    script = load_script()
    for name, steps in (("a", 50), ("b", 40), ("c", 50)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({"budget_steps": steps}))
    assert script.code_tasks.comparison_budget([tmp_path / "a", tmp_path / "c"]) == 50
    with pytest.raises(ValueError, match="different numbers of steps"):
        script.code_tasks.comparison_budget([tmp_path / "a", tmp_path / "b"])


def test_ctrl_c_while_a_warm_start_trains_ends_in_one_line(tmp_path):
    """Ctrl-C during a candidate's warm start: exit 130 with one line saying what is kept, no
    traceback, and no finished-looking warm start left in the cache."""
    import signal
    import time

    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    script = str(ROOT / "benchmarks" / "code_regime.py")
    args = ["--task", "python", "--point", "hard", "--warm-start-only", "--candidates", "0.3"]
    log = tmp_path / "err.log"
    with log.open("w") as err_file:
        proc = subprocess.Popen(
            [sys.executable, script, *args, "--out", str(tmp_path / "o")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err_file,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 120
        while "warm start: training" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        time.sleep(2)  # into the training loop
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    err = log.read_text()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("code_regime.py: interrupted;"), err
    assert "Traceback" not in err
    assert not [p for p in (tmp_path / "o" / ".cache").glob("warm-*") if p.is_dir()]


def test_runs_at_a_rate_the_comparison_no_longer_uses_stay_out_of_its_report(tmp_path):
    """A wider sweep can leave a method's runs at its old rate beside the new ones: the report
    reads each method at the rate its summary names, and the stray runs change nothing."""
    import json
    import shutil

    script = load_script()
    stored = ROOT / "benchmarks" / "records" / "regime-hard"
    root = tmp_path / "regime-hard"
    root.mkdir()
    shutil.copy(stored / "summary.json", root)
    shutil.copytree(stored / "runs", root / "runs", ignore=shutil.ignore_patterns("trainer"))
    args = regime_args(tmp_path)
    before = script.report(args, "hard")
    rate = json.loads((root / "summary.json").read_text())["methods"]["grpo"]["lr"]
    for seed in range(5):  # grpo at a rate no run was made at, every evaluation at the ceiling
        src, dst = (
            root / "runs" / f"grpo-lr{rate:g}-s{seed}",
            root / "runs" / f"grpo-lr1e-05-s{seed}",
        )
        dst.mkdir()
        shutil.copy(src / "done.json", dst)
        lines = []
        for line in (src / "metrics.jsonl").read_text().splitlines():
            r = {**json.loads(line), "lr": 1e-5}
            if r["kind"] == "eval":
                r["sampled_compiled"] = 1.0
            lines.append(json.dumps(r))
        (dst / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    script.code_tasks.records.cache_clear()
    after = script.report(args, "hard")
    assert after["pairs"] == before["pairs"] and after["rows"] == before["rows"]
    summary = json.loads((root / "summary.json").read_text())
    summary["methods"]["grpo"]["lr"] = 1e-3  # a summary that names a rate no run was made at
    (root / "summary.json").write_text(json.dumps(summary))
    script.code_tasks.records.cache_clear()
    with pytest.raises(ValueError, match=r"no finished run of grpo at the rate its summary"):
        script.report(args, "hard")


def test_a_point_sweeps_its_own_rates_with_sweep_and_goes_on_with_it(tmp_path):
    """Without --sweep a python point trains at the hardest React point's rates; with it, at
    the rates its own validation sweep chooses, and a later command without the flag goes on
    with the sweep its folder holds."""
    import json

    script = load_script()
    (tmp_path / "regime-hard").mkdir()
    (tmp_path / "regime-hard" / "lr_sweep.json").write_text(
        json.dumps(
            {
                "best": {"grpo": 4e-4, "bot": 4e-4},
                "mean_over_run": {"grpo": {"0.0004": 0.4}, "bot": {"0.0004": 0.5}},
            }
        )
    )
    common = dict(task="python", methods=["grpo", "bot"], rates=[2e-4, 4e-4], sweep_seeds=2)
    reused = script.config_for(regime_args(tmp_path, **common, sweep=False), "hard")
    assert reused.lr_sweep == () and set(reused.method_lrs) == {"grpo=0.0004", "bot=0.0004"}
    swept = script.config_for(regime_args(tmp_path, **common, sweep=True), "hard")
    assert swept.name == "regime-python-hard" and swept.lr_sweep == (2e-4, 4e-4)
    assert swept.method_lrs == () and swept.sweep_seeds == 2
    folder = tmp_path / "regime-python-hard"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"lr_sweep": [2e-4, 4e-4]}))
    again = script.config_for(regime_args(tmp_path, **common, sweep=False), "hard")
    assert again.lr_sweep == (2e-4, 4e-4)
    other = script.config_for(regime_args(tmp_path, **common, sweep=False), "middle")
    assert other.lr_sweep == ()  # another point keeps reusing the hardest React point's


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--point", "hard"], "--sweep: the hardest React point always sweeps its rates"),
        (["--task", "python", "--point", "hard", "--warm-start-only"], "leave out --sweep"),
    ],
)
def test_sweep_where_it_means_nothing_ends_in_one_line(tmp_path, extra, says):
    done = run_script("--sweep", "--out", str(tmp_path), *extra)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines
    assert list(tmp_path.iterdir()) == []


def test_a_point_that_swept_its_own_rates_gets_its_own_sweeps_figure(tmp_path):
    import shutil

    script = load_script()
    stored = ROOT / "benchmarks" / "records" / "regime-hard" / "sweep" / "grpo-lr0.0004-s0"
    run = tmp_path / "regime-python-hard" / "sweep" / "grpo-lr0.0004-s0"
    run.mkdir(parents=True)
    shutil.copy(stored / "metrics.jsonl", run)
    args = regime_args(tmp_path, task="python")
    assert script.plot_sweeps(args, tmp_path / "none.png") is False  # the React point's: none
    path = tmp_path / "regime-python-hard-sweeps.png"
    assert script.plot_sweeps(args, path, folders=("regime-python-hard",)) is True
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
