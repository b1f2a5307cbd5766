"""BoT against what a practitioner with token rewards would use instead: verl's optimal token
baseline (otb), REINFORCE++ returns (reinforce_pp) and PPO with a learned critic (ppo).

Three stages, each a `botgrpo compare` on the default task's shipped warm start with the
central comparison's budget and evaluation:

1. ``{name}-sweep``: each alternative at every rate of ``--rates`` on ``--sweep-seeds`` seeds of
   the validation stream (never the reported problems), then 5 seeds at the rate it chose.
2. ``{name}-critic``: ppo at its chosen rate with its critic at ``--critic-factor`` times that
   rate (the default critic trains at the policy's rate), on the same validation seeds; the
   critic rate with the higher validation score is kept (and only then are its test seeds run).
3. ``{name}``: grpo and bot at the central comparison's rates (4e-4, docs/results/central.md)
   beside the alternatives at theirs, same seeds; the alternatives' finished runs are copied in
   from the first two stages, not rerun.

Then BoT is held against each alternative, paired by seed, at the comparison's half-way level:
steps (ratio alternative / BoT, bootstrap 95% interval), AUC difference, and seconds to the
threshold from the runs' own step times. Writes ``{name}-report.md`` and ``.json``.

    python benchmarks/alternatives.py [--out runs] [--name alternatives] [--skip-critic]
        [--final-only | --report-only]

Finished runs are reused, so the command resumes. ``--final-only`` runs the last stage on the
sweeps already made: every ``{name}-sweep*`` comparison counts, so a method swept apart later
(``{name}-sweep-otb``, say) joins them. A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import numpy as np

ALTERNATIVES = ("otb", "reinforce_pp", "ppo")
BASELINE_LRS = {"grpo": 4e-4, "bot": 4e-4}  # chosen by the central comparison's sweep


def _config(args: argparse.Namespace, name: str, methods, **kw):
    from botgrpo.harness.config import CompareConfig

    return CompareConfig(
        name=name,
        out_dir=args.out,
        task="chain",
        methods=tuple(methods),
        seeds=args.seeds,
        steps=args.steps,
        eval_every=5,
        eval_problems=args.problems,
        pass_samples=1,
        pass_problems=args.problems,
        learning_rate=4e-4,
        workers=args.workers,
        **kw,
    )


def _sweep_report(root: Path) -> dict:
    return json.loads((root / "lr_sweep.json").read_text())


def run_stages(args: argparse.Namespace) -> None:
    from botgrpo.harness.compare import compare

    unswept = [m for m in ALTERNATIVES if m not in _swept_apart(args)]
    if unswept:  # a method swept apart (``{name}-sweep-otb``) is not swept again
        sweep = _config(
            args,
            f"{args.name}-sweep",
            unswept,
            lr_sweep=tuple(args.rates),
            sweep_seeds=args.sweep_seeds,
        )
        compare(sweep)
    if not args.skip_critic:
        _critic_stage(args, choices(args)[0]["ppo"])
    compare(final_config(args))


def _swept_apart(args: argparse.Namespace) -> set[str]:
    """Methods with a finished sweep in a ``{name}-sweep-*`` comparison (``{name}-sweep`` itself
    resumes by itself)."""
    apart = [root for root in _sweeps(args) if root.name != f"{args.name}-sweep"]
    return {m for root in apart for m in _sweep_report(root)["best"]}


def _critic_stage(args: argparse.Namespace, ppo_lr: float) -> None:
    from botgrpo.harness.compare import compare

    critic = _config(
        args,
        f"{args.name}-critic",
        ("ppo",),
        lr_sweep=(ppo_lr,),
        sweep_seeds=args.sweep_seeds,
        critic_learning_rate=args.critic_factor * ppo_lr,
    )
    _validate_only(critic)
    _, critic_lr, _ = choices(args)
    if critic_lr is not None:  # the faster critic won on validation: its test seeds too
        compare(critic)


def _validate_only(cfg) -> None:
    """The validation runs of ``cfg``'s sweep (and its lr_sweep.json), without its test seeds."""
    from botgrpo.harness.compare import check_inputs, starting_checkpoint, sweep_learning_rates
    from botgrpo.harness.config import resolve_task_defaults

    task = check_inputs(cfg)
    resolve_task_defaults(cfg, task)
    root = Path(cfg.out_dir) / cfg.name
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(cfg.__dict__, indent=2, default=list))
    sweep_learning_rates(cfg, root, starting_checkpoint(cfg, task))


