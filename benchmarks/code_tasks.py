"""The paper's headline experiment in miniature: GRPO, DAPO and BoT learning to write code (the
react and python tasks) under the real toolchains' line verdicts, and the recipe ablation.

Two stages, each a `botgrpo compare` from the task's shipped warm start, evaluated every 5
steps on ``--problems`` held-out problems, one completion each sampled at the training
temperature (the paper's compile rate is a sampled one; the greedy completions are skipped):

1. ``{task}-{name}``: grpo, dapo and bot, each at the rate a validation sweep chose (every rate
   of ``--rates`` on ``--sweep-seeds`` seeds of the validation stream, never the reported
   problems), then ``--seeds`` seeds.
2. ``{task}-{name}-ws{W}`` for each ``--ablation-ws`` W: bot at the rate its sweep chose with
   the line signal's weight w_s = W, same seeds. W = 0 is the recipe ablation (the global
   signals only: BoT's token rewards are then constant inside a rollout, and it is GRPO with
   the population std); the main comparison's bot has w_s = 0.5.

Then BoT is held against GRPO and DAPO, DAPO against GRPO, and every ablation arm against GRPO
and against BoT at w_s = 0.5, paired by seed: steps to the paper's 80% compile rate and to the
comparison's half-way level (ratio, bootstrap 95% interval, censored runs named) and the AUC
difference of the compile rate; and each arm's final compile, clean and solve rates. Writes ``{task}-{name}-report.md``, ``.json`` and ``.png`` under ``--out``.

    python benchmarks/code_tasks.py --task python [--out runs] [--name 5seed] [--seeds 5]
        [--rates 1e-4 2e-4 4e-4] [--ablation-ws 0 2] [--report-only]

Finished runs are reused, so the command resumes. A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from pathlib import Path

import numpy as np

METRIC = "sampled_compiled"
#: The paper's compile-rate threshold (BoT-GRPO passed it by step 40, GRPO near step 90).
PAPER_LEVEL = 0.8
#: The rates reported beside the compile rate (finals).
FINALS = ("sampled_compiled", "sampled_clean", "sampled_solved")
FINAL_HEADS = ("final compiled", "final clean", "final solved")


def _config(args: argparse.Namespace, name: str, methods, **kw):
    from botgrpo.harness.config import CompareConfig

    return CompareConfig(
        name=name,
        out_dir=args.out,
        task=args.task,
        methods=tuple(methods),
        seeds=args.seeds,
        steps=args.steps,
        eval_every=5,
        eval_problems=args.problems,
        pass_samples=1,
        pass_problems=args.problems,
        greedy=False,
        metric=METRIC,
        workers=args.workers,
        progress=False,
        **kw,
    )


def main_config(args: argparse.Namespace):
    """Stage 1: grpo, dapo and bot with a learning-rate sweep."""
    return _config(
        args,
        f"{args.task}-{args.name}",
        ("grpo", "dapo", "bot"),
        lr_sweep=tuple(args.rates),
        sweep_seeds=args.sweep_seeds,
    )


def ablation_config(args: argparse.Namespace, w_s: float, bot_lr: float):
    """Stage 2: bot at its chosen rate with line-signal weight ``w_s``."""
    return _config(args, _ablation_name(args, w_s), ("bot",), learning_rate=bot_lr, w_s=w_s)


def _ablation_name(args: argparse.Namespace, w_s: float) -> str:
    return f"{args.task}-{args.name}-ws{w_s:g}"


def _chosen_rates(args: argparse.Namespace) -> dict[str, float]:
    sweep = Path(args.out) / f"{args.task}-{args.name}" / "lr_sweep.json"
    return {m: float(lr) for m, lr in json.loads(sweep.read_text())["best"].items()}


def _arms(args: argparse.Namespace) -> dict[str, Path]:
    """label -> comparison folder of every finished arm (bot at w_s 0.5 is ``bot``)."""
    out = Path(args.out)
    arms = {m: out / f"{args.task}-{args.name}" for m in ("grpo", "dapo", "bot")}
    for w_s in args.ablation_ws:
        arms[f"bot w_s={w_s:g}"] = out / _ablation_name(args, w_s)
    return {label: root for label, root in arms.items() if (root / "summary.json").exists()}


@functools.cache
def records(root: Path) -> tuple[dict, ...]:
    """A comparison's records (:func:`botgrpo.harness.results.comparison_records`), read once
    per report however many figures use them: each method's at the rate its ``summary.json``
    says it ran at (a comparison whose rate changed, e.g. by a wider sweep, keeps the runs at
    the old rate beside the new ones; they are not mixed in)."""
    from botgrpo.harness.results import comparison_records
    from botgrpo.harness.resummarize import select

    found = comparison_records(root)
    summary = Path(root) / "summary.json"
    if not summary.is_file():
        return tuple(found)
    rates = {m: float(v["lr"]) for m, v in json.loads(summary.read_text())["methods"].items()}
    try:
        kept = select(
            found,
            (),
            rates,
            chosen_by="its summary.json names",
            fix="rerun the comparison's command to rewrite its summary",
        )
    except ValueError as err:
        raise ValueError(f"{root}: {err}") from None
    return tuple(kept)


def check_all_runs_finished(root: Path, fix: str) -> None:
    """A summary written over part of a comparison's runs (``botgrpo summarize`` on a stopped
    one) is not its report: every method x seed of its config must have finished."""
    finished = {(r["method"], r["seed"]) for r in records(root) if r.get("kind") == "eval"}
    if (root / "config.json").is_file():  # what the comparison set out to run
        config = json.loads((root / "config.json").read_text())
        methods, seeds = config["methods"], config["seeds"]
    else:  # a copy that keeps its summary and records alone (checked where it says)
        summary = json.loads((root / "summary.json").read_text())
        methods, seeds = list(summary["methods"]), summary.get("n_seeds", 0)
    short = {m: sum((m, s) in finished for s in range(seeds)) for m in methods}
    if sum(short.values()) < len(methods) * seeds:
        said = ", ".join(f"{m} {n} of {seeds}" for m, n in short.items())
        raise ValueError(f"{root}: not every run has finished ({said}): {fix}")


def comparison_budget(roots, summary_name: str = "summary.json") -> int:
    """The steps every compared comparison trained for (a run that never reaches a level counts
    at it): each folder's own ``budget_steps``, which must agree."""
    budgets = {}
    for root in roots:
        summary = json.loads((Path(root) / summary_name).read_text())
        if "budget_steps" in summary:
            budgets[str(root)] = summary["budget_steps"]
    if not budgets:
        raise ValueError("no summary.json of the compared runs says their budget_steps")
    if len(set(budgets.values())) > 1:
        listed = ", ".join(f"{r} {b}" for r, b in budgets.items())
        raise ValueError(f"the compared runs trained for different numbers of steps ({listed})")
    return next(iter(budgets.values()))


