"""Overhead of BoTGRPOTrainer(preset="bot") over trl.GRPOTrainer on the same work.

Same model, data, seed, batch and TRL knobs (those of the bot preset: loss_type "grpo",
beta 0.04, epsilon 0.2); both read the same token reward function, which GRPO sees reduced to
its outcome scalar, so the difference is the trainer's own cost: token tensors, the [B, T]
estimator, the gathers and the extra metrics. Generation is TRL's own (transformers'
``generate``, no vLLM). Each (trainer, round) runs in a fresh process, so peak memory is per
trainer (max RSS on a CPU, ``torch.cuda.max_memory_allocated`` on a GPU). Rounds interleave the
trainers (GRPO, BoT, then BoT, GRPO, ...), and each round's BoT / GRPO ratio of median step
times is one paired observation: the ratio reported is the median of those, with their range,
so a load change between rounds moves both sides of a pair alike.

    python benchmarks/bench_trainer_overhead.py [--steps 20] [--rounds 6]
    python benchmarks/bench_trainer_overhead.py --device cuda --shape qwen2.5-0.5b \
        --steps 8 --rounds 1 --completion-length 128

``--shape qwen2.5-0.5b`` is a randomly initialised Qwen2 model of Qwen2.5-0.5B's shape (24
layers, width 896, 14 heads / 2 KV heads, MLP 4864, vocabulary 151936, tied embeddings) built
from a config: nothing is downloaded. Its tokenizer is the tiny character tokenizer padded
with one-character tokens to the full vocabulary, so every sampled id decodes to one character.
``--layers`` and ``--hidden`` shrink it for a dry run on a CPU.

Prints the median step time (the first 3 steps of each run are warm-up and not counted), the
peak memory and its growth during training of each trainer, and the BoT / GRPO ratios
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
QWEN25_05B = {
    "vocab_size": 151936,
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}
"""Qwen2.5-0.5B's architecture (its published config.json), without its weights."""
COMMON = {
    "activation_checkpointing": False,
    "num_generations": 8,
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


def _peak_mb(device: str) -> float:
    if device == "cuda":
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_qwen_shape(path: Path, layers: int | None = None, hidden: int | None = None) -> Path:
    """A random Qwen2 model of Qwen2.5-0.5B's shape (bf16) and a full-vocabulary tokenizer."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    from botgrpo.tiny import CHARACTERS, build_char_tokenizer

    shape = dict(QWEN25_05B)
    if layers is not None:
        shape["num_hidden_layers"] = layers
    if hidden is not None:  # keep the head size 64 of the real model
        shape |= {"hidden_size": hidden, "num_attention_heads": max(1, hidden // 64)}
        shape |= {"num_key_value_heads": 1, "intermediate_size": 4 * hidden}
    fillers = "".join(chr(0x10000 + i) for i in range(shape["vocab_size"] - 4 - len(CHARACTERS)))
    tokenizer = build_char_tokenizer(CHARACTERS + fillers)
    assert len(tokenizer) == shape["vocab_size"]
    ids = {k: getattr(tokenizer, k) for k in ("pad_token_id", "bos_token_id", "eos_token_id")}
    config = Qwen2Config(**shape, **ids, dtype="bfloat16")
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(**ids)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def step_timer(times: list[float]):
    """A trainer callback appending each optimizer step's wall time to ``times``."""
    from transformers import TrainerCallback

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.start)

    return Timer()


