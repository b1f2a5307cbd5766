"""curves.png: held-out accuracy per method, mean over seeds with the min-max band."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from botgrpo.harness.results import eval_curves, train_means


def plot_curves(records: list[dict], out: Path, title: str) -> Path:
    """Two panels: accuracy vs step (mean line, seed band), and the share of signal groups."""
    curves = eval_curves(records)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    for i, (method, seeds) in enumerate(sorted(curves.items())):
        steps = sorted(set.intersection(*(set(s) for s, _ in seeds.values())))
        values = np.array(
            [[dict(zip(s, v, strict=True))[t] for t in steps] for s, v in seeds.values()]
        )
        color = f"C{i}"
        ax.plot(steps, values.mean(0), color=color, lw=2, label=f"{method} ({len(seeds)} seeds)")
        if len(seeds) > 1:
            ax.fill_between(steps, values.min(0), values.max(0), color=color, alpha=0.15)
    ax.set(xlabel="optimizer step", ylabel="held-out greedy accuracy", title=title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", framealpha=0.8)
    zero = train_means(records, "bot/frac_zero_signal_groups")
    methods = sorted(zero)
    bx.bar(
        methods,
        [1 - zero[m] for m in methods],
        color=[f"C{sorted(curves).index(m)}" if m in curves else "grey" for m in methods],
    )
    bx.set(ylim=(0, 1), ylabel="groups carrying signal", title="learning signal")
    bx.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
