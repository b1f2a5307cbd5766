"""The verdict-noise map: BoT's lead over GRPO as its step verdicts get worse.

Each setting is one `botgrpo compare` of the bot preset with noisy training verdicts
(``--verdict-noise``, :class:`botgrpo.tasks.NoisyVerdicts`) on the same warm start, seeds and
budget; GRPO sees no verdicts, so it runs once, in the clean setting, beside clean BoT. Every
setting is then held against those GRPO runs, paired by seed, at the clean comparison's
thresholds: steps to the half-way level (ratio GRPO / BoT, bootstrap 95% interval) and the AUC
difference. ``random`` at rate 1 is the random-verdict control (verdicts independent of
correctness, same share of +1).

    python benchmarks/verdict_noise_map.py [--out runs] [--name noise] [--seeds 5]
        [--settings clean flip0.2 random ...] [--report-only]
        [--task columns --name noise-columns --warm-start-stop converged]
        [--settings clean prm --step-verifier prm:PATH]   # a learned verifier (a PRM)

Settings run in the order given (default: all of :data:`SETTINGS`, the map's endpoints
first); finished runs are reused, so the command resumes. ``--report-only`` writes map.md,
map.json and map.png from the settings that finished. The rates are the central comparison's
(docs/results/central.md): 4e-4 for grpo and bot. A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

#: tag -> (verdict noise, w_s); the map's endpoints first, so a short budget still answers.
SETTINGS: dict[str, tuple[str, float]] = {
    "clean": ("", 0.5),
    "flip0.2": ("0.2:flip", 0.5),
    "random": ("1:random", 0.5),
    "flip0.4": ("0.4:flip", 0.5),
    "flip0.1": ("0.1:flip", 0.5),
    "flip0.3": ("0.3:flip", 0.5),
    "false_alarm0.3": ("0.3:false_alarm", 0.5),
    "miss0.3": ("0.3:miss", 0.5),
    "flip0.2-ws0.1": ("0.2:flip", 0.1),
    "flip0.2-ws1": ("0.2:flip", 1.0),
    # a learned verifier's verdicts (--step-verifier prm:PATH), at two weights of its signal
    "prm": ("", 0.5),
    "prm-ws0.1": ("", 0.1),
}
LR = 4e-4


def config(args: argparse.Namespace, tag: str):
    """The comparison of one setting (the central comparison's budget and evaluation)."""
    from botgrpo.harness.config import CompareConfig

    noise, w_s = SETTINGS[tag]
    methods = ("grpo", "bot") if tag == "clean" else ("bot",)
    if tag.startswith("prm") and not args.step_verifier:
        raise ValueError("setting prm needs --step-verifier prm:PATH (a PRM folder)")
    return CompareConfig(
        name=f"{args.name}-{tag}",
        out_dir=args.out,
        task=args.task,
        methods=methods,
        seeds=args.seeds,
        steps=args.steps,
        eval_every=args.eval_every,
        eval_problems=args.problems,
        pass_samples=1,
        pass_problems=args.problems,
        learning_rate=args.lr,
        w_s=w_s,
        warm_start_stop=args.warm_start_stop,
        verdict_noise=noise,
        step_verifier=args.step_verifier if tag.startswith("prm") else "",
        workers=args.workers,
    )


def _curves(root: Path) -> dict:
    from botgrpo.harness.results import eval_curves, load_records

    return eval_curves(load_records(root / "metrics.jsonl"), "sampled_solved")


def report(args: argparse.Namespace) -> dict:
    """map.json / map.md / map.png from the finished settings."""
    from botgrpo.harness import stats

    out = Path(args.out)
    clean = out / f"{args.name}-clean"
    if not (clean / "summary.json").is_file():
        print(
            f"verdict_noise_map.py: error: no finished clean comparison in {clean}; run the map "
            "without --report-only first, or pass the --out and --name it used",
            file=sys.stderr,
        )
        raise SystemExit(2)
    summary = json.loads((clean / "summary.json").read_text())
    thresholds, start = summary["thresholds"], summary["start"]
    if not thresholds:
        raise SystemExit("the clean comparison learned nothing an evaluation can see: no map")
    mid = thresholds[len(thresholds) // 2]
    base = _curves(clean)["grpo"]
    rows = []
    for tag, (noise, w_s) in SETTINGS.items():
        root = out / f"{args.name}-{tag}"
        if not (root / "summary.json").exists():
            continue
        bot = _curves(root)["bot"]
        seeds = sorted(set(base) & set(bot))
        pair = {"grpo": {s: base[s] for s in seeds}, "bot": {s: bot[s] for s in seeds}}
        steps = stats.crossings(pair, mid)
        sp = stats.speedup(steps, "grpo", "bot", mid, args.steps)
        aucs = stats.auc_gains(pair, start)
        diff = stats.paired_difference_ci(aucs["bot"], aucs["grpo"])
        finals = [pair["bot"][s][1][-1] for s in seeds]
        tails = {m: [stats.tail_mean(pair[m][s][1]) for s in seeds] for m in pair}
        tail = stats.paired_difference_ci(tails["bot"], tails["grpo"])
        rows.append(
            {
                "setting": tag,
                "verdict_noise": noise or None,
                "step_verifier": args.step_verifier if tag.startswith("prm") else None,
                "w_s": w_s,
                "seeds": seeds,
                "bot_steps": steps["bot"],
                "speedup": sp.ratio if sp else None,
                "speedup_low": sp.low if sp else None,
                "speedup_high": sp.high if sp else None,
                "censoring": sp.censoring() if sp else "",
                "auc_diff": float(np.mean(aucs["bot"]) - np.mean(aucs["grpo"])),
                "auc_low": diff[1] if diff else None,
                "auc_high": diff[2] if diff else None,
                "bot_final": float(np.mean(finals)),
                "tail_diff": float(np.mean(tails["bot"]) - np.mean(tails["grpo"])),
                "tail_low": tail[1] if tail else None,
                "tail_high": tail[2] if tail else None,
            }
        )
    grpo_final = float(np.mean([v[-1] for _, v in base.values()]))
    result = {
        "task": args.task,
        "threshold": mid,
        "start": start,
        "grpo_steps": stats.crossings({"grpo": base}, mid)["grpo"],
        "grpo_final": grpo_final,
        "rows": rows,
    }
    (out / f"{args.name}-map.json").write_text(json.dumps(result, indent=2))
    (out / f"{args.name}-map.md").write_text(render(result))
    plot(result, out / f"{args.name}-map.png")
    plot_curves(out, args.name, [r["setting"] for r in rows], out / f"{args.name}-curves.png")
    print(render(result))
    return result


def _interval(low, high, fmt: str) -> str:
    return "" if low is None else f" ({low:{fmt}} to {high:{fmt}})"


def _verdicts(row: dict) -> str:
    if row.get("step_verifier"):
        return f"learned ({row['step_verifier']})"
    return row["verdict_noise"] or "clean"


def render(result: dict) -> str:
    lines = [
        f"BoT vs GRPO (clean run, {len(result['grpo_steps'])} seeds) at the half-way level "
        f"{result['threshold']:.3f} of sampled_solved (start {result['start']:.3f}); GRPO "
        f"final {result['grpo_final']:.3f}.",
        "",
        "| setting | verdicts | w_s | speedup (95% CI) | AUC diff (95% CI) "
        "| last third diff (95% CI) | BoT final |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        speed = "n/a" if r["speedup"] is None else f"{r['speedup']:.2f}x"
        speed += _interval(r["speedup_low"], r["speedup_high"], ".2f")
        if r["censoring"]:
            speed += f" [{r['censoring']}]"
        auc = f"{r['auc_diff']:+.3f}" + _interval(r["auc_low"], r["auc_high"], "+.3f")
        tail = f"{r['tail_diff']:+.3f}" + _interval(r["tail_low"], r["tail_high"], "+.3f")
        lines.append(
            f"| {r['setting']} | {_verdicts(r)} | {r['w_s']:g} | {speed} | "
            f"{auc} | {tail} | {r['bot_final']:.3f} |"
        )
    lines.append(
        "\nLast third diff: BoT - GRPO in the mean of each run's last third of evaluations "
        "(where a run ends up, less noisy than its last evaluation alone), paired by seed."
    )
    return "\n".join(lines) + "\n"


def plot_curves(out: Path, name: str, settings: list[str], path: Path) -> None:
    """The lead metric over training: GRPO (clean setting) and BoT in every setting, the mean
    over seeds with a band of one standard error."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    arms = [("grpo", "clean", "GRPO")] + [("bot", tag, f"BoT, {tag}") for tag in settings]
    for k, (method, tag, label) in enumerate(arms):
        runs = _curves(out / f"{name}-{tag}").get(method, {})
        if not runs:
            continue
        steps = next(iter(runs.values()))[0]
        ys = np.array([v[1] for v in runs.values() if list(v[0]) == list(steps)])
        mean, se = ys.mean(0), ys.std(0, ddof=1) / np.sqrt(len(ys)) if len(ys) > 1 else 0 * ys[0]
        color = "grey" if method == "grpo" else f"C{k - 1}"
        ax.plot(steps, mean, "o-", color=color, label=f"{label} ({len(ys)} seeds)")
        ax.fill_between(steps, mean - se, mean + se, color=color, alpha=0.15)
    ax.set(xlabel="RL step", ylabel="sampled_solved (held-out)", title=f"{name}: mean +- 1 se")
    ax.legend(loc="lower right", framealpha=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2), width_ratios=(1, 1, 1.1))
    flips = [r for r in result["rows"] if r["w_s"] == 0.5 and _flip_rate(r) is not None]
    flips.sort(key=_flip_rate)
    random = [r for r in result["rows"] if (r["verdict_noise"] or "").endswith(":random")]
    for ax, key, label, ref in (
        (axes[0], "speedup", "steps-to-half-way ratio GRPO / BoT", 1.0),
        (axes[1], "auc_diff", "AUC difference BoT - GRPO", 0.0),
    ):
        low, high = f"{key.split('_')[0]}_low", f"{key.split('_')[0]}_high"
        xs = [1 - _flip_rate(r) for r in flips]
        ys = [r[key] for r in flips]
        err = [
            [y - (r[low] if r[low] is not None else y) for r, y in zip(flips, ys, strict=True)],
            [(r[high] if r[high] is not None else y) - y for r, y in zip(flips, ys, strict=True)],
        ]
        ax.errorbar(xs, ys, yerr=err, fmt="o-", capsize=4, label="BoT, flipped verdicts")
        for r in random:
            ax.axhline(r[key], color="C3", ls="--", label="BoT, random verdicts (95% band)")
            if r[low] is not None:
                ax.axhspan(r[low], r[high], color="C3", alpha=0.12)
        ax.axhline(ref, color="grey", ls=":", label="GRPO")
        ax.set(xlabel="share of step verdicts right", ylabel=label)
        ax.legend(loc="best", framealpha=0.8)
    _forest(axes[2], result["rows"])
    fig.suptitle(f"Verdict noise on {result['task']}: 95% intervals over seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _forest(ax, rows: list[dict]) -> None:
    """Every setting's AUC difference with its interval, one row each (the one-sided kinds and
    the w_s grid have no place on the flip-rate axis)."""
    ys = range(len(rows))[::-1]
    for y, r in zip(ys, rows, strict=True):
        low = r["auc_low"] if r["auc_low"] is not None else r["auc_diff"]
        high = r["auc_high"] if r["auc_high"] is not None else r["auc_diff"]
        color = "C0" if low > 0 else ("C3" if high < 0 else "grey")
        ax.errorbar(
            r["auc_diff"],
            y,
            xerr=[[r["auc_diff"] - low], [high - r["auc_diff"]]],
            fmt="o",
            color=color,
            capsize=3,
        )
    ax.axvline(0.0, color="grey", ls=":")
    ax.set_yticks(list(ys), [f"{r['setting']} (w_s {r['w_s']:g})" for r in rows])
    ax.set(xlabel="AUC difference BoT - GRPO", title="every setting")


def _flip_rate(row: dict) -> float | None:
    if row["setting"].startswith("prm"):
        return None
    noise = row["verdict_noise"]
    if not noise:
        return 0.0
    rate, _, kind = noise.partition(":")
    return float(rate) if kind == "flip" else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs")
    parser.add_argument("--name", default="noise")
    parser.add_argument("--task", default="chain")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--eval-every", type=int, default=5)
    parser.add_argument("--problems", type=int, default=500, help="held-out problems")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=LR, help="grpo's and bot's learning rate")
    parser.add_argument(
        "--warm-start-stop",
        choices=("steps", "converged"),
        default=None,
        help="the warm start's stop rule (default: the task's)",
    )
    parser.add_argument(
        "--settings",
        nargs="+",
        choices=list(SETTINGS),
        default=[s for s in SETTINGS if not s.startswith("prm")],
        help="settings to run (prm needs --step-verifier)",
    )
    parser.add_argument(
        "--step-verifier",
        default="",
        help="prm:PATH, the learned verifier of setting prm (e.g. benchmarks/train_prm.py's)",
    )
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if not args.report_only:
        from botgrpo.harness.compare import compare

        settings = ["clean", *(s for s in args.settings if s != "clean")]
        from botgrpo.usage import UsageError, check_task_spec

        try:  # a user's mistake ends in one line before anything trains
            check_task_spec(args.task)
            config(args, settings[0])
        except (UsageError, ValueError) as err:
            parser.error(str(err))
        for tag in settings:
            compare(config(args, tag))
            report(args)
    report(args)


if __name__ == "__main__":
    main()
