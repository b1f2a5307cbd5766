"""Overhead of BoTGRPOTrainer(preset="bot") over trl.GRPOTrainer on the same work.

Same tiny model, data, seed, batch and TRL knobs (those of the bot preset: loss_type "grpo",
beta 0.04, epsilon 0.2); both read the same token reward function, which GRPO sees reduced to
its outcome scalar, so the difference is the trainer's own cost: token tensors, the [B, T]
estimator, the gathers and the extra metrics. Each (trainer, round) runs in a fresh process, so
peak memory (max RSS) is per trainer; rounds alternate the order to spread drift.

    python benchmarks/bench_trainer_overhead.py [--steps 20] [--rounds 2]

Prints the median step time (the first 3 steps of each run are warm-up and not counted), the
peak RSS and the RSS growth during training of each trainer, and the BoT / GRPO ratios
(targets: step time <= 1.03, peak memory <= 1.02). A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

WARMUP = 3
COMMON = {
    "use_cpu": True,
    "bf16": False,
    "gradient_checkpointing": False,
    "per_device_train_batch_size": 32,
    "num_generations": 8,
    "max_completion_length": 16,
    "learning_rate": 1e-3,
    "logging_steps": 1,
    "save_strategy": "no",
    "report_to": "none",
    "disable_tqdm": True,
    "seed": 0,
    "loss_type": "grpo",
    "beta": 0.04,
    "epsilon": 0.2,
}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(kind: str, model_dir: str, steps: int, out: str) -> None:
    """Train one trainer for ``steps`` steps; write step times and memory to ``out``."""
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from botgrpo.tasks.arithmetic import make_arithmetic_dataset, make_arithmetic_token_reward
    from botgrpo.trl import BoTGRPOConfig, BoTGRPOTrainer

    warnings.simplefilter("ignore")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    token_reward = make_arithmetic_token_reward(tokenizer)

    def outcome_of_token_reward(**kwargs):
        return [r.outcome_reward(3.0) for r in token_reward(**kwargs)]

    outcome_of_token_reward.__name__ = "arithmetic_token_reward"
    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.start)

    added = _time_added_work() if kind == "bot" else []
    options = {**COMMON, "output_dir": f"{out}.run", "max_steps": steps}
    if kind == "grpo":
        trainer_cls, config, reward = GRPOTrainer, GRPOConfig(**options), outcome_of_token_reward
    else:
        trainer_cls, config, reward = (
            BoTGRPOTrainer,
            BoTGRPOConfig(preset="bot", **options),
            token_reward,
        )
    trainer = trainer_cls(
        model=model_dir,
        reward_funcs=[reward],
        args=config,
        train_dataset=make_arithmetic_dataset(512),
        processing_class=tokenizer,
        callbacks=[Timer()],
    )
    before = _rss_mb()
    trainer.train()
    Path(out).write_text(
        json.dumps(
            {
                "times": times[WARMUP:],
                "added_s": sum(added) / max(steps, 1),
                "peak_mb": _rss_mb(),
                "growth_mb": _rss_mb() - before,
            }
        )
    )


def _time_added_work() -> list[float]:
    """Wrap the trainer's own steps (entry split, token batch, estimator, metrics) with timers."""
    import botgrpo.trl.reward_adapter as adapter
    import botgrpo.trl.trainer as trainer

    spent: list[float] = []

    def timed(fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent.append(time.perf_counter() - start)

        return wrapper

    adapter.split_entries = timed(adapter.split_entries)
    for name in ("build_token_batch", "token_advantages", "gathered_step_metrics"):
        setattr(trainer, name, timed(getattr(trainer, name)))
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--worker", choices=["grpo", "bot"], help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.model, args.steps, args.out)
        return

    from botgrpo.tiny import build_tiny_model

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.setdefault("OMP_NUM_THREADS", "1")
    results: dict[str, list[dict]] = {"grpo": [], "bot": []}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = str(build_tiny_model(Path(tmp) / "tiny"))
        for r in range(args.rounds):
            order = ("grpo", "bot") if r % 2 == 0 else ("bot", "grpo")
            for kind in order:
                out = str(Path(tmp) / f"{kind}-{r}.json")
                cmd = [sys.executable, __file__, "--worker", kind, "--model", model_dir]
                cmd += ["--steps", str(args.steps), "--out", out]
                subprocess.run(cmd, check=True, env=env, capture_output=True)
                results[kind].append(json.loads(Path(out).read_text()))

    summary = {}
    for kind, runs in results.items():
        summary[kind] = {
            "median_step_s": statistics.median(t for run in runs for t in run["times"]),
            "peak_mb": statistics.median(run["peak_mb"] for run in runs),
            "growth_mb": statistics.median(run["growth_mb"] for run in runs),
            "added_s": statistics.median(run["added_s"] for run in runs),
        }
    g, b = summary["grpo"], summary["bot"]
    print(
        f"{args.steps} steps x {args.rounds} rounds per trainer, {WARMUP} warm-up steps dropped\n"
    )
    print(f"{'trainer':<28} {'median step':>12} {'peak RSS':>10} {'RSS growth':>11}")
    for name, s in (("trl.GRPOTrainer", g), ('BoTGRPOTrainer(preset="bot")', b)):
        print(
            f"{name:<28} {s['median_step_s'] * 1e3:>10.1f}ms {s['peak_mb']:>8.0f}MB {s['growth_mb']:>9.1f}MB"
        )
    share = b["added_s"] / b["median_step_s"]
    print("\nBoT's own work (entry split, token tensors, estimator, metrics): ", end="")
    print(f"{b['added_s'] * 1e3:.2f} ms per step = {share:.1%} of a BoT step")
    print(
        f"step-time ratio   BoT / GRPO = {b['median_step_s'] / g['median_step_s']:.3f}  (target <= 1.03)"
    )
    print(f"peak-memory ratio BoT / GRPO = {b['peak_mb'] / g['peak_mb']:.3f}  (target <= 1.02)")


if __name__ == "__main__":
    main()
