"""Seconds per step and peak memory of BoTGRPOTrainer's presets on the same work, BoT beside
the alternatives that use the same token rewards (otb, reinforce_pp, ppo with its critic).

Same model, data, seed, batch and token reward function for every preset; each preset keeps its
own knobs (loss, KL, critic). Each (preset, round) trains in a fresh process, so peak memory is
per preset (max RSS on a CPU, ``torch.cuda.max_memory_allocated`` on a GPU). Rounds rotate the
order of the presets, and each round's preset / bot ratio of median step times is one paired
observation: the ratio reported is the median of those, with their range, so a change of load
between rounds moves both sides of a pair alike.

    python benchmarks/bench_method_costs.py [--presets bot grpo otb reinforce_pp ppo]
        [--steps 12] [--rounds 4] [--batch 64] [--completion-length 64]
    python benchmarks/bench_method_costs.py --task chain --batch 64 --completion-length 192
    python benchmarks/bench_method_costs.py --device cuda --shape qwen2.5-0.5b --rounds 1

``--task chain`` trains the shipped warm start of the default task on its own token reward, as
a comparison's runs do (the tiny model otherwise, on the arithmetic toy reward).
``--shape qwen2.5-0.5b`` is the randomly initialised model of Qwen2.5-0.5B's shape that
benchmarks/bench_trainer_overhead.py builds (nothing is downloaded); ``--layers`` and
``--hidden`` shrink it (a CPU run at the real vocabulary). The first 3 steps of each
run are warm-up and not counted. A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trainer_overhead import WARMUP, _peak_mb, build_qwen_shape, step_timer

COMMON = {
    "activation_checkpointing": False,
    "num_generations": 8,
    "learning_rate": 4e-4,
    "logging_steps": 1,
    "save_strategy": "no",
    "report_to": "none",
    "disable_tqdm": True,
    "seed": 0,
}


def worker(
    preset: str, model_dir: str, steps: int, out: str, options: dict, task_name: str | None
) -> None:
    """Train one preset for ``steps`` steps; write its step times and peak memory to ``out``."""
    from transformers import AutoTokenizer

    from botgrpo.tasks.arithmetic import make_arithmetic_dataset, make_arithmetic_token_reward
    from botgrpo.trl import BoTGRPOConfig, BoTGRPOTrainer

    warnings.simplefilter("ignore")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if task_name:  # a built-in task: its shipped warm start, data and token reward
        from botgrpo.tasks import load_task
        from botgrpo.tasks.data import sample_examples, task_dataset
        from botgrpo.tasks.reward import task_reward

        task = load_task(task_name)
        reward = task_reward(task, tokenizer)
        dataset = task_dataset(sample_examples(task, 512, "train-0"))
    else:
        reward = make_arithmetic_token_reward(tokenizer)
        dataset = make_arithmetic_dataset(512)
    times: list[float] = []

    device = "cpu" if options["use_cpu"] else "cuda"
    config = BoTGRPOConfig(
        preset=preset, **COMMON, **options, output_dir=f"{out}.run", max_steps=steps
    )
    trainer = BoTGRPOTrainer(
        model=model_dir,
        reward_funcs=[reward],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[step_timer(times)],
    )
    trainer.train()
    Path(out).write_text(json.dumps({"times": times[WARMUP:], "peak_mb": _peak_mb(device)}))


def _rounds(args: argparse.Namespace, model_dir: str, tmp: str) -> dict[str, list[dict]]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.setdefault("OMP_NUM_THREADS", "1")
    results: dict[str, list[dict]] = {p: [] for p in args.presets}
    n = len(args.presets)
    for r in range(args.rounds):
        order = [args.presets[(i + r) % n] for i in range(n)]  # rotate: no preset always first
        for preset in order:
            out = str(Path(tmp) / f"{preset}-{r}.json")
            cmd = [sys.executable, __file__, "--worker", preset, "--model", model_dir]
            cmd += ["--steps", str(args.steps), "--out", out, "--device", args.device]
            cmd += ["--batch", str(args.batch), "--completion-length", str(args.completion_length)]
            cmd += ["--task", args.task] if args.task else []
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"{preset} run {r} failed:\n{done.stderr[-4000:]}")
            results[preset].append(json.loads(Path(out).read_text()))
            print(f"round {r + 1}/{args.rounds}: {preset} done", file=sys.stderr)
    return results


def report(args: argparse.Namespace, results: dict[str, list[dict]]) -> dict:
    """Per preset: median step, peak memory, and the paired ratios to bot."""
    base = results.get("bot")
    rows = {}
    for preset, runs in results.items():
        row = {
            "median_step_s": statistics.median(t for run in runs for t in run["times"]),
            "peak_mb": max(run["peak_mb"] for run in runs),
        }
        if base is not None:
            ratios = [
                statistics.median(run["times"]) / statistics.median(b["times"])
                for run, b in zip(runs, base, strict=True)
            ]
            row |= {
                "step_ratio": statistics.median(ratios),
                "step_ratio_range": [min(ratios), max(ratios)],
            }
            row["peak_ratio"] = row["peak_mb"] / max(b["peak_mb"] for b in base)
        rows[preset] = row
    memory = "peak GPU" if args.device == "cuda" else "peak RSS"
    shape = f"warm:{args.task}" if args.task else args.shape
    shape += "".join(
        f", {v} {k}" for k, v in (("layers", args.layers), ("hidden", args.hidden)) if v
    )
    print(
        f"\n{shape} on {args.device}: {args.steps} steps x {args.rounds} rounds per preset, "
        f"{args.batch} completions of up to {args.completion_length} tokens per step, "
        f"{WARMUP} warm-up steps dropped\n"
    )
    print(
        f"{'preset':<14} {'median step':>12} {memory:>10} {'step / bot (range)':>26} {'memory / bot':>13}"
    )
    for preset, row in rows.items():
        ratio = ""
        if "step_ratio" in row:
            low, high = row["step_ratio_range"]
            ratio = f"{row['step_ratio']:.3f} ({low:.3f}-{high:.3f})"
        peak = f"{row['peak_ratio']:.3f}" if "peak_ratio" in row else ""
        print(
            f"{preset:<14} {row['median_step_s'] * 1e3:>10.1f}ms {row['peak_mb']:>8.0f}MB "
            f"{ratio:>26} {peak:>13}"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--presets", nargs="+", default=["bot", "grpo", "otb", "reinforce_pp", "ppo"]
    )
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--shape", choices=["tiny", "qwen2.5-0.5b"], default="tiny")
    parser.add_argument(
        "--task", help="a built-in task (e.g. chain): train its shipped warm start on its reward"
    )
    parser.add_argument("--layers", type=int, help="fewer layers of --shape qwen2.5-0.5b")
    parser.add_argument("--hidden", type=int, help="a narrower --shape qwen2.5-0.5b")
    parser.add_argument("--batch", type=int, default=64, help="completions per step (K = 8)")
    parser.add_argument("--completion-length", type=int, default=64)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    options = {
        "use_cpu": args.device == "cpu",
        "bf16": args.device == "cuda",
        "per_device_train_batch_size": args.batch,
        "max_completion_length": args.completion_length,
    }
    if args.worker:
        worker(args.worker, args.model, args.steps, args.out, options, args.task)
        return
    from botgrpo.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        if args.task:
            from botgrpo.harness.warmstart import shipped_warm_start

            model_dir = str(shipped_warm_start(args.task))
        elif args.shape == "tiny":
            model_dir = str(build_tiny_model(Path(tmp) / "tiny"))
        else:
            model_dir = str(build_qwen_shape(Path(tmp) / "qwen", args.layers, args.hidden))
        rows = report(args, _rounds(args, model_dir, tmp))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