def _sweeps(args: argparse.Namespace) -> list[Path]:
    """The sweep comparisons: ``{name}-sweep``, and any ``{name}-sweep-*`` that swept a method
    apart (e.g. one added later)."""
    out = Path(args.out)
    return sorted(p.parent for p in out.glob(f"{args.name}-sweep*/lr_sweep.json"))


def choices(args: argparse.Namespace) -> tuple[dict[str, float], float | None, dict]:
    """Each method's rate, ppo's critic rate (None = the policy's) and the validation scores."""
    best, scores_by_lr, seeds = {}, {}, {}
    for root in _sweeps(args):
        report = _sweep_report(root)
        best |= {m: float(lr) for m, lr in report["best"].items()}
        scores_by_lr |= report["mean_over_run"]
        seeds |= dict.fromkeys(report["best"], report["sweep_seeds"])
    missing = [m for m in ALTERNATIVES if m not in best]
    if missing:
        raise SystemExit(f"no finished sweep of {missing}: run without --report-only")
    lrs = dict(BASELINE_LRS) | {m: best[m] for m in ALTERNATIVES}
    scores = {"sweep": scores_by_lr, "sweep_seeds": seeds, "critic": None}
    critic_lr = None
    critic_root = Path(args.out) / f"{args.name}-critic"
    if (critic_root / "lr_sweep.json").exists():
        variant = _sweep_report(critic_root)["mean_over_run"]["ppo"]
        key = next(iter(variant))
        own = scores_by_lr["ppo"][key]
        scores["critic"] = {"policy_rate": own, "factor_rate": variant[key]}
        if variant[key] > own:
            critic_lr = json.loads((critic_root / "config.json").read_text())[
                "critic_learning_rate"
            ]
    return lrs, critic_lr, scores


def final_config(args: argparse.Namespace):
    lrs, critic_lr, _ = choices(args)
    cfg = _config(
        args,
        args.name,
        ("grpo", "bot", *ALTERNATIVES),
        method_lrs=tuple(f"{m}={lr:g}" for m, lr in lrs.items()),
        critic_learning_rate=critic_lr,
    )
    _copy_runs(args, cfg, lrs, critic_lr)
    return cfg


def _copy_runs(args, cfg, lrs: dict[str, float], critic_lr: float | None) -> None:
    """The alternatives' finished test runs, from the stage that ran them."""
    from botgrpo.harness.runner import run_label

    out = Path(args.out)
    runs = out / cfg.name / "runs"
    for m in ALTERNATIVES:
        stages = [out / f"{args.name}-critic"] if m == "ppo" and critic_lr else _sweeps(args)
        for seed in range(cfg.seeds):
            label = run_label(m, seed, lrs[m])
            dst = runs / label
            for stage in stages:
                src = stage / "runs" / label
                if (src / "done.json").exists() and not dst.exists():
                    shutil.copytree(src, dst)


def _curves(root: Path) -> dict:
    from botgrpo.harness.results import eval_curves, load_records

    return eval_curves(load_records(root / "metrics.jsonl"), "sampled_solved")