def _curves(root: Path, method: str, key: str) -> dict:
    from botgrpo.harness.results import eval_curves

    return eval_curves(list(records(root)), key).get(method, {})


def _pairs(arms) -> list[tuple[str, str]]:
    """(arm, baseline) pairs: bot against grpo and dapo, dapo against grpo, each ablation arm
    against grpo and against bot at w_s 0.5."""
    pairs = [("bot", "grpo"), ("bot", "dapo"), ("dapo", "grpo")]
    for label in arms:
        if label.startswith("bot w_s"):
            pairs += [(label, "grpo"), (label, "bot")]
    return [(a, b) for a, b in pairs if a in arms and b in arms]


def _compare_pair(curves: dict, arm: str, base: str, levels: dict, start: float, budget: int):
    """``arm`` against ``base`` paired by seed: speedup (base steps / arm steps) per level and
    the AUC difference arm - base."""
    from botgrpo.harness import stats

    seeds = sorted(set(curves[base]) & set(curves[arm]))
    pair = {m: {s: curves[m][s] for s in seeds} for m in (base, arm)}
    out: dict = {"arm": arm, "baseline": base, "seeds": seeds, "speedup": {}}
    for tag, level in levels.items():
        sp = stats.speedup(stats.crossings(pair, level), base, arm, level, budget)
        out["speedup"][tag] = None
        if sp is not None:
            out["speedup"][tag] = {
                "ratio": sp.ratio,
                "low": sp.low,
                "high": sp.high,
                "censoring": sp.censoring(),
            }
    aucs = stats.auc_gains(pair, start)
    diff = stats.paired_difference_ci(aucs[arm], aucs[base])
    mean = float(np.mean(aucs[arm]) - np.mean(aucs[base]))
    out["auc_diff"] = [mean, None, None] if diff is None else list(diff)
    return out


