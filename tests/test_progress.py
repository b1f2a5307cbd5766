"""Progress that tells the truth: periodic lines when bars are off, labelled phases, and a line
saying why a warm start is about to be trained."""

from __future__ import annotations

import json

from botgrpo.harness.compare import _phases
from botgrpo.harness.config import CompareConfig
from botgrpo.harness.progress import QuietProgress, format_duration
from botgrpo.harness.runner import RunSpec, read_progress, write_progress
from botgrpo.harness.warmstart import WarmStartConfig, why_training
from botgrpo.tasks import load_task


def test_quiet_progress_prints_a_line_with_counts_and_an_eta(capsys):
    progress = QuietProgress("demo: 2 runs", 80, interval_s=0.0)
    progress.update(20, "bot-lr0.0004-s0 evaluating step 20")
    line = capsys.readouterr().err.strip()
    assert line.startswith("demo: 2 runs: 20/80 steps (25%), elapsed ")
    assert ", ETA " in line and line.endswith("bot-lr0.0004-s0 evaluating step 20")


def test_quiet_progress_is_silent_while_bars_show_and_between_intervals(capsys):
    QuietProgress("x", 10, enabled=False).note("now")
    waiting = QuietProgress("x", 10, interval_s=3600.0)
    waiting.update(5)
    assert capsys.readouterr().err == ""
    waiting.note("a run finished")
    assert "5/10 steps (50%)" in capsys.readouterr().err


def test_steps_resumed_from_checkpoints_count_as_done_but_not_toward_the_pace(capsys):
    progress = QuietProgress("regime: 4 runs", 200, interval_s=0.0, initial=60)
    progress.note("starting")
    line = capsys.readouterr().err
    assert "60/200 steps (30%)" in line and ", ETA " not in line  # no pace to tell yet
    progress.start -= 40.0  # 10 steps made in 40 s, 130 left: 520 s
    progress.update(70)
    line = capsys.readouterr().err
    assert "70/200 steps (35%)" in line and ", ETA 8m40s" in line


def test_durations_read_as_a_person_writes_them():
    assert [format_duration(s) for s in (4.4, 65, 3725)] == ["4s", "1m05s", "1h02m"]


def test_the_bar_names_what_each_running_run_is_doing(tmp_path):
    cfg = CompareConfig(methods=("grpo", "bot"), seeds=1, steps=20, warmup_steps=0)
    specs = [
        RunSpec(m, 0, 1e-4, "m", str(tmp_path / m), cfg) for m in ("grpo", "bot", "dapo_later")
    ]
    for spec in specs[:2]:
        (tmp_path / spec.method).mkdir()
    write_progress(tmp_path / "grpo", 0, "evaluating")
    write_progress(tmp_path / "bot", 7, "training")
    states = {s.label: read_progress(tmp_path / s.method) for s in specs}
    assert states[specs[2].label] == (0, "")
    assert _phases(specs, states) == (
        "grpo-lr0.0001-s0 evaluating step 0, bot-lr0.0001-s0 training"
    )
    assert json.loads((tmp_path / "bot" / "progress.json").read_text())["step"] == 7


def test_a_warm_start_retrain_says_what_differs_from_the_shipped_one():
    config = WarmStartConfig()
    why = why_training(load_task("chain:min_steps=3"), config, use_packaged=True)
    assert "shipped warm start 'chain'" in why and "min_steps=3" in why
    why = why_training(load_task("chain"), WarmStartConfig(steps=100), use_packaged=True)
    assert "in: steps 3000 -> 100" in why
    # options the shipped warm start's record predates count at the value it trained with
    why = why_training(load_task("chain"), WarmStartConfig(packed=True), use_packaged=True)
    assert why.endswith("in: packed False -> True")
    assert why_training(load_task("chain"), config, use_packaged=False) == "--retrain was given"


def test_a_task_of_ones_own_is_not_compared_with_a_shipped_warm_start_of_another_kind(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "1+1=", "answer": 2}\n')
    why = why_training(load_task(f"jsonl:{path}"), WarmStartConfig(), use_packaged=True)
    assert why == "no warm start ships for a JsonlTask task ('jsonl')"
