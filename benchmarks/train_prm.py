"""A process reward model trained offline on a task's own step labels, and how good it is.

Math-Shepherd-style automatic labels: the warm start samples completions of training problems
at temperature 1, the task's exact verifier labels each step right or wrong, and a PRM on the
tiny model's architecture (its body initialised from the warm start, a 2-class token head)
learns to predict the label at the end of each step (the ``token_classification`` layout of
:mod:`botgrpo.rewards.prm`, rows built by the same ``ProcessRewardModel.encode`` that scores
them), trained with transformers' ``Trainer``. It is then measured on held-out problems (the
comparison's test stream, never trained on) against the exact verdicts, on completions of

- the warm start (the PRM's own distribution), and
- a policy ``--drift-steps`` RL steps into BoT training (``recipes/chain_tiny_cpu.yaml``,
  trained here once): does the PRM drift as the policy moves away from its data?

Reported per set and threshold: accuracy, precision and recall on "wrong", the false-alarm
rate (right steps judged wrong) and the miss rate (wrong steps judged right), AUROC of
P(wrong); and what scoring one RL step's rollouts costs (seconds, peak memory).

    python benchmarks/train_prm.py --task chain --out runs/prm [--problems 2000 --samples 4]

Writes OUT/prm/ (the PRM, loadable as ``{prm: {model: OUT/prm}}``), OUT/prm-report.json and
OUT/prm-report.md. A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def sample_and_label(model_path: str, task, examples, samples: int, max_new: int, seed: int):
    """``samples`` completions of each example by the model at temperature 1, each with its
    steps' texts and exact labels (1 right, 0 wrong; uncertain steps left out)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botgrpo.harness.evaluate import generate

    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path)
    torch.manual_seed(seed)
    prompts = [ex.prompt for ex in examples]
    texts = generate(
        model, tok, prompts, max_new_tokens=max_new, temperature=1.0, num_return_sequences=samples
    )
    rows = []
    for i, text in enumerate(texts):
        ex = examples[i // samples]
        score = task.score(ex, text)
        steps = [(text[s.start : s.end], s.verdict) for s in score.steps if s.verdict != 0]
        if steps:
            rows.append(
                {
                    "problem": ex.prompt,
                    "steps": [s for s, _ in steps],
                    "labels": [int(v == 1) for _, v in steps],
                }
            )
    return rows


def train_prm(warm: str, rows, out: Path, epochs: int, lr: float, batch: int, seed: int):
    """Fine-tune a 2-class token head (and the body) on ``rows``; saved to ``out``."""
    import torch
    from datasets import Dataset
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        TrainingArguments,
    )

    from botgrpo.rewards.prm import ProcessRewardModel

    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(warm)
    model = AutoModelForTokenClassification.from_pretrained(warm, num_labels=2)
    encoder = ProcessRewardModel(
        {"model": warm, "device": "cpu", "max_length": 100_000}, model=model, tokenizer=tok
    )
    data = []
    for row in rows:
        ids, at = encoder.encode(row["problem"], row["steps"])
        labels = [-100] * len(ids)
        for position, label in zip(at, row["labels"], strict=True):
            labels[position] = label
        data.append({"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels})
    args = TrainingArguments(
        output_dir=str(out / "trainer"),
        per_device_train_batch_size=batch,
        num_train_epochs=epochs,
        learning_rate=lr,
        lr_scheduler_type="cosine",
        warmup_steps=0.05,  # a fraction of the steps
        weight_decay=0.01,
        logging_steps=50,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=seed,
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(data),
        data_collator=DataCollatorForTokenClassification(tok),
    )
    start = time.perf_counter()
    result = trainer.train()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    shutil.rmtree(out / "trainer", ignore_errors=True)
    return {"train_loss": result.training_loss, "train_seconds": time.perf_counter() - start}


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of ``x``, ties given their mean rank."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    _, inverse = np.unique(x, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse]


def auroc(scores: np.ndarray, positives: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for ``positives`` (ties counted half)."""
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = _average_ranks(scores)
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def quality(p_correct: np.ndarray, labels: np.ndarray, threshold: float) -> dict:
    """How the PRM's verdicts at ``threshold`` agree with the exact labels ("wrong" is the
    positive class)."""
    wrong = labels == 0
    said_wrong = p_correct < threshold
    tp = int((said_wrong & wrong).sum())
    return {
        "threshold": threshold,
        "steps": len(labels),
        "wrong_share": float(wrong.mean()),
        "accuracy": float((said_wrong == wrong).mean()),
        "precision_wrong": tp / max(1, int(said_wrong.sum())),
        "recall_wrong": tp / max(1, int(wrong.sum())),
        "false_alarm_rate": float(said_wrong[~wrong].mean()) if (~wrong).any() else float("nan"),
        "miss_rate": float((~said_wrong)[wrong].mean()) if wrong.any() else float("nan"),
        "auroc": auroc(1.0 - p_correct, wrong),
    }


def measure(prm, rows, thresholds) -> list[dict]:
    scores = prm.score([r["problem"] for r in rows], [r["steps"] for r in rows])
    p = np.array([x for s in scores for x in s.p_correct], dtype=float)
    labels = np.array([x for r in rows for x in r["labels"]])
    return [quality(p, labels, t) for t in thresholds]


def drift_policy(out: Path, steps: int) -> str:
    """A policy ``steps`` BoT steps from the warm start (recipes/chain_tiny_cpu.yaml), trained
    once into OUT/drift-policy-STEPS."""
    folder = out / f"drift-policy-{steps}"
    if not (folder / "model.safetensors").is_file():
        root = Path(__file__).resolve().parent.parent
        recipe = str(root / "recipes" / "chain_tiny_cpu.yaml")
        command = [sys.executable, "-m", "botgrpo.cli", "train", "--config", recipe]
        command += ["--max_steps", str(steps), "--output_dir", str(folder)]
        subprocess.run([*command, "--logging_steps", "10"], check=True)
    return str(folder)


def step_cost(prm, rows, n: int = 64) -> dict:
    """Seconds and peak memory of scoring one RL step's rollouts (``n`` completions)."""
    import resource

    batch = rows[:n]
    start = time.perf_counter()
    prm.score([r["problem"] for r in batch], [r["steps"] for r in batch])
    return {
        "completions": len(batch),
        "seconds": time.perf_counter() - start,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def write_markdown(report: dict, path: Path) -> None:
    lines = [
        f"# A PRM trained on {report['task']}'s own step labels",
        "",
        f"Trained on {report['train_rows']} completions ({report['train_steps']} steps, "
        f"{report['train_wrong_share']:.1%} wrong) of {report['problems']} training problems x "
        f"{report['samples']} samples from the warm start; {report['train']['train_seconds']:.0f} s "
        f"of training. Held out: {report['eval_problems']} test problems x {report['samples']}.",
        "",
        "| completions of | threshold | steps | wrong | accuracy | precision (wrong) | "
        "recall (wrong) | false alarms | misses | AUROC |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, rows in report["quality"].items():
        for q in rows:
            lines.append(
                f"| {name} | {q['threshold']:g} | {q['steps']} | {q['wrong_share']:.3f} | "
                f"{q['accuracy']:.3f} | {q['precision_wrong']:.3f} | {q['recall_wrong']:.3f} | "
                f"{q['false_alarm_rate']:.3f} | {q['miss_rate']:.3f} | {q['auroc']:.3f} |"
            )
    cost = report["cost"]
    lines += [
        "",
        f"Scoring one RL step's {cost['completions']} completions: {cost['seconds']:.2f} s "
        f"(peak RSS of this process {cost['peak_rss_gib']:.2f} GiB).",
    ]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="chain")
    parser.add_argument("--out", type=Path, default=Path("runs/prm-bench"))
    parser.add_argument("--problems", type=int, default=2000, help="training problems")
    parser.add_argument("--samples", type=int, default=4, help="completions per problem")
    parser.add_argument("--eval-problems", type=int, default=300)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--drift-steps", type=int, default=40, help="0: no drifted policy")
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.25, 0.5])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "2")

    from botgrpo.harness.compare import starting_checkpoint
    from botgrpo.harness.config import CompareConfig, resolve_task_defaults
    from botgrpo.harness.evaluate import held_out_examples, held_out_prompts
    from botgrpo.rewards.prm import ProcessRewardModel
    from botgrpo.tasks import load_task
    from botgrpo.tasks.data import sample_examples

    args.out.mkdir(parents=True, exist_ok=True)
    task = load_task(args.task)
    cfg = CompareConfig(task=args.task, out_dir=str(args.out), progress=False)
    resolve_task_defaults(cfg, task)
    warm = str(starting_checkpoint(cfg, task))
    held = held_out_prompts(task, cfg.eval_problems)
    train_examples = sample_examples(task, args.problems, "prm-train", exclude=held)
    max_new = cfg.max_completion_length or 192
    print(f"sampling {args.problems} x {args.samples} training completions", flush=True)
    rows = sample_and_label(warm, task, train_examples, args.samples, max_new, args.seed)
    prm_dir = args.out / "prm"
    print(f"training the PRM on {len(rows)} completions", flush=True)
    trained = train_prm(warm, rows, prm_dir, args.epochs, args.lr, args.batch_size, args.seed)
    prm = ProcessRewardModel({"model": str(prm_dir), "device": "cpu", "batch_size": 64})
    test = held_out_examples(task, args.eval_problems, "test")
    sets = {"warm start": warm}
    if args.drift_steps:
        sets[f"policy after {args.drift_steps} BoT steps"] = drift_policy(
            args.out, args.drift_steps
        )
    report = {
        "task": args.task,
        "problems": args.problems,
        "samples": args.samples,
        "eval_problems": args.eval_problems,
        "train_rows": len(rows),
        "train_steps": sum(len(r["labels"]) for r in rows),
        "train_wrong_share": float(
            1 - np.mean([x for r in rows for x in r["labels"]]) if rows else 0.0
        ),
        "train": trained,
        "quality": {},
    }
    for name, path in sets.items():
        held_rows = sample_and_label(path, task, test, args.samples, max_new, args.seed + 1)
        report["quality"][name] = measure(prm, held_rows, args.thresholds)
        if name == "warm start":
            report["cost"] = step_cost(prm, held_rows)
    (args.out / "prm-report.json").write_text(json.dumps(report, indent=2))
    write_markdown(report, args.out / "prm-report.md")
    print((args.out / "prm-report.md").read_text())


if __name__ == "__main__":
    main()
