"""The map's plot: BoT's speedup and AUC difference against each step-0 figure."""

from __future__ import annotations

from pathlib import Path


def _exact(row: dict) -> bool:
    """Exact step or line verdicts (the learned PRM is 99.7% right, not exact)."""
    return row["predictors"]["verdict_accuracy"] == 1.0


def _place_labels(ax, points: list[tuple[float, float, str]]) -> None:
    """Label each point beside it: right of it, else left, inside the axes, nudged up or down
    past the labels already placed that it would overprint (boxes in axes fractions, after the
    limits are set).
    A label moved off its point's height gets a thin leader line."""
    to_axes = ax.transAxes.inverted().transform
    char_w, line_h = 0.0135, 0.032  # of a 6.5 pt label on these panels
    placed: list[tuple[float, float, float, float]] = []

    def free(x0: float, y0: float, w: float) -> bool:
        return all(x0 + w < a or b < x0 or y0 + line_h < c or d < y0 for a, c, b, d in placed)

    for x, y, text in sorted(points, key=lambda p: (-p[1], p[0])):
        fx, fy = to_axes(ax.transData.transform((x, y)))
        w = char_w * len(text)
        spots = [
            (fx + sx, fy - line_h / 2 + k * dy)
            for k in range(12)
            for dy in ((0.0,) if k == 0 else (line_h, -line_h))
            for sx in (0.02, -0.02 - w)
        ]
        inside = [(a, b) for a, b in spots if a >= 0 and a + w <= 1 and 0 <= b <= 1 - line_h]
        lx, ly = next(((a, b) for a, b in inside if free(a, b, w)), (inside or spots)[0])
        placed.append((lx, ly, lx + w, ly + line_h))
        ax.annotate(
            text,
            (x, y),
            xytext=(lx, ly),
            textcoords="axes fraction",
            fontsize=6.5,
            arrowprops=(
                {"arrowstyle": "-", "color": "0.6", "lw": 0.5}
                if abs(ly + line_h / 2 - fy) > line_h
                else None
            ),
        )


def plot_map(data: dict, path: Path) -> None:
    """BoT's speedup and AUC difference (with intervals) against each step-0 figure: the first
    five columns hold the settings with exact verdicts, the last the noisy and learned ones.
    A hollow marker is a bound (a run never reached the level)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    panels = (
        ("grpo_no_signal", "GRPO's groups with no signal at step 0"),
        ("local_share", "local signal's share of BoT's reward"),
        ("solved", "solved at step 0"),
        ("outcome_credit", "rollouts earning outcome credit at step 0"),
        ("mean_tokens", "tokens per completion (log scale)"),
        ("verdict_accuracy", "share of step verdicts right (noisy and learned verdicts)"),
    )
    colors = {"chain": "C0", "code": "C3", "noisy": "C1"}
    fig, axes = plt.subplots(2, len(panels), figsize=(26, 8.6), sharey="row")
    rows = [r for r in data["settings"] if r["w_s"] == 0.5]
    labels: dict = {}  # axes -> its points, labelled once every panel's limits are set
    for col, (key, label) in enumerate(panels):
        for row_i, (metric, ylabel, ref) in enumerate(
            (
                ("speedup", "BoT vs GRPO, steps to half-way (x)", 1.0),
                ("auc_diff", "AUC difference BoT - GRPO", 0.0),
            )
        ):
            ax = axes[row_i, col]
            points = []
            for r in rows:
                if (key == "verdict_accuracy") == _exact(r):
                    continue
                x = r["predictors"][key]
                x = x["value"] if isinstance(x, dict) else x
                if x is None:
                    continue
                m = r[metric]
                y = m.get("ratio", m.get("mean"))
                code = r["task"].split(":")[0] in ("react", "python")
                color = colors["noisy" if not _exact(r) else "code" if code else "chain"]
                bound = bool(m.get("censoring"))
                ax.errorbar(
                    x,
                    y,
                    yerr=[[y - m["low"]], [m["high"] - y]],
                    fmt="o",
                    color=color,
                    mfc="white" if bound else color,
                    capsize=3,
                    alpha=0.85,
                )
                points.append((x, y, r["id"]))
            ax.axhline(ref, color="grey", ls=":")
            ax.set_xlabel(label)
            if key == "mean_tokens":
                ax.set_xscale("log")
                ax.minorticks_off()
                ticks = [50, 100, 200, 400, 800]
                ax.set_xticks(ticks, [str(t) for t in ticks])
            if col == 0:
                ax.set_ylabel(ylabel)
            ax.margins(x=0.12)
            labels[ax] = points
    legend = (
        (colors["chain"], colors["chain"], "chain, exact step verdicts"),
        (colors["code"], colors["code"], "code tasks, exact line verdicts"),
        (colors["noisy"], colors["noisy"], "noisy or learned verdicts"),
        ("grey", "white", "a bound: a run never reached the level"),
    )
    handles = [Line2D([], [], marker="o", ls="", color=c, mfc=f, label=t) for c, f, t in legend]
    for ax, points in labels.items():
        ax.autoscale_view()
        _place_labels(ax, points)
    fig.legend(
        handles=handles, loc="upper center", ncol=4, frameon=False, bbox_to_anchor=(0.5, 0.955)
    )
    fig.suptitle(
        "Where BoT pays: every stored BoT-vs-GRPO comparison at w_s 0.5 against figures measured "
        "at step 0; bars are 95% intervals over 5 seeds"
    )
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(path, dpi=110)
    plt.close(fig)
