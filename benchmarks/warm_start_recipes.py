"""Warm-start recipes side by side: steps, wall time and the same held-out metrics.

Trains (or reuses from the cache, or the package) one warm start per recipe for ``--task``,
each exactly as ``botgrpo warm-start`` would with that recipe's options, and evaluates every
checkpoint on the same held-out problems: greedy solve rate and step accuracy, and
``--samples`` completions per problem sampled at temperature 1 (sampled solve rate and step
accuracy). Each recipe is then held against the first (the reference) paired by problem: the
difference of the per-problem sampled solve rate and step accuracy with a bootstrap 95%
interval over problems.

Recipes (``--recipes``, any of):

- ``fixed``: ``--warm-start-stop steps``, 3000 steps of cosine schedule (chain's shipped one);
- ``converged-v1``: the first "converged" rule: the check loss alone flat, a tenth's anneal,
  padded batches (the shipped react and python warm starts);
- ``converged``: the rule a task of your own gets by default: check loss and token accuracy
  both flat for 3 checks and a fifth of the steps run, a tenth's anneal, packed batches.

    python benchmarks/warm_start_recipes.py --task chain --out runs/warm-recipes \\
        [--recipes fixed converged-v1 converged] [--samples 8] [--problems 500]

A recipe's wall time is the one its warm_start.json recorded when it was trained (so a cached
or shipped one reports the machine and load it had then): time fresh runs on an idle machine.
Writes OUT/warm-start-recipes.md and .json. A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

#: Each recipe's options, as `botgrpo warm-start` flags would set them (None = the task's).
RECIPES: dict[str, dict] = {
    "fixed": {"warm_start_stop": "steps", "warm_start_steps": 3000},
    "converged-v1": {
        "warm_start_stop": "converged",
        "warm_start_patience": 0.0,
        "warm_start_watch_accuracy": False,
        "warm_start_packed": False,
    },
    "converged": {"warm_start_stop": "converged"},
}


def _defaults_of_a_task_of_your_own() -> dict:
    """The converged recipe's values for a task that sets none (``TASK_DEFAULTS``)."""
    from botgrpo.harness.config import TASK_DEFAULTS

    names = ("warm_start_patience", "warm_start_watch_accuracy", "warm_start_packed")
    return {name: TASK_DEFAULTS[name][1] for name in names}


def recipe_config(task_spec: str, recipe: str, out: Path, problems: int):
    from botgrpo.harness.config import CompareConfig

    options = dict(RECIPES[recipe])
    if recipe == "converged":
        options.update(_defaults_of_a_task_of_your_own())
    return CompareConfig(
        task=task_spec,
        out_dir=str(out),
        eval_problems=problems,
        pass_problems=problems,
        progress=False,
        **options,
    )


def train(task_spec: str, recipe: str, out: Path, problems: int) -> tuple[Path, dict]:
    """The recipe's checkpoint (trained when neither cached nor shipped) and its record."""
    from botgrpo.harness.compare import check_inputs, starting_checkpoint

    cfg = recipe_config(task_spec, recipe, out, problems)
    task = check_inputs(cfg)
    path = starting_checkpoint(cfg, task)
    return path, json.loads((path / "warm_start.json").read_text())


