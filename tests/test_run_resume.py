"""A run stopped part-way resumes from its last checkpoint with the records an uninterrupted
run writes (``checkpoint_every``), and starts over when it cannot."""

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

from botgrpo.harness.config import CompareConfig
from botgrpo.harness.resume import read_records, resume_point
from botgrpo.harness.runner import RunSpec, execute_run, run_settings
from botgrpo.shipped import PACKAGED_DIR

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
#: Fields that measure time, not what the run computed.
CLOCK = ("eval_seconds", "elapsed_seconds")


def _spec(run_dir: Path, method: str = "bot", **options) -> RunSpec:
    settings = dict(
        name="resume",
        out_dir=str(run_dir.parent),
        task="chain",
        methods=(method,),
        seeds=1,
        steps=8,
        eval_every=2,
        checkpoint_every=2,
        eval_problems=16,
        pass_samples=1,
        pass_problems=8,
        metric="sampled_solved",
        prompts_per_step=2,
        num_generations=4,
        warmup_steps=1,
        learning_rate=5e-4,
        workers=1,
        progress=False,
    )
    cfg = CompareConfig(**{**settings, **options})
    return RunSpec(method, 0, cfg.learning_rate, str(PACKAGED_DIR / "chain"), str(run_dir), cfg)


RUN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    from pathlib import Path
    from test_run_resume import _spec
    from botgrpo.harness.runner import execute_run
    execute_run(_spec(Path(sys.argv[1]), sys.argv[3]))
    """
)


def _stopped_after_a_checkpoint(run_dir: Path, method: str = "bot") -> None:
    """Start the run in a process of its own and kill it (no clean-up) once its first
    checkpoint is complete, before the run ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, str(run_dir), str(Path(__file__).parent), method],
        env=ENV,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 1800  # a hang guard, not a speed target
    state = run_dir / "trainer" / "checkpoint-2" / "trainer_state.json"
    while time.time() < deadline and not state.exists() and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert state.exists(), err
    assert not (run_dir / "done.json").exists(), "the run ended before it was stopped"


def _settings(spec: RunSpec) -> dict:
    """The settings a run of ``spec`` records (the task's defaults filled in, as a run does)."""
    from botgrpo.harness.config import resolve_task_defaults
    from botgrpo.tasks import load_task

    resolve_task_defaults(spec.config, load_task(spec.config.task))
    return run_settings(spec)


def _computed(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in CLOCK} for r in records if r["kind"] != "cost"]


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_records_of_an_uninterrupted_one(tmp_path):
    straight = tmp_path / "straight" / "bot-lr0.0005-s0"
    straight.parent.mkdir()
    execute_run(_spec(straight))
    stopped = tmp_path / "stopped" / "bot-lr0.0005-s0"
    stopped.parent.mkdir()
    _stopped_after_a_checkpoint(stopped)
    point = resume_point(stopped, _settings(_spec(stopped)))
    assert point is not None and point[1] >= 2
    execute_run(_spec(stopped))
    done = json.loads((stopped / "done.json").read_text())
    assert done["resumed_at_steps"] == [point[1]]
    assert not (stopped / "trainer").exists() and not (stopped / "started.json").exists()
    a, b = read_records(straight), read_records(stopped)
    assert _computed(a) == _computed(b)  # weights, samples, rewards, drift: all the same
    evals = [r for r in b if r["kind"] == "eval"]
    assert [r["step"] for r in evals] == [0, 2, 4, 6, 8]
    assert evals[-1]["weight_drift"] > 0
    elapsed = [r["elapsed_seconds"] for r in evals]
    assert elapsed == sorted(elapsed) and elapsed[0] > 0
    cost = [r for r in b if r["kind"] == "cost"]
    assert len(cost) == 1 and cost[0]["seconds_per_step"] > 0
    assert done["seconds"] >= elapsed[-1]


@pytest.mark.slow
def test_a_checkpoint_of_other_settings_or_cut_short_is_not_resumed(tmp_path, capfd):
    run_dir = tmp_path / "runs" / "bot-lr0.0005-s0"
    run_dir.parent.mkdir()
    _stopped_after_a_checkpoint(run_dir)
    spec = _spec(run_dir)
    assert resume_point(run_dir, _settings(spec)) is not None
    # other settings (a changed reward weight): the checkpoint is not this run's
    assert resume_point(run_dir, _settings(_spec(run_dir, w_s=0.25))) is None
    # without its drift reference: start over
    reference = run_dir / "trainer" / "drift_reference.pt"
    reference.rename(reference.with_suffix(".moved"))
    assert resume_point(run_dir, _settings(spec)) is None
    reference.with_suffix(".moved").rename(reference)
    # every checkpoint's optimizer state cut short (a machine lost mid-write): start over, and
    # say why
    for optimizer in (run_dir / "trainer").glob("checkpoint-*/optimizer.pt"):
        data = optimizer.read_bytes()
        optimizer.write_bytes(data[: len(data) // 2])
    assert resume_point(run_dir, _settings(spec)) is None
    capfd.readouterr()
    execute_run(spec)
    assert (
        "its checkpoint is incomplete or unreadable; the run starts over" in capfd.readouterr().err
    )
    done = json.loads((run_dir / "done.json").read_text())
    assert "resumed_at_steps" not in done
    steps = [r["step"] for r in read_records(run_dir) if r["kind"] == "eval"]
    assert steps == [0, 2, 4, 6, 8]


def test_runs_whose_state_a_checkpoint_does_not_hold_never_save_one():
    from botgrpo.harness.runner import _checkpointing
    from botgrpo.tasks import load_task
    from botgrpo.tasks.noise import with_verdict_noise

    chain = load_task("chain")
    spec = _spec(Path("unused") / "run")
    assert _checkpointing(spec, chain) == {
        "save_strategy": "steps",
        "save_steps": 2,
        "save_total_limit": 1,
    }
    assert (
        _checkpointing(_spec(Path("unused") / "run", method="ppo"), chain)["save_strategy"] == "no"
    )
    running = with_verdict_noise(chain, "0.2:random")  # odds from a running count of verdicts
    assert _checkpointing(spec, running)["save_strategy"] == "no"
    assert _checkpointing(spec, with_verdict_noise(chain, "0.2:flip"))["save_strategy"] == "steps"
    assert _checkpointing(_spec(Path("unused") / "run", checkpoint_every=0), chain) == {
        "save_strategy": "no"
    }


def test_checkpoint_every_must_be_a_multiple_of_eval_every():
    with pytest.raises(
        ValueError, match="checkpoint_every \\(3\\) must be a multiple of eval_every"
    ):
        CompareConfig(eval_every=2, checkpoint_every=3)
    with pytest.raises(ValueError, match="checkpoint_every must be >= 0"):
        CompareConfig(checkpoint_every=-2)
    assert CompareConfig(eval_every=5, checkpoint_every=10).checkpoint_every == 10