def _arm_row(label: str, root: Path, curves: dict, levels: dict, lr: float) -> dict:
    """One arm's rate, steps to each level per seed and final rates (means over seeds)."""
    from botgrpo.harness import stats

    method = label.split()[0]
    finals = {
        key: float(np.mean([v[-1] for _, v in _curves(root, method, key).values()]))
        for key in FINALS
    }
    steps = {
        tag: stats.crossings({label: curves[label]}, level)[label] for tag, level in levels.items()
    }
    return {"arm": label, "lr": lr, "finals": finals, "steps": steps}


def report(args: argparse.Namespace) -> dict:
    """Every finished arm's row and the paired comparisons (:func:`_pairs`)."""
    from botgrpo.harness import stats

    main_root = Path(args.out) / f"{args.task}-{args.name}"
    if not (main_root / "summary.json").exists():
        print(
            f"code_tasks.py: error: no finished comparison in {main_root}; run without "
            "--report-only first, or pass the --out, --task and --name it used",
            file=sys.stderr,
        )
        raise SystemExit(2)
    summary = json.loads((main_root / "summary.json").read_text())
    arms = _arms(args)
    try:  # what the runs trained for, whatever --steps says now
        for root in dict.fromkeys(arms.values()):
            check_all_runs_finished(root, "run without --report-only to finish them")
        budget = comparison_budget(arms.values())
        curves = {label: _curves(root, label.split()[0], METRIC) for label, root in arms.items()}
    except ValueError as err:
        _usage(err)
    rates = _chosen_rates(args)
    rates.update({label: rates["bot"] for label in arms if label.startswith("bot w_s")})
    levels = {"80%": PAPER_LEVEL}
    if summary["thresholds"]:
        levels["half-way"] = summary["thresholds"][len(summary["thresholds"]) // 2]
    start = stats.start_value(curves)
    result = {
        "task": args.task,
        "start": start,
        "levels": levels,
        "budget": budget,
        "rows": [_arm_row(a, root, curves, levels, rates[a]) for a, root in arms.items()],
        "pairs": [_compare_pair(curves, a, b, levels, start, budget) for a, b in _pairs(arms)],
    }
    stem = Path(args.out) / f"{args.task}-{args.name}-report"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2))
    stem.with_suffix(".md").write_text(render(result))
    plot(curves, arms, result, stem.with_suffix(".png"))
    print(render(result))
    return result


def _ci(values: dict | list | None, fmt: str) -> str:
    if values is None:
        return "n/a"
    if isinstance(values, dict):
        value, low, high = values["ratio"], values["low"], values["high"]
    else:
        value, low, high = values
    return f"{value:{fmt}}" + ("" if low is None else f" ({low:{fmt}} to {high:{fmt}})")


def _mean_steps(steps: list, budget: int) -> str:
    reached = [s for s in steps if s is not None]
    mean = np.mean([budget if s is None else s for s in steps])
    never = len(steps) - len(reached)
    return f"{mean:.1f}" + (f" ({never} never)" if never else "")


def _head(cells: list[str]) -> list[str]:
    """A markdown table's header and rule."""
    return ["| " + " | ".join(cells) + " |", "|" + "---|" * len(cells)]