def per_problem(path: Path, task, examples, samples: int, max_new_tokens: int) -> dict:
    """Per-problem greedy and sampled outcomes of a checkpoint (the same draws for every
    checkpoint: the generator is seeded alike)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botgrpo.harness.evaluate import generate
    from botgrpo.tasks.base import score_all

    model = AutoModelForCausalLM.from_pretrained(path)
    tok = AutoTokenizer.from_pretrained(path)
    prompts = [ex.prompt for ex in examples]
    torch.manual_seed(0)
    greedy = score_all(task, examples, generate(model, tok, prompts, max_new_tokens=max_new_tokens))
    sampled_text = generate(
        model,
        tok,
        prompts,
        max_new_tokens=max_new_tokens,
        temperature=1.0,
        num_return_sequences=samples,
    )
    sampled = score_all(task, [ex for ex in examples for _ in range(samples)], sampled_text)
    out: dict[str, list[float]] = {"greedy_solved": [], "sampled_solved": []}
    out["greedy_steps"], out["sampled_steps"] = [], []
    for i, g in enumerate(greedy):
        group = sampled[i * samples : (i + 1) * samples]
        out["greedy_solved"].append(float(g.solved))
        out["sampled_solved"].append(sum(s.solved for s in group) / samples)
        out["greedy_steps"].append(_right_and_all([g]))
        out["sampled_steps"].append(_right_and_all(group))
    return out


def _right_and_all(scores) -> tuple[int, int]:
    verdicts = [v.verdict for s in scores for v in s.steps]
    return sum(v == 1 for v in verdicts), len(verdicts)


def _step_acc(pairs) -> float:
    right, total = np.sum(np.asarray(pairs), axis=0)
    return float(right / max(1, total))


def metrics(outcomes: dict) -> dict[str, float]:
    return {
        "greedy_solved": float(np.mean(outcomes["greedy_solved"])),
        "greedy_step_acc": _step_acc(outcomes["greedy_steps"]),
        "sampled_solved": float(np.mean(outcomes["sampled_solved"])),
        "sampled_step_acc": _step_acc(outcomes["sampled_steps"]),
    }


def paired(a: dict, b: dict, n_boot: int = 5000) -> dict[str, list[float]]:
    """a - b per problem with a bootstrap 95% interval over problems: the sampled solve rate,
    and the sampled step accuracy (a ratio of sums, so resampled as one)."""
    rng = np.random.default_rng(0)
    n = len(a["sampled_solved"])
    idx = rng.integers(0, n, size=(n_boot, n))
    solved = np.asarray(a["sampled_solved"]) - np.asarray(b["sampled_solved"])
    boot = solved[idx].mean(axis=1)
    out = {"sampled_solved": [float(solved.mean()), *np.quantile(boot, [0.025, 0.975]).tolist()]}
    sa, sb = np.asarray(a["sampled_steps"], float), np.asarray(b["sampled_steps"], float)
    acc = sa[idx].sum(1)[:, 0] / sa[idx].sum(1)[:, 1] - sb[idx].sum(1)[:, 0] / sb[idx].sum(1)[:, 1]
    point = _step_acc(a["sampled_steps"]) - _step_acc(b["sampled_steps"])
    out["sampled_step_acc"] = [point, *np.quantile(acc, [0.025, 0.975]).tolist()]
    return out


def render(rows: list[dict], reference: str, samples: int, problems: int) -> str:
    head = (
        "| recipe | steps | minutes | final train loss | greedy solved | greedy step acc | "
        "sampled solved | sampled step acc | sampled solved - ref (95% CI) | "
        "sampled step acc - ref (95% CI) |"
    )
    lines = [
        f"Held-out: {problems} problems, greedy and {samples} samples each at temperature 1; "
        f"differences paired by problem against `{reference}`.",
        "",
        head,
        "|" + "---|" * 10,
    ]
    for r in rows:
        m, d = r["metrics"], r.get("vs_reference")
        diffs = ["-", "-"]
        if d is not None:
            diffs = [f"{v[0]:+.3f} ({v[1]:+.3f} to {v[2]:+.3f})" for v in d.values()]
        lines.append(
            f"| {r['recipe']} | {r['steps']} | {r['seconds'] / 60:.1f} | {r['final_loss']:.4f} | "
            f"{m['greedy_solved']:.3f} | {m['greedy_step_acc']:.3f} | {m['sampled_solved']:.3f} | "
            f"{m['sampled_step_acc']:.3f} | {diffs[0]} | {diffs[1]} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="chain")
    parser.add_argument("--out", default="runs/warm-recipes")
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--problems", type=int, default=500)
    args = parser.parse_args()
    if args.samples < 1 or args.problems < 1:
        print(
            "warm_start_recipes.py: error: --samples and --problems must be >= 1", file=sys.stderr
        )
        raise SystemExit(2)
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    from botgrpo.harness.compare import check_inputs
    from botgrpo.harness.config import resolve_task_defaults
    from botgrpo.harness.evaluate import held_out_examples

    out = Path(args.out)
    rows, outcomes = [], {}
    for recipe in args.recipes:
        path, meta = train(args.task, recipe, out, args.problems)
        cfg = recipe_config(args.task, recipe, out, args.problems)
        task = check_inputs(cfg)
        resolve_task_defaults(cfg, task)
        examples = held_out_examples(task, args.problems)
        outcomes[recipe] = per_problem(
            path, task, examples, args.samples, cfg.max_completion_length
        )
        rows.append(
            {
                "recipe": recipe,
                "checkpoint": str(path),
                "config": meta["config"],
                "steps": meta.get("steps_run", meta["config"]["steps"]),
                "seconds": meta["seconds"],
                "final_loss": meta["final_loss"],
                "metrics": metrics(outcomes[recipe]),
            }
        )
        print(f"{recipe}: {rows[-1]['steps']} steps, {rows[-1]['metrics']}", flush=True)
    reference = args.recipes[0]
    for row in rows[1:]:
        row["vs_reference"] = paired(outcomes[row["recipe"]], outcomes[reference])
    out.mkdir(parents=True, exist_ok=True)
    (out / "warm-start-recipes.json").write_text(json.dumps(rows, indent=2))
    text = render(rows, reference, args.samples, args.problems)
    (out / "warm-start-recipes.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
