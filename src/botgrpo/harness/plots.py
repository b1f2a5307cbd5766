"""curves.png: one colour per method, mean over seeds with the seed band.

1. The lead metric on the held-out problems (thresholds of the summary dotted).
2. For a code task, its other rates (compiled, clean, solved; greedy or sampled, as the lead).
3. The matching step accuracy (greedy or sampled, as the lead metric).
4. The share of the training rollouts that solved their problem, per step (moving average).
5. The share of prompt groups that carried a learning signal.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from botgrpo.harness.results import eval_curves, train_curves, train_means

#: Training steps averaged in the training-solved panel.
SMOOTH_STEPS = 5


def _aligned(seeds: dict) -> tuple[list, np.ndarray]:
    """Steps every seed has, and the values there ([seeds, steps])."""
    steps = sorted(set.intersection(*(set(s) for s, _ in seeds.values())))
    values = np.array([[dict(zip(s, v, strict=True))[t] for t in steps] for s, v in seeds.values()])
    return steps, values


def _panel(ax, curves: dict, colors: dict, smooth: int = 1) -> None:
    for method, seeds in sorted(curves.items()):
        steps, values = _aligned(seeds)
        if smooth > 1 and values.shape[1] >= smooth:
            kernel = np.ones(smooth) / smooth
            values = np.array([np.convolve(v, kernel, mode="valid") for v in values])
            steps = steps[smooth - 1 :]
        ax.plot(
            steps,
            values.mean(0),
            color=colors[method],
            lw=2,
            label=f"{method} ({len(seeds)} seed{'s' * (len(seeds) != 1)})",
        )
        if len(seeds) > 1:
            ax.fill_between(steps, values.min(0), values.max(0), color=colors[method], alpha=0.15)
    ax.grid(alpha=0.3)


def plot_curves(
    records: list[dict],
    out: Path,
    metric: str = "sampled_solved",
    title: str = "",
    thresholds: tuple[float, ...] = (),
) -> Path:
    """Write the figure to ``out``: four panels, six when the records carry a code task's
    compile and clean rates (the lead metric, the other two rates, step accuracy, training
    rollouts solved, learning signal)."""
    lead = eval_curves(records, metric)
    prefix = "sampled" if metric.startswith("sampled") else "greedy"
    step_key = f"{prefix}_step_acc"
    companions = [
        key
        for key in (f"{prefix}_compiled", f"{prefix}_clean", f"{prefix}_solved")
        if key != metric and any(key in r for r in records)
    ]
    if not any(key.endswith(("_compiled", "_clean")) for key in [metric, *companions]):
        companions = []
    methods = sorted(set(lead) | set(train_means(records, "bot/frac_zero_signal_groups")))
    colors = {m: f"C{i}" for i, m in enumerate(methods)}
    columns = (len(companions) + 5) // 2  # lead, companions, step accuracy, training, signal
    fig, axes = plt.subplots(2, columns, figsize=(6 * columns, 8.5))
    panels = list(axes.flat)
    ax = panels.pop(0)
    _panel(ax, lead, colors)
    for t in thresholds:
        ax.axhline(t, color="grey", ls=":", lw=1)
    ax.set(xlabel="optimizer step", ylabel=metric, title=f"held-out {metric.replace('_', ' ')}")
    ax.legend(loc="best", framealpha=0.8)
    for key in [*companions, step_key]:
        bx = panels.pop(0)
        _panel(bx, eval_curves(records, key), colors)
        bx.set(xlabel="optimizer step", ylabel=key, title=f"held-out {key.replace('_', ' ')}")
    cx = panels.pop(0)
    _panel(cx, train_curves(records, "solved"), colors, smooth=SMOOTH_STEPS)
    cx.set(
        xlabel="optimizer step",
        ylabel="solved rollouts",
        title=f"training rollouts solved ({SMOOTH_STEPS}-step average)",
    )
    dx = panels.pop(0)
    zero = train_means(records, "bot/frac_zero_signal_groups")
    dx.bar(list(zero), [1 - z for z in zero.values()], color=[colors[m] for m in zero])
    dx.set(ylim=(0, 1), ylabel="groups carrying signal", title="learning signal (mean over steps)")
    dx.tick_params(axis="x", rotation=30)
    for unused in panels:
        unused.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def plot_lr_sweep(report: dict, out: Path) -> Path:
    """The learning-rate sweep (lr_sweep.json's report): each method's score against the rate
    on a log axis, its chosen rate circled."""
    methods = sorted(report["mean_over_run"])
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for i, m in enumerate(methods):
        points = sorted((float(lr), v) for lr, v in report["mean_over_run"][m].items())
        ax.plot(*zip(*points, strict=True), marker="o", color=f"C{i}", label=m)
        best = float(report["best"][m])
        ax.plot(best, dict(points)[best], "o", ms=13, mfc="none", color=f"C{i}")
    n = report.get("sweep_seeds", 1)
    rates = sorted({float(lr) for by_lr in report["mean_over_run"].values() for lr in by_lr})
    ax.set_xscale("log")
    ax.set_xticks(rates, [f"{lr:g}" for lr in rates])
    ax.minorticks_off()
    ax.set(
        xlabel="learning rate",
        ylabel=f"mean {report.get('metric', 'lead metric')} over the run",
        title=f"learning-rate sweep\n{report.get('stream', 'validation')} stream, "
        f"{n} seed{'s' * (n != 1)} per rate; circled: chosen",
    )
    ax.legend(loc="best", framealpha=0.8, fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
