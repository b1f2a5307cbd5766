"""The comparison harness end to end at a tiny budget, the warm-start cache, summaries."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from botgrpo.harness.compare import compare
from botgrpo.harness.config import CompareConfig
from botgrpo.harness.results import load_records
from botgrpo.harness.warmstart import WarmStartConfig, _lr_at, warm_start
from botgrpo.tasks import ChainArithmetic
from botgrpo.tiny import TinyModelSpec

SMALL = TinyModelSpec(hidden=32, layers=1, heads=2, kv_heads=1, intermediate=64, max_positions=64)


@pytest.mark.slow
def test_pipeline_at_a_tiny_budget_with_a_user_task(tmp_path, capsys):
    cfg = CompareConfig(
        name="tiny",
        out_dir=str(tmp_path),
        task="tests.user_task:make_task",
        methods=("grpo", "bot"),
        seeds=1,
        steps=2,
        eval_every=1,
        eval_problems=8,
        pass_samples=2,
        pass_problems=4,
        prompts_per_step=2,
        num_generations=2,
        max_completion_length=16,
        warm_start_steps=3,
        warmup_steps=1,
        workers=2,
        progress=False,
    )
    summary = compare(cfg)
    err = capsys.readouterr().err  # progress lines: the steps of the runs to go
    assert "tiny: 0/4 steps (0%)" in err and "2 of 2 runs to go, 2 at a time" in err
    root = tmp_path / "tiny"
    records = load_records(root / "metrics.jsonl")
    evals = [r for r in records if r["kind"] == "eval"]
    assert {(r["method"], r["step"]) for r in evals} == {
        (m, s) for m in ("grpo", "bot") for s in (0, 1, 2)
    }
    assert all("pass@1" in r and "pass@2" in r for r in evals)
    metrics = ("greedy_solved", "greedy_step_acc", "sampled_solved", "sampled_step_acc")
    assert all(all(0.0 <= r[k] <= 1.0 for k in metrics) for r in evals)
    train = [r for r in records if r["kind"] == "train"]
    assert train and all(0.0 <= r["solved"] <= 1.0 for r in train)
    assert any(r["kind"] == "train" and "bot/frac_zero_signal_groups" in r for r in records)
    drift = {(r["method"], r["step"]): r["weight_drift"] for r in evals}
    assert drift[("bot", 0)] == drift[("grpo", 0)] == 0.0  # measured from the step-0 weights
    assert drift[("bot", 2)] > 0  # a group without signal (possible in grpo here) moves nothing
    png = (root / "curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    text = summary.read_text()
    assert "| bot |" in text and "| grpo |" in text and "weight drift" in text
    assert "1 seed this is one observation" in text or "No method learned" in text
    data = json.loads((root / "summary.json").read_text())
    assert set(data["methods"]) == {"grpo", "bot"} and data["metric"] == "sampled_solved"
    for info in data["methods"].values():  # costs beside learning
        cost = info["cost"]
        assert cost["seconds_per_step"] > 0 and cost["peak_rss_bytes"] > 2**20
        assert cost["runs"] == 1
    assert "| method | s / step (training) | peak RSS |" in text
    # a second call resumes: finished runs are skipped, the results are the same
    done = {p: p.stat().st_mtime for p in root.glob("runs/*/done.json")}
    compare(cfg)
    assert {p: p.stat().st_mtime for p in root.glob("runs/*/done.json")} == done
    # ... and the wall time of the command that trained them is kept, this one's added
    again = json.loads((root / "summary.json").read_text())
    assert again["wall_seconds"] >= data["wall_seconds"] > 0
    assert again["wall_seconds"] == pytest.approx(
        data["wall_seconds"] + again["wall_seconds_command"], abs=0.11
    )
    assert f"Wall time {again['wall_seconds'] / 60:.1f} min" in (root / "summary.md").read_text()


def _from_own_checkpoint(tmp_path, **options) -> CompareConfig:
    """A one-step comparison of the user task from a freshly built tiny checkpoint."""
    from botgrpo.tiny import build_tiny_model

    build_tiny_model(tmp_path / "mine", spec=SMALL)
    base = {
        "name": "own",
        "out_dir": str(tmp_path / "out"),
        "task": "tests.user_task:make_task",
        "methods": ("bot",),
        "seeds": 1,
        "steps": 1,
        "eval_every": 1,
        "eval_problems": 4,
        "pass_samples": 0,
        "metric": "greedy_solved",
        "prompts_per_step": 2,
        "num_generations": 2,
        "max_completion_length": 8,
        "warmup_steps": 0,
        "init_model": str(tmp_path / "mine"),
        "workers": 1,
        "progress": False,
    }
    return CompareConfig(**{**base, **options})


@pytest.mark.slow
def test_compare_starts_from_a_given_checkpoint_without_a_warm_start(tmp_path):
    cfg = _from_own_checkpoint(tmp_path)
    compare(cfg)
    assert not (tmp_path / "out" / ".cache").exists()  # no warm start was trained
    root = tmp_path / "out" / "own"
    records = load_records(root / "metrics.jsonl")
    assert [r["step"] for r in records if r["kind"] == "eval"] == [0, 1]
    [done] = root.glob("runs/*/done.json")
    assert json.loads(done.read_text())["settings"]["model_path"] == str(tmp_path / "mine")
    # resuming under the same name with a setting that changes the runs is refused
    with pytest.raises(ValueError, match=r"different settings.*max_completion_length"):
        compare(dataclasses.replace(cfg, max_completion_length=9))
    with pytest.raises(ValueError, match="is not a model folder"):
        compare(dataclasses.replace(cfg, init_model=str(tmp_path / "typo")))


@pytest.mark.slow
def test_learning_rate_sweep_over_several_seeds_on_the_validation_stream(tmp_path):
    cfg = _from_own_checkpoint(
        tmp_path, name="sweep", lr_sweep=(1e-4, 1e-3), sweep_seeds=2, workers=2
    )
    summary = compare(cfg)
    root = tmp_path / "out" / "sweep"
    swept = sorted(p.name for p in (root / "sweep").iterdir())
    assert swept == ["bot-lr0.0001-s0", "bot-lr0.0001-s1", "bot-lr0.001-s0", "bot-lr0.001-s1"]
    streams = {
        json.loads((root / "sweep" / n / "done.json").read_text())["settings"]["stream"]
        for n in swept
    }
    assert streams == {"validation"}  # the reported test problems never choose a rate
    report = json.loads((root / "lr_sweep.json").read_text())
    scores = report["mean_over_run"]["bot"]
    assert set(scores) == {"0.0001", "0.001"}
    assert report["best"]["bot"] == float(max(scores, key=scores.get))
    s = json.loads(summary.with_suffix(".json").read_text())
    assert s["methods"]["bot"]["lr"] == report["best"]["bot"]
    assert s["lr_sweep"]["best"] == report["best"] and s["lr_sweep"]["sweep_seeds"] == 2
    assert "chosen per method on the validation stream" in summary.read_text()
    assert (root / "lr_sweep.png").stat().st_size > 0
    for name in swept:  # each run records the rate it trained at
        settings = json.loads((root / "sweep" / name / "done.json").read_text())["settings"]
        assert f"lr{settings['learning_rate']:g}-" in name


def test_per_method_learning_rates():
    cfg = CompareConfig(methods=("grpo", "bot"), learning_rate=1e-4, method_lrs=("bot=2e-4",))
    assert cfg.learning_rates() == {"grpo": 1e-4, "bot": 2e-4}
    with pytest.raises(ValueError, match="not among the methods"):
        CompareConfig(methods=("grpo",), method_lrs=("bot=2e-4",))
    for bad in ("bot", "bot=fast", "bot=-1"):
        with pytest.raises(ValueError, match="METHOD=LR"):
            CompareConfig(methods=("bot",), method_lrs=(bad,))


def test_warm_start_cache_reuses_and_invalidates(tmp_path):
    task = ChainArithmetic(min_steps=1, max_steps=2)
    cfg = WarmStartConfig(steps=2, batch_size=4, model=SMALL)
    first = warm_start(task, cfg, tmp_path, progress=False)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert warm_start(task, cfg, tmp_path, progress=False) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp  # not retrained
    changed = WarmStartConfig(steps=3, batch_size=4, model=SMALL)
    assert warm_start(task, changed, tmp_path, progress=False) != first
    stopped_early = WarmStartConfig(steps=2, batch_size=4, model=SMALL, schedule_steps=10)
    assert warm_start(task, stopped_early, tmp_path, progress=False) != first
    # schedule_steps equal to steps trains identically, so it hits the same cache entry
    same = WarmStartConfig(steps=2, batch_size=4, model=SMALL, schedule_steps=2)
    assert warm_start(task, same, tmp_path, progress=False) == first
    other_task = ChainArithmetic(min_steps=1, max_steps=3)
    assert warm_start(other_task, cfg, tmp_path, progress=False) != first
    meta = json.loads((first / "warm_start.json").read_text())
    assert meta["config"]["steps"] == 2


def test_warm_start_rebuild_is_bitwise_identical(tmp_path):
    # `botgrpo warm-start --retrain` must give back the shipped checkpoint: the data stream,
    # the demonstrations' slips and the model's initialisation are all seeded
    from safetensors.torch import load_file

    from botgrpo.harness.warmstart import train_warm_start

    task = ChainArithmetic(min_steps=2, max_steps=4)
    cfg = WarmStartConfig(steps=4, batch_size=4, model=SMALL)
    losses = [train_warm_start(task, cfg, tmp_path / d, progress=False) for d in ("a", "b")]
    assert losses[0] == losses[1]
    a, b = (load_file(tmp_path / d / "model.safetensors") for d in ("a", "b"))
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)
    other = dataclasses.replace(cfg, seed=1)
    train_warm_start(task, other, tmp_path / "c", progress=False)
    c = load_file(tmp_path / "c" / "model.safetensors")
    assert not all(a[k].equal(c[k]) for k in a)  # the seed is what fixes it
    # what `botgrpo warm-start --retrain` prints against the shipped checkpoint
    from botgrpo.harness.cli import _weights_match

    assert _weights_match(tmp_path / "a", tmp_path / "b") == "identical weights"
    assert _weights_match(tmp_path / "a", tmp_path / "c").startswith("weights differ")


def test_warm_start_schedule_can_stop_a_longer_run_early():
    # 5% warm-up, then cosine from lr to 0.1 lr over the schedule; stopping at step 425 of 700
    # leaves the rate where the 700-step run has it, not at the end of a 425-step decay
    assert _lr_at(0, 700, 1.0) == pytest.approx(1 / 35)
    assert _lr_at(35, 700, 1.0) == pytest.approx(1.0)
    assert _lr_at(699, 700, 1.0) == pytest.approx(0.1, abs=1e-4)
    assert _lr_at(424, 700, 1.0) > _lr_at(424, 425, 1.0) + 0.3
    with pytest.raises(ValueError, match=r"schedule_steps \(5\) must be 0 or >= steps"):
        WarmStartConfig(steps=10, schedule_steps=5)


def test_config_rejects_bad_options():
    with pytest.raises(ValueError, match="unknown method"):
        CompareConfig(methods=("grpo", "trpo"))
    with pytest.raises(ValueError, match="num_generations must be >= 2"):
        CompareConfig(num_generations=1)
    with pytest.raises(ValueError, match="must be a finite number > 0"):
        CompareConfig(lr_sweep=(1e-3, 0.0))
    with pytest.raises(ValueError, match="warm_start_schedule_steps must be 0 or >="):
        CompareConfig(warm_start_steps=400, warm_start_schedule_steps=300)
    with pytest.raises(ValueError, match="warmup_steps must be >= 0"):
        CompareConfig(warmup_steps=-1)
    with pytest.raises(ValueError, match=r"warmup_steps \(20\) must be < steps \(20\)"):
        CompareConfig(steps=20, warmup_steps=20)


def test_warm_start_never_trains_on_held_out_problems():
    from botgrpo.harness.evaluate import held_out_examples, held_out_prompts
    from botgrpo.harness.warmstart import _batch
    from botgrpo.tiny import build_char_tokenizer

    task = ChainArithmetic(min_steps=1, max_steps=1, max_operand=3, max_total=6, keyed=False)
    test = held_out_examples(task, 5)
    assert len({ex.prompt for ex in test}) == 5  # distinct problems
    held = held_out_prompts(task, 5)
    assert {ex.prompt for ex in test} <= held
    tok = build_char_tokenizer()
    import random

    batch = _batch(task, tok, random.Random(0), 200, held)
    rows = zip(batch["input_ids"], batch["labels"], strict=True)
    prompts = {tok.decode(row[(lab == -100) & (row != tok.pad_token_id)]) for row, lab in rows}
    assert len(prompts) > 5 and all(p.endswith("\n") for p in prompts)
    assert not prompts & held
    with pytest.raises(ValueError, match="distinct problems"):
        held_out_examples(task, 500)


def test_warm_start_key_follows_the_task_data(tmp_path):
    from botgrpo.tasks.jsonl import JsonlTask

    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "1+1\\n", "answer": "2"}\n')
    cfg = WarmStartConfig(steps=1, model=SMALL)
    before = cfg.cache_key(JsonlTask(str(path)))
    path.write_text('{"prompt": "1+2\\n", "answer": "3"}\n')
    assert cfg.cache_key(JsonlTask(str(path))) != before
    assert cfg.cache_key(ChainArithmetic()) == cfg.cache_key(ChainArithmetic())
    assert cfg.cache_key(ChainArithmetic(), frozenset({"x"})) != cfg.cache_key(ChainArithmetic())


def test_the_shipped_warm_start_is_the_default_comparisons_and_is_used(tmp_path):
    from botgrpo.harness.compare import starting_checkpoint, warm_start_config
    from botgrpo.harness.evaluate import held_out_prompts
    from botgrpo.harness.warmstart import packaged_warm_start
    from botgrpo.tasks import load_task

    cfg = CompareConfig(out_dir=str(tmp_path), progress=False)
    task = load_task(cfg.task)
    key = warm_start_config(cfg, task).cache_key(task, held_out_prompts(task, cfg.eval_problems))
    shipped = packaged_warm_start(key)
    assert shipped is not None, (
        "the default task or warm-start options changed: rebuild the shipped checkpoint with "
        "`botgrpo warm-start --retrain --package chain`"
    )
    meta = json.loads((shipped / "warm_start.json").read_text())
    assert meta["metrics"]["greedy_step_acc"] > 0.7  # converged on the mechanics
    assert meta["metrics"]["sampled_solved"] < 0.3  # and imitates the slipping teacher
    # a comparison with the default settings copies it instead of training for 45 minutes
    path = starting_checkpoint(cfg, task)
    assert path == tmp_path / ".cache" / f"warm-{key}"
    assert (path / "model.safetensors").read_bytes() == (shipped / "model.safetensors").read_bytes()


def test_a_converged_warm_start_stops_when_its_held_out_loss_is_flat(tmp_path):
    from botgrpo.harness.warmstart import train_warm_start

    task = ChainArithmetic(min_steps=2, max_steps=3)
    cfg = WarmStartConfig(
        steps=400, batch_size=8, model=SMALL, lr=3e-3, stop="converged", check_every=10,
        patience=2, tolerance=0.05,
    )  # fmt: skip
    run = train_warm_start(task, cfg, tmp_path / "w", progress=False)
    assert run.steps < 400  # stopped before the cap ...
    losses = [c.loss for c in run.checks]
    assert len(losses) >= 3 and losses[-1] < losses[0]  # ... after learning
    steps = [c.step for c in run.checks]
    assert steps[:-1] == list(range(10, 10 * len(steps) - 9, 10))  # a check every 10 steps
    assert steps[-1] == run.steps  # and one at the end of the anneal
    assert all(0 < c.token_acc < 1 for c in run.checks)
    # the stopping rule is part of the cache key only when it is used
    plain = WarmStartConfig(steps=400, model=SMALL)
    assert "stop" not in plain._key_fields() and "stop" in cfg._key_fields()
    with pytest.raises(ValueError, match="stop must be one of"):
        WarmStartConfig(stop="sometimes")


def test_only_ppo_runs_depend_on_the_critic_rate():
    from botgrpo.harness.runner import RunSpec, _trainer_config, run_settings

    def spec(method, critic_lr):
        return RunSpec(method, 0, 4e-4, "m", "r", CompareConfig(critic_learning_rate=critic_lr))

    assert run_settings(spec("ppo", None)) == run_settings(spec("bot", None)) | {"method": "ppo"}
    assert run_settings(spec("bot", 1e-3)) == run_settings(spec("bot", None))  # as stored before
    assert run_settings(spec("ppo", 1e-3))["critic_learning_rate"] == 1e-3
    out = "/tmp/unused"
    assert _trainer_config(spec("ppo", 1e-3), Path(out)).critic_learning_rate == 1e-3
    assert _trainer_config(spec("ppo", None), Path(out)).critic_learning_rate is None
    with pytest.raises(ValueError, match="critic_learning_rate must be a finite number > 0"):
        CompareConfig(critic_learning_rate=0.0)


def test_greedy_false_skips_the_greedy_evaluation_and_changes_nothing_else():
    """evaluate(greedy=False): no greedy metrics, the same sampled ones (greedy decoding draws
    no random numbers); the config refuses a greedy lead metric or nothing to evaluate, and a
    run with the default records no new setting (runs made before the option still match)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botgrpo.harness.evaluate import evaluate, held_out_examples
    from botgrpo.harness.runner import RunSpec, run_settings
    from botgrpo.harness.warmstart import shipped_warm_start

    path = shipped_warm_start("chain")
    model = AutoModelForCausalLM.from_pretrained(path)
    tok = AutoTokenizer.from_pretrained(path)
    task = ChainArithmetic()
    examples = held_out_examples(task, 6)
    results = []
    for greedy in (True, False):
        torch.manual_seed(3)
        results.append(
            evaluate(model, tok, task, examples, max_new_tokens=64, n_samples=2, greedy=greedy)
        )
    both, sampled_only = (r.record() for r in results)
    assert "greedy_solved" in both and "greedy_solved" not in sampled_only
    assert {k: v for k, v in both.items() if not k.startswith("greedy")} == sampled_only
    with pytest.raises(ValueError, match="nothing to evaluate"):
        evaluate(model, tok, task, examples, max_new_tokens=8, greedy=False)
    with pytest.raises(ValueError, match="needs the greedy evaluation"):
        CompareConfig(greedy=False, metric="greedy_solved")
    with pytest.raises(ValueError, match="leaves nothing to evaluate"):
        CompareConfig(greedy=False, pass_samples=0)

    def settings(greedy):
        return run_settings(RunSpec("bot", 0, 1e-4, "m", "r", CompareConfig(greedy=greedy)))

    assert "greedy" not in settings(True) and settings(False)["greedy"] is False


def test_comparison_records_read_the_finished_runs_before_the_merged_file(tmp_path):
    """A resumed comparison's runs/ folders are what it builds on: a run without done.json
    is unfinished and left out; the merged file is read only where no run is kept."""
    from botgrpo.harness.results import comparison_records

    def record(method: str, seed: int) -> str:
        return json.dumps({"kind": "eval", "method": method, "seed": seed, "step": 0}) + "\n"

    with pytest.raises(ValueError, match="keeps no runs' records"):
        comparison_records(tmp_path)
    (tmp_path / "metrics.jsonl").write_text(record("grpo", 0))
    assert [r["method"] for r in comparison_records(tmp_path)] == ["grpo"]
    for name, done in (("bot-s1", False), ("bot-s0", True)):
        run = tmp_path / "runs" / name
        run.mkdir(parents=True)
        (run / "metrics.jsonl").write_text(record("bot", int(name[-1])))
        if done:
            (run / "done.json").write_text("{}")
        else:  # only an unfinished run: the merged file still holds the comparison
            assert [r["method"] for r in comparison_records(tmp_path)] == ["grpo"]
    assert [(r["method"], r["seed"]) for r in comparison_records(tmp_path)] == [("bot", 0)]