def report(args: argparse.Namespace) -> dict:
    """BoT against each alternative (and GRPO), paired by seed."""
    from botgrpo.harness import stats

    root = Path(args.out) / args.name
    if not (root / "summary.json").exists():
        raise SystemExit(f"{root} has no summary.json: run the comparison first (no --report-only)")
    summary = json.loads((root / "summary.json").read_text())
    if not summary["thresholds"]:
        raise SystemExit(f"{root.name} learned nothing an evaluation can see: no report")
    mid = summary["thresholds"][len(summary["thresholds"]) // 2]
    curves = _curves(root)
    lrs, critic_lr, scores = choices(args)
    methods = summary["methods"]
    rows = []
    for other in ("grpo", *ALTERNATIVES):
        seeds = sorted(set(curves["bot"]) & set(curves[other]))
        pair = {m: {s: curves[m][s] for s in seeds} for m in ("bot", other)}
        steps = stats.crossings(pair, mid)
        sp = stats.speedup(steps, other, "bot", mid, args.steps)
        aucs = stats.auc_gains(pair, summary["start"])
        diff = stats.paired_difference_ci(aucs["bot"], aucs[other])
        rows.append(
            {
                "method": other,
                "lr": lrs[other],
                "seeds": seeds,
                "final": float(np.mean([pair[other][s][1][-1] for s in seeds])),
                "steps": steps[other],
                "speedup": None if sp is None else [sp.ratio, sp.low, sp.high],
                "censoring": "" if sp is None else sp.censoring(),
                "auc_diff": None if diff is None else list(diff),
                "cost": methods[other].get("cost"),
            }
        )
    result = {
        "threshold": mid,
        "start": summary["start"],
        "bot_final": float(np.mean([v[-1] for _, v in curves["bot"].values()])),
        "bot_steps": stats.crossings({"bot": curves["bot"]}, mid)["bot"],
        "bot_cost": methods["bot"].get("cost"),
        "critic_learning_rate": critic_lr,
        "validation": scores,
        "rows": rows,
    }
    (Path(args.out) / f"{args.name}-report.json").write_text(json.dumps(result, indent=2))
    text = render(result)
    (Path(args.out) / f"{args.name}-report.md").write_text(text)
    print(text)
    return result


def _ci(values, fmt: str) -> str:
    if values is None:
        return "n/a"
    value, low, high = values
    return f"{value:{fmt}}" + ("" if low is None else f" ({low:{fmt}} to {high:{fmt}})")


def render(result: dict) -> str:
    lines = [
        f"BoT (lr 4e-4) against each method at the half-way level {result['threshold']:.3f} of "
        f"sampled_solved (start {result['start']:.3f}), paired by seed; BoT final "
        f"{result['bot_final']:.3f}.",
        "",
        "| method | lr | steps to half-way, method / BoT (95% CI) | AUC diff BoT - method (95% CI) "
        "| method final | s / step | s to half-way |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        speed = _ci(r["speedup"], ".2f")
        if r["censoring"]:
            speed += f" [{r['censoring']}]"
        cost = r["cost"] or {}
        per_step = f"{cost['seconds_per_step']:.2f}" if cost else "-"
        to_mid = (
            cost.get("seconds_to_threshold", {}).get(f"{result['threshold']:g}") if cost else None
        )
        lines.append(
            f"| {r['method']} | {r['lr']:g} | {speed} | {_ci(r['auc_diff'], '+.3f')} | "
            f"{r['final']:.3f} | {per_step} | {'-' if to_mid is None else f'{to_mid:.0f}'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs")
    parser.add_argument("--name", default="alternatives")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--problems", type=int, default=300, help="held-out problems")
    parser.add_argument("--rates", type=float, nargs="+", default=[2e-4, 4e-4])
    parser.add_argument("--sweep-seeds", type=int, default=2)
    parser.add_argument("--skip-critic", action="store_true", help="no critic-rate stage")
    parser.add_argument("--critic-factor", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--final-only",
        action="store_true",
        help="only the last stage, on the sweeps already made (their runs copied, not rerun)",
    )
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.final_only:
        from botgrpo.harness.compare import compare

        compare(final_config(args))
    elif not args.report_only:
        run_stages(args)
    report(args)


if __name__ == "__main__":
    main()
