"""Folders have one owner, interrupted commands leave nothing half-written, summaries trust the
runs' records: real processes on one folder, in both orders."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from botgrpo.cli import main
from botgrpo.folders import (
    FolderBusy,
    FolderOwned,
    check_folder_kind,
    folder_kind,
    own_folder,
)
from botgrpo.harness.warmstart import REQUIRED_FILES, is_complete
from botgrpo.shipped import PACKAGED_DIR

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}

#: A warm start small enough to train in seconds: chain of 2 steps, 30 optimizer steps.
WARM = textwrap.dedent(
    """
    import sys
    from botgrpo.harness.warmstart import WarmStartConfig, warm_start
    from botgrpo.tasks import load_task
    from botgrpo.tiny import TinyModelSpec
    steps = int(sys.argv[2])
    spec = TinyModelSpec(hidden=16, layers=1, heads=2, kv_heads=1, intermediate=32,
                         max_positions=64)
    cfg = WarmStartConfig(steps=steps, batch_size=4, model=spec)
    task = load_task("chain:min_steps=2,max_steps=2")
    print("path", warm_start(task, cfg, sys.argv[1], progress=False), flush=True)
    """
)


def _warm(cache: Path, steps: int = 30) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WARM, str(cache), str(steps)],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_commands_needing_one_new_warm_start_share_it(tmp_path):
    cache = tmp_path / "cache"
    first, second = _warm(cache), _warm(cache)
    outs = [p.communicate(timeout=300) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    paths = {line.split(" ", 1)[1] for out, _ in outs for line in out.splitlines()}
    assert len(paths) == 1
    entry = Path(paths.pop())
    assert is_complete(entry) and folder_kind(entry) == "warm-start"
    trained = sum("training one" in err for _, err in outs)
    assert trained == 1, [err for _, err in outs]  # the other waited and reused it
    leftovers = [p.name for p in cache.iterdir() if p != entry and not p.name.endswith(".lock")]
    assert leftovers == []


def test_an_incomplete_entry_is_rebuilt_not_taken(tmp_path):
    cache = tmp_path / "cache"
    done = _warm(cache)
    out, _ = done.communicate(timeout=300)
    entry = Path(out.split(" ", 1)[1].strip())
    (entry / "tokenizer.json").unlink()  # as a crash of an older botgrpo left it
    assert not is_complete(entry)
    again = _warm(cache)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0 and "training one" in err
    assert all((entry / name).is_file() for name in REQUIRED_FILES)


def _wait_for(cache: Path, pattern: str, seconds: float = 120) -> None:
    """Until a build in ``cache`` has written ``pattern`` (or ``seconds`` pass)."""
    deadline = time.time() + seconds
    while time.time() < deadline and not any(cache.glob(pattern)):
        time.sleep(0.1)


def _built_alone(cache: Path, proc: subprocess.Popen) -> None:
    """``proc`` built its entry and left nothing else in ``cache`` but locks."""
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0
    entry = Path(out.split(" ", 1)[1].strip())
    leftovers = [p.name for p in cache.iterdir() if p != entry and not p.name.endswith(".lock")]
    assert leftovers == []


def test_an_interrupted_warm_start_leaves_nothing_and_the_next_run_builds(tmp_path):
    cache = tmp_path / "cache"
    proc = _warm(cache, steps=100_000)
    _wait_for(cache, ".warm-*.tmp/model.safetensors")
    assert any(cache.glob(".warm-*.tmp")), "training had not started"
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []
    again = _warm(cache)
    out, _ = again.communicate(timeout=300)
    assert again.returncode == 0 and is_complete(Path(out.split(" ", 1)[1].strip()))


def test_a_killed_warm_starts_private_folder_is_cleared_by_the_next_build(tmp_path):
    """SIGKILL gives no chance to clean up: the next command to build that entry, holding its
    lock, removes the dead build's private folder before it builds."""
    cache = tmp_path / "cache"
    proc = _warm(cache, steps=100_000)
    _wait_for(cache, ".warm-*.tmp/model.safetensors")
    proc.kill()
    proc.communicate(timeout=60)
    assert any(cache.glob(".warm-*.tmp")), "the killed build left nothing to clear"
    _built_alone(cache, _warm(cache))