def worker(kind: str, model_dir: str, steps: int, out: str, options: dict) -> None:
    """Train one trainer for ``steps`` steps; write step times and memory to ``out``."""
    from transformers import AutoTokenizer
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

    added = _time_added_work() if kind == "bot" else []
    device = "cpu" if options["use_cpu"] else "cuda"
    options = {**COMMON, **options, "output_dir": f"{out}.run", "max_steps": steps}
    if kind == "grpo":
        from dataclasses import fields

        if "activation_checkpointing" not in {f.name for f in fields(GRPOConfig)}:
            # older transformers name it gradient_checkpointing (BoTGRPOConfig takes both)
            options["gradient_checkpointing"] = options.pop("activation_checkpointing")
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
        callbacks=[step_timer(times)],
    )
    before = _peak_mb(device)
    trainer.train()
    Path(out).write_text(
        json.dumps(
            {
                "times": times[WARMUP:],
                "added_s": sum(added) / max(steps, 1),
                "peak_mb": _peak_mb(device),
                "growth_mb": _peak_mb(device) - before,
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
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--shape", choices=["tiny", "qwen2.5-0.5b"], default="tiny")
    parser.add_argument("--layers", type=int, help="fewer layers (a dry run of --shape qwen)")
    parser.add_argument("--hidden", type=int, help="a narrower model (a dry run of --shape qwen)")
    parser.add_argument("--batch", type=int, default=32, help="completions per step (K = 8)")
    parser.add_argument("--completion-length", type=int, default=16)
    parser.add_argument("--worker", choices=["grpo", "bot"], help=argparse.SUPPRESS)
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
        worker(args.worker, args.model, args.steps, args.out, options)
        return

    from botgrpo.tiny import build_tiny_model

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.setdefault("OMP_NUM_THREADS", "1")
    results: dict[str, list[dict]] = {"grpo": [], "bot": []}
    with tempfile.TemporaryDirectory() as tmp:
        if args.shape == "tiny":
            model_dir = str(build_tiny_model(Path(tmp) / "tiny"))
        else:
            model_dir = str(build_qwen_shape(Path(tmp) / "qwen", args.layers, args.hidden))
        for r in range(args.rounds):
            order = ("grpo", "bot") if r % 2 == 0 else ("bot", "grpo")
            for kind in order:
                out = str(Path(tmp) / f"{kind}-{r}.json")
                cmd = [sys.executable, __file__, "--worker", kind, "--model", model_dir]
                cmd += ["--steps", str(args.steps), "--out", out, "--device", args.device]
                cmd += ["--batch", str(args.batch)]
                cmd += ["--completion-length", str(args.completion_length)]
                done = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if done.returncode:
                    sys.exit(f"{kind} run {r} failed:\n{done.stderr[-4000:]}")
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
    memory = "peak GPU" if args.device == "cuda" else "peak RSS"
    print(
        f"{args.shape} on {args.device}: {args.steps} steps x {args.rounds} rounds per trainer, "
        f"{args.batch} completions of {args.completion_length} tokens per step, "
        f"{WARMUP} warm-up steps dropped\n"
    )
    print(f"{'trainer':<28} {'median step':>12} {memory:>10} {'growth':>11}")
    for name, s in (("trl.GRPOTrainer", g), ('BoTGRPOTrainer(preset="bot")', b)):
        print(
            f"{name:<28} {s['median_step_s'] * 1e3:>10.1f}ms {s['peak_mb']:>8.0f}MB {s['growth_mb']:>9.1f}MB"
        )
    share = b["added_s"] / b["median_step_s"]
    print("\nBoT's own work (entry split, token tensors, estimator, metrics): ", end="")
    print(f"{b['added_s'] * 1e3:.2f} ms per step = {share:.1%} of a BoT step")
    ratios = [
        statistics.median(bot["times"]) / statistics.median(grpo["times"])
        for bot, grpo in zip(results["bot"], results["grpo"], strict=True)
    ]
    print(
        f"step-time ratio   BoT / GRPO = {statistics.median(ratios):.3f}  (median of "
        f"{len(ratios)} paired rounds; range {min(ratios):.3f}-{max(ratios):.3f}; target <= 1.03)"
    )
    print(f"peak-memory ratio BoT / GRPO = {b['peak_mb'] / g['peak_mb']:.3f}  (target <= 1.02)")


if __name__ == "__main__":
    main()
