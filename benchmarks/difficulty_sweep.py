"""BoT's speedup over GRPO as a function of how hard the task is for the starting model.

Runs one `botgrpo compare` per task setting (``--points``), all from the same starting
checkpoint, and tabulates, per point: the starting solve rate, each method's learning rate and
final value, steps-to-threshold at the middle threshold (50% of the way from the start to the
plateau) as a speedup with its 95% interval, and the difference in area under the curve with
its interval.

    python benchmarks/difficulty_sweep.py \\
        --points chain:min_steps=4,max_steps=7 chain:min_steps=8,max_steps=11 \\
                 chain:min_steps=12,max_steps=16 \\
        --init-model src/botgrpo/checkpoints/chain --seeds 5 --steps 40 --eval-every 5 \\
        --pass-samples 1 --name difficulty

Every `botgrpo compare` option is accepted and applies to each point (``--task`` is replaced
by the points; ``--methods`` must name the baseline first and the method second). With
``--lr-sweep``, each point chooses each method's rate on its own validation stream. A point whose
comparison already finished (its summary.json exists) is read, not rerun, unless ``--rerun``.
Writes OUT_DIR/NAME/difficulty.md, difficulty.json and difficulty.png. The starting checkpoint
must not have been trained on any point's held-out problems (the shipped chain warm start
excludes the default task's; check other settings as docs/results/difficulty.md does).
A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

from botgrpo.harness.config import CompareConfig, add_dataclass_arguments, config_from_args


def _slug(task: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", task).strip("-")


def _mid(values: list) -> float | None:
    return values[len(values) // 2] if values else None


def point_row(summary: dict, baseline: str, method: str) -> dict:
    """One point of the sweep from a comparison's summary.json."""
    metric = summary["metric"]
    mid = _mid(summary["thresholds"])
    sp = next(
        (
            s
            for s in summary["speedups"]
            if s["threshold"] == mid and s["baseline"] == baseline and s["method"] == method
        ),
        None,
    )
    auc = next(
        (
            d
            for d in summary["auc_differences"]
            if d["baseline"] == baseline and d["method"] == method
        ),
        None,
    )
    final = {m: summary["methods"][m]["metrics"][metric]["final"] for m in (baseline, method)}
    return {
        "task": summary["task"],
        "start": summary["start"],
        "plateau": summary["plateau"],
        "learned": summary["learned"],
        "final": final,
        "lr": {m: summary["methods"][m]["lr"] for m in (baseline, method)},
        "threshold": mid,
        "speedup": sp,
        "auc_difference": auc,
        "n_seeds": summary["n_seeds"],
    }


def _interval(low, high, fmt: str) -> str:
    return "no interval (< 3 seeds)" if low is None else f"{low:{fmt}} to {high:{fmt}}"


def write_table(rows: list[dict], baseline: str, method: str, metric: str, path: Path) -> None:
    lines = [
        f"| task | start ({metric}) | lr {baseline} / {method} | final {baseline} | "
        f"final {method} | threshold | "
        f"speedup {baseline} / {method} | 95% interval | AUC {method} - {baseline} | "
        "95% interval | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: -r["start"]):
        sp, auc = r["speedup"], r["auc_difference"]
        note = f" ({sp['censoring']})" if sp and sp["censoring"] else ""
        cells = [
            r["task"],
            f"{r['start']:.3f}",
            f"{r['lr'][baseline]:g} / {r['lr'][method]:g}",
            f"{r['final'][baseline]:.3f}",
            f"{r['final'][method]:.3f}",
            "-" if r["threshold"] is None else f"{r['threshold']:.3f}",
            "-" if sp is None else f"{sp['ratio']:.2f}x{note}",
            "-" if sp is None else _interval(sp["low"], sp["high"], ".2f"),
            "-" if auc is None else f"{auc['mean']:+.3f}",
            "-" if auc is None else _interval(auc["low"], auc["high"], "+.3f"),
            str(r["n_seeds"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    path.write_text("\n".join(lines) + "\n")


def plot(rows: list[dict], baseline: str, method: str, metric: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(rows, key=lambda r: r["start"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, unit, level in (
        (ax1, "speedup", "ratio", 1.0),
        (ax2, "auc_difference", "mean", 0.0),
    ):
        pts = [(r["start"], r[key]) for r in rows if r[key] is not None]
        xs = [x for x, _ in pts]
        ys = [d[unit] for _, d in pts]
        lo = [d[unit] - (d["low"] if d["low"] is not None else d[unit]) for _, d in pts]
        hi = [(d["high"] if d["high"] is not None else d[unit]) - d[unit] for _, d in pts]
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", capsize=4, color="tab:blue")
        for x, (_, d) in zip(xs, pts, strict=True):
            if d.get("censoring"):  # some baseline runs never got there
                ax.annotate("lower bound", (x, d[unit]), textcoords="offset points", xytext=(6, 4))
        ax.axhline(level, color="grey", lw=1, ls="--")
        ax.set_xlabel(f"starting {metric}")
    ax1.set_ylabel(f"steps to 50% threshold, {baseline} / {method}")
    ax1.set_title("speedup (95% interval)")
    ax2.set_ylabel(f"area under the curve, {method} - {baseline}")
    ax2.set_title("mean gain over the run (95% interval)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", nargs="+", required=True, help="task specs, one per point")
    parser.add_argument("--rerun", action="store_true", help="rerun finished points")
    add_dataclass_arguments(
        parser, CompareConfig, {"name": "difficulty", "methods": ("grpo", "bot")}
    )
    args = parser.parse_args(argv)
    base = config_from_args(CompareConfig, args)
    if len(base.methods) != 2:
        parser.error("--methods must name exactly two methods: the baseline, then the method")
    baseline, method = base.methods
    from botgrpo.harness.compare import compare

    root = Path(base.out_dir) / base.name
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for task in args.points:
        # each point a comparison of its own inside the sweep's folder (its warm starts cached
        # beside them, in root/.cache)
        cfg = dataclasses.replace(base, task=task, out_dir=str(root), name=_slug(task))
        summary_json = Path(cfg.out_dir) / cfg.name / "summary.json"
        if args.rerun or not summary_json.exists():
            compare(cfg)
        rows.append(point_row(json.loads(summary_json.read_text()), baseline, method))
    (root / "difficulty.json").write_text(json.dumps(rows, indent=2))
    write_table(rows, baseline, method, base.metric, root / "difficulty.md")
    plot(rows, baseline, method, base.metric, root / "difficulty.png")
    print((root / "difficulty.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