def test_a_killed_build_of_the_same_entry_is_cleared_when_it_is_built_again(tmp_path):
    cache = tmp_path / "cache"
    proc = _warm(cache, steps=90)
    _wait_for(cache, ".warm-*.tmp/model.safetensors")
    proc.kill()
    proc.communicate(timeout=60)
    assert any(cache.glob(".warm-*.tmp")), "the killed build left nothing to clear"
    _built_alone(cache, _warm(cache, steps=90))


def test_an_interrupted_fixed_steps_warm_start_resumes_to_the_same_checkpoint(tmp_path):
    """Interrupted after its first resume point, the next build goes on from there and ends
    with the weights of an uninterrupted run (the same batches)."""
    from safetensors.torch import load_file

    cache = tmp_path / "cache"
    proc = _warm(cache, steps=260)
    _wait_for(cache, ".warm-*.resume/state.pt", seconds=240)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert any(cache.glob(".warm-*.resume/state.pt")), "no resume point was written"
    again = _warm(cache, steps=260)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0 and "resuming from step 100" in err, err
    resumed = Path(out.split(" ", 1)[1].strip())
    assert not any(cache.glob(".warm-*.resume"))  # removed once published
    straight = _warm(tmp_path / "other", steps=260)
    out, _ = straight.communicate(timeout=300)
    reference = Path(out.split(" ", 1)[1].strip())
    a, b = load_file(resumed / "model.safetensors"), load_file(reference / "model.safetensors")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)


HOLD = textwrap.dedent(
    """
    import sys, time
    from botgrpo.folders import own_folder
    with own_folder(sys.argv[1], "comparison", "botgrpo compare --name held"):
        print("held", flush=True)
        time.sleep(60)
    """
)


def _holder(folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], env=ENV, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_folder_in_use_is_refused_naming_its_holder(tmp_path):
    folder = tmp_path / "runs" / "held"
    proc = _holder(folder)
    try:
        busy = pytest.raises(FolderBusy, match=rf"botgrpo compare --name held, pid {proc.pid}")
        with busy, own_folder(folder, "comparison", "second"):
            pass
    finally:
        proc.kill()
        proc.wait()
    with own_folder(folder, "comparison", "second"):  # free once its holder is gone, however
        pass


def test_compare_on_a_folder_in_use_ends_in_one_line_before_anything(tmp_path, capsys):
    folder = tmp_path / "runs" / "held"
    proc = _holder(folder)
    try:
        before = sorted(p.name for p in folder.iterdir())
        code = main(["compare", "--out-dir", str(tmp_path / "runs"), "--name", "held"])
    finally:
        proc.kill()
        proc.wait()
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "in use by" in err, err
    assert sorted(p.name for p in folder.iterdir()) == before
    assert not (tmp_path / "runs" / ".cache").exists()


def _comparison_folder(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"task": "chain", "methods": ["bot"], "seeds": 1}))
    (root / "runs").mkdir()
    return root