def render(result: dict) -> str:
    """The report as markdown: one row per arm, then one per paired comparison."""
    levels, budget = result["levels"], result["budget"]
    lines = [
        f"{result['task']}: compile rate ({METRIC}) from {result['start']:.3f}; levels "
        + ", ".join(f"{tag} = {level:.3f}" for tag, level in levels.items())
        + f"; budget {budget} steps (a run that never holds a level counts at the budget).",
        "",
        *_head(["arm", "lr", *(f"steps to {t}" for t in levels), *FINAL_HEADS]),
    ]
    for r in result["rows"]:
        f = r["finals"]
        lines.append(
            f"| {r['arm']} | {r['lr']:g} | "
            + " | ".join(_mean_steps(r["steps"][t], budget) for t in levels)
            + f" | {f['sampled_compiled']:.3f} | {f['sampled_clean']:.3f} | "
            f"{f['sampled_solved']:.3f} |"
        )
    speeds = [f"speedup to {t} (95% CI)" for t in levels]
    lines += ["", *_head(["arm vs baseline", "seeds", *speeds, "AUC diff arm - baseline (95% CI)"])]
    for c in result["pairs"]:
        cells = []
        for t in levels:
            sp = c["speedup"][t]
            note = f" [{sp['censoring']}]" if sp and sp["censoring"] else ""
            cells.append(_ci(sp, ".2f") + note)
        lines.append(
            f"| {c['arm']} vs {c['baseline']} | {len(c['seeds'])} | "
            + " | ".join(cells)
            + f" | {_ci(c['auc_diff'], '+.3f')} |"
        )
    return "\n".join(lines) + "\n"


def plot(curves: dict, arms: dict[str, Path], result: dict, path: Path) -> None:
    """Compile, clean and solve rates of every arm (mean over seeds, min-max band); a rate the
    evaluations did not record has no panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = {METRIC: curves}
    for key in ("sampled_clean", "sampled_solved"):
        found = {a: _curves(r, a.split()[0], key) for a, r in arms.items()}
        if all(found.values()):
            rates[key] = found
    fig, axes = plt.subplots(1, len(rates), figsize=(5.5 * len(rates), 4), squeeze=False)
    for ax, (key, by_arm) in zip(axes[0], rates.items(), strict=True):
        for label, seeds in by_arm.items():
            steps = next(iter(seeds.values()))[0]
            values = np.array([v for _, v in seeds.values()])
            ax.plot(steps, values.mean(0), label=f"{label} ({len(seeds)} seeds)")
            ax.fill_between(steps, values.min(0), values.max(0), alpha=0.12)
        if key == METRIC:
            for tag, level in result["levels"].items():
                ax.axhline(level, ls=":", c="grey", lw=1)
                ax.text(steps[0], level, f" {tag}", va="bottom", fontsize=8, color="grey")
        if not any(np.any(np.array([v for _, v in seeds.values()])) for seeds in by_arm.values()):
            ax.text(0.5, 0.5, "0 at every evaluation", transform=ax.transAxes, ha="center")
        ax.set_ylim(-0.02, 1.0)
        ax.set_xlabel("optimizer step")
        ax.set_ylabel(key.replace("_", " ") + " (held-out)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="lower right")
    fig.suptitle(
        f"{result['task']}: {', '.join(arms)} on the toolchain's verdicts (mean over seeds, "
        "min-max band)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _usage(err: Exception) -> None:
    print(f"{Path(sys.argv[0]).name}: error: {err}", file=sys.stderr)
    raise SystemExit(2)


def _compare(build) -> None:
    """``compare`` of the config ``build()`` makes; a setting it refuses (a bad option, a
    finished run made with other settings) ends in one line and exit 2."""
    from botgrpo.harness.compare import check_inputs, compare
    from botgrpo.harness.runner import SettingsChanged

    try:
        cfg = build()
        task = check_inputs(cfg)
    except ValueError as err:
        _usage(err)
    try:
        compare(cfg, task)
    except SettingsChanged as err:
        _usage(err)


def run(args: argparse.Namespace) -> None:
    """Stage 1, then stage 2 at the rate stage 1 chose for bot."""
    _compare(lambda: main_config(args))
    bot_lr = _chosen_rates(args)["bot"]
    for w_s in args.ablation_ws:
        _compare(lambda w_s=w_s: ablation_config(args, w_s, bot_lr))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", required=True, choices=("react", "python"))
    parser.add_argument("--out", default="runs")
    parser.add_argument("--name", default="5seed")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--problems", type=int, default=300, help="held-out problems")
    parser.add_argument("--rates", type=float, nargs="+", default=[1e-4, 2e-4, 4e-4])
    parser.add_argument("--sweep-seeds", type=int, default=2)
    parser.add_argument("--ablation-ws", type=float, nargs="*", default=[0.0, 2.0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if not args.report_only:
        run(args)
    report(args)


if __name__ == "__main__":
    main()
