"""Reward time against RL step time on a task: does the reward pipeline dominate the step?

Runs BoTGRPOTrainer as the comparison harness configures it (8 prompts x 8 rollouts at
temperature 1, the task's completion length, the bot preset, one CPU thread for the policy) on
``--task`` (react, python, chain, ...) from ``--model`` (default: the task's shipped warm start,
``warm:TASK``), and times every step and the reward calls inside it. The reward's own stage
times (``time/extract_s``, ``time/check_s``, ``time/score_s``: the code tasks log them) and the
share of distinct completions per step come from the trainer's logs. The first 2 steps are
warm-up (the worker pools start). Target (issue 20): reward time / step time <= 0.3.

    python benchmarks/bench_code_step.py --task react [--model DIR] [--steps 10]

A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

WARMUP = 2


def run(task_spec: str, model_dir: str, steps: int, out_dir: str) -> dict[str, list[float]]:
    """Per-step seconds of the whole step, of the reward calls, and the logged stage times."""
    import torch
    from transformers import AutoTokenizer, TrainerCallback

    from botgrpo.harness.config import CompareConfig, resolve_task_defaults
    from botgrpo.harness.runner import RunSpec, _quiet_worker, _trainer_config
    from botgrpo.tasks import load_task
    from botgrpo.tasks.data import sample_examples, task_dataset
    from botgrpo.tasks.reward import task_reward
    from botgrpo.trl import BoTGRPOTrainer

    _quiet_worker()
    torch.set_num_threads(1)
    task = load_task(task_spec)
    cfg = resolve_task_defaults(
        CompareConfig(task=task_spec, steps=steps, warmup_steps=0, learning_rate=1e-5), task
    )
    spec = RunSpec("bot", 0, cfg.learning_rate, model_dir, out_dir, cfg)
    tok = AutoTokenizer.from_pretrained(model_dir)
    inner = task_reward(task, tok)
    out: dict[str, list[float]] = {"step": [], "reward": []}
    pending = {"reward": 0.0}

    def timed_reward(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            pending["reward"] += time.perf_counter() - start

    timed_reward.__name__ = inner.__name__
    timed_reward.local_bound = getattr(inner, "local_bound", None)  # type: ignore[attr-defined]

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.start = time.perf_counter()
            pending["reward"] = 0.0

        def on_step_end(self, args, state, control, **kw):
            out["step"].append(time.perf_counter() - self.start)
            out["reward"].append(pending["reward"])

        def on_log(self, args, state, control, logs=None, **kw):
            for key, value in (logs or {}).items():
                if key.startswith(("time/", "reward/distinct", "task/")):
                    out.setdefault(key, []).append(float(value))

    examples = sample_examples(task, steps * cfg.prompts_per_step, "bench-code-step")
    trainer = BoTGRPOTrainer(
        model=model_dir,
        reward_funcs=[timed_reward],
        args=_trainer_config(spec, Path(out_dir)),
        train_dataset=task_dataset(examples),
        processing_class=tok,
        callbacks=[Timer()],
    )
    trainer.train()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="react")
    parser.add_argument("--model", default="", help="checkpoint folder (default: warm:TASK)")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    model = args.model
    if not model:
        from botgrpo.harness.warmstart import shipped_warm_start

        model = str(shipped_warm_start(args.task.partition(":")[0]))
    with tempfile.TemporaryDirectory() as tmp:
        times = run(args.task, model, args.steps, tmp)
    step = statistics.median(times["step"][WARMUP:])
    reward = statistics.median(times["reward"][WARMUP:])
    print(f"task {args.task}, model {model}: {len(times['step']) - WARMUP} steps timed")
    print(f"median step {step:.2f} s, of which reward {reward:.2f} s: ratio {reward / step:.2f}")
    for key in sorted(k for k in times if k not in ("step", "reward")):
        values = times[key][WARMUP:] or times[key]
        print(f"  {key}: median {statistics.median(values):.3f}")


if __name__ == "__main__":
    main()