@pytest.mark.parametrize(
    "target",
    [
        "comparison",
        "run",
        "warm-start",
        "shipped",
        "out-dir",
        "cache",
        "users-files",
        "users-checkpoints",
        "users-project",
    ],
)
def test_train_refuses_an_output_dir_another_command_owns(tmp_path, capsys, target):
    """Also the folder holding comparisons and their warm-start cache (marking it a training
    would lock them away) and a folder of the user's own whose files a training would replace."""
    comparison = _comparison_folder(tmp_path / "runs" / "cmp")
    run = comparison / "runs" / "bot-lr0.0001-s0"
    run.mkdir()
    (run / "metrics.jsonl").write_text("")
    (run / "done.json").write_text("{}")
    warm = tmp_path / "runs" / ".cache" / "warm-0123"
    warm.mkdir(parents=True)
    for name in REQUIRED_FILES:
        (warm / name).write_text("{}")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "README.md").write_text("my notes\n")
    # transformers removes old checkpoint-* folders of its output_dir, whoever wrote them
    checkpoints = tmp_path / "mine-checkpoints"
    (checkpoints / "checkpoint-0").mkdir(parents=True)
    (checkpoints / "checkpoint-0" / "notes.txt").write_text("precious\n")
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "notes.md").write_text("notes\n")
    folder = {
        "comparison": comparison,
        "run": run,
        "warm-start": warm,
        "shipped": PACKAGED_DIR / "chain",
        "out-dir": tmp_path / "runs",
        "cache": tmp_path / "runs" / ".cache",
        "users-files": mine,
        "users-checkpoints": checkpoints,
        "users-project": project,
    }[target]
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*")}
    code = main(["train", "--config", "recipes/chain_tiny_cpu.yaml", "--output_dir", str(folder)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert any(fix in err for fix in ("pick another folder", "outside it", "new or empty folder"))
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*")} == before


def test_diagnose_does_not_build_a_tiny_model_over_the_users_folder(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "tokenizer.json").write_text('{"my": "tokenizer"}')
    code = main(
        ["diagnose", "--task", "chain", "--model", f"tiny:{mine}", "--out-dir", str(tmp_path / "d")]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "exists and holds no model" in err
    assert [p.name for p in mine.iterdir()] == ["tokenizer.json"]
    assert (mine / "tokenizer.json").read_text() == '{"my": "tokenizer"}'


def test_a_folder_train_made_is_removed_when_the_trainer_refuses_its_settings(tmp_path, capsys):
    out = tmp_path / "out"
    recipe = "recipes/chain_tiny_cpu.yaml"
    code = main(["train", "--config", recipe, "--output_dir", str(out), "--use_vllm", "true"])
    err = capsys.readouterr().err.strip()
    # the model loads before TRL refuses the setting; the error is the last line
    assert code == 2 and err.splitlines()[-1].startswith("botgrpo train: error: vLLM"), err
    assert not out.exists()


def test_a_folder_inside_one_botgrpo_owns_is_refused(tmp_path):
    comparison = _comparison_folder(tmp_path / "cmp")
    with pytest.raises(FolderOwned, match="lies inside"):
        check_folder_kind(comparison / "runs" / "mine", "training")
    check_folder_kind(tmp_path / "elsewhere", "training")  # a new folder is free
    check_folder_kind(comparison, "comparison")  # its own kind resumes


def test_folders_made_before_markers_are_recognised(tmp_path):
    summary = tmp_path / "s"
    summary.mkdir()
    (summary / "config.json").write_text(json.dumps({"task": "chain", "methods": [], "seeds": 1}))
    (summary / "summary.json").write_text("{}")
    (summary / "summary.md").write_text("")
    assert folder_kind(summary) == "summary"
    assert folder_kind(_comparison_folder(tmp_path / "c")) == "comparison"
    repo = tmp_path / "repo"
    (repo / "runs").mkdir(parents=True)  # a folder that merely holds a runs/ folder is nobody's
    assert folder_kind(repo) is None


def test_summarize_trusts_the_runs_records_over_an_edited_config(tmp_path, capsys):
    import dataclasses

    from botgrpo.harness.config import CompareConfig

    root = tmp_path / "a"
    cfg = CompareConfig(name="a", methods=("grpo", "bot"), seeds=2, steps=50, eval_every=10)
    root.mkdir()
    (root / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), default=list))
    for method in cfg.methods:
        for seed in range(2):
            run = root / "runs" / f"{method}-lr0.0001-s{seed}"
            run.mkdir(parents=True)
            rows = [
                {"kind": "eval", "method": method, "seed": seed, "lr": 1e-4, "step": 10 * i,
                 "sampled_solved": 0.1 * i, "greedy_solved": 0.05 * i}
                for i in range(6)
            ]  # fmt: skip
            (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            settings = {"method": method, "seed": seed, "learning_rate": 1e-4, "steps": 50}
            (run / "done.json").write_text(json.dumps({"seconds": 6.0, "settings": settings}))
    config = json.loads((root / "config.json").read_text())
    config["steps"] = 400  # edited by hand
    (root / "config.json").write_text(json.dumps(config))
    assert main(["summarize", str(root), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "disagrees with its runs' records (steps 400 -> 50)" in err
    assert json.loads((tmp_path / "out" / "config.json").read_text())["steps"] == 50


def test_ctrl_c_ends_a_command_in_one_line(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "botgrpo.cli",
            "warm-start",
            "--task",
            "chain:min_steps=2,max_steps=2",
            "--out-dir",
            str(tmp_path / "out"),
            "--warm-start-steps",
            "100000",
            "--retrain",
        ],
        env=ENV,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = []
    while not any("training one" in x for x in seen):
        seen.append(proc.stderr.readline())
        assert seen[-1], "".join(seen)
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    lines = [x for x in err.splitlines() if x.strip()]
    assert proc.returncode == 130 and "interrupted" in lines[-1], err
    assert "Traceback" not in err and sum("interrupted" in x for x in lines) == 1, err
    cache = tmp_path / "out" / ".cache"
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


def test_a_folder_this_process_holds_is_refused_to_another_process(tmp_path):
    """The other order: the holder here, the second command a real `botgrpo` process."""
    import dataclasses

    from botgrpo.harness.config import CompareConfig

    folder = tmp_path / "runs" / "mine"
    with own_folder(folder, "comparison", "botgrpo compare --name mine"):
        cfg = CompareConfig(name="mine", methods=("bot",), seeds=1)
        (folder / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), default=list))
        proc = subprocess.run(
            [sys.executable, "-m", "botgrpo.cli", "summarize", str(folder)],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 2, proc.stderr
    assert f"in use by botgrpo compare --name mine, pid {os.getpid()}" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["compare", "warm-start"])
def test_out_dir_inside_a_comparison_is_refused(tmp_path, capsys, command):
    comparison = _comparison_folder(tmp_path / "runs" / "cmp")
    before = sorted(p.name for p in comparison.iterdir())
    assert main([command, "--out-dir", str(comparison)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a `botgrpo compare` comparison" in err, err
    assert sorted(p.name for p in comparison.iterdir()) == before


@pytest.mark.parametrize("content", [b"not a checkpoint", b"", b"\x80\x04K"])
def test_an_unreadable_resume_point_starts_over_in_one_line(tmp_path, content, capsys):
    import random

    import torch

    from botgrpo.harness.warmstart import _resume

    (tmp_path / "state.pt").write_bytes(content)
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters())
    recent: list[float] = []
    assert _resume(tmp_path, model, opt, random.Random(0), recent) == 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unreadable: starting over" in err


@pytest.mark.slow
def test_ctrl_c_during_a_comparisons_run_ends_its_worker_at_once(tmp_path):
    """The runs' workers ignore SIGINT (the command ends them): an interrupted comparison
    terminates the running worker and exits, not waiting for the run to reach its end."""
    args = ["--task", "chain", "--methods", "grpo", "--seeds", "1", "--steps", "100000"]
    args += ["--workers", "1", "--eval-every", "100000", "--out-dir", str(tmp_path)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "botgrpo.cli", "compare", *args, "--name", "long"],
        env=ENV,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = tmp_path / "long" / "runs"
    deadline = time.time() + 600  # a hang guard, not a speed target
    while (
        time.time() < deadline and proc.poll() is None and not any(started.glob("*/started.json"))
    ):
        time.sleep(0.2)
    assert proc.poll() is None and any(started.glob("*/started.json"))
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    # before the fix this waited for the 100000-step run
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in err, err
    assert "Traceback" not in err, err


def test_compare_refuses_a_folder_of_the_users_files_it_would_replace(tmp_path, capsys):
    """A folder botgrpo did not write, holding a config.json and a summary.md of the user's:
    a comparison under that name would replace them; it ends in one line, changing nothing."""
    mine = tmp_path / "runs" / "mine"
    mine.mkdir(parents=True)
    (mine / "config.json").write_text('{"my": "settings"}')
    (mine / "summary.md").write_text("my notes\n")
    before = {p: p.read_bytes() for p in mine.rglob("*")}
    code = main(["compare", "--out-dir", str(tmp_path / "runs"), "--name", "mine"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "holds config.json, summary.md, which botgrpo did not write" in err
    assert {p: p.read_bytes() for p in mine.rglob("*")} == before
    assert not (tmp_path / "runs" / ".cache").exists()


def test_compare_refuses_a_comparison_whose_finished_runs_were_made_otherwise(tmp_path, capsys):
    """Another task's comparison under the same --name, with no run name in common: its finished
    runs are checked at their own method, seed and rate, and the command ends before its
    config.json or summary is replaced."""
    root = _comparison_folder(tmp_path / "runs" / "cmp")
    run = root / "runs" / "bot-lr0.0004-s0"
    run.mkdir()
    (run / "metrics.jsonl").write_text("")
    settings = {"method": "bot", "seed": 0, "learning_rate": 4e-4, "task": "react", "steps": 100}
    (run / "done.json").write_text(json.dumps({"seconds": 1.0, "settings": settings}))
    (root / "summary.md").write_text("the react comparison's summary\n")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    args = ["compare", "--out-dir", str(tmp_path / "runs"), "--name", "cmp", "--task", "chain"]
    code = main([*args, "--methods", "bot", "--seeds", "1", "--learning-rate", "1e-4"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "bot-lr0.0004-s0 holds a finished run made with different settings" in err
    assert "task: 'react' -> 'chain'" in err and "use a new --name" in err
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_a_starting_checkpoint_spelled_another_way_is_the_same(tmp_path, monkeypatch):
    """Finished runs record their starting checkpoint as the command spelled it: the same
    folder written relative or absolute, or the same cached warm start (its hash covers what
    made it) under another --out-dir, does not make them incomparable; another model does."""
    from botgrpo.harness.resume import changed_settings, same_model

    monkeypatch.chdir(tmp_path)
    assert same_model("out/.cache/warm-ab12", str(tmp_path / "out" / ".cache" / "warm-ab12"))
    assert same_model("records/.cache/warm-ab12", "elsewhere/.cache/warm-ab12")
    assert not same_model("records/.cache/warm-ab12", "records/.cache/warm-cd34")
    assert not same_model("models/warm-ab12", "other/warm-ab12")  # not a cache entry
    assert not same_model("out/model", "out/model2") and not same_model(None, "out/model")
    stored = {"model_path": "out/.cache/warm-ab12", "steps": 50}
    now = {"model_path": str(tmp_path / "out" / ".cache" / "warm-ab12"), "steps": 60}
    assert changed_settings(stored, now) == ["steps"]


def test_a_finished_run_stored_under_another_runs_name_is_named(tmp_path, capsys):
    root = _comparison_folder(tmp_path / "runs" / "cmp")
    run = root / "runs" / "bot-lr0.0001-s0"
    run.mkdir()
    (run / "metrics.jsonl").write_text("")
    settings = {"method": "grpo", "seed": 3, "learning_rate": 1e-4}
    (run / "done.json").write_text(json.dumps({"seconds": 1.0, "settings": settings}))
    args = ["compare", "--out-dir", str(tmp_path / "runs"), "--name", "cmp", "--task", "chain"]
    code = main([*args, "--methods", "bot", "--seeds", "1", "--learning-rate", "1e-4"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "holds the finished run grpo-lr0.0001-s3 under another name" in err
