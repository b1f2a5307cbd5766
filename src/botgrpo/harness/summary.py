"""summary.md: steps to thresholds, final accuracy, speedups with bootstrap intervals.

- Thresholds: given, or 25/50/75% of the way from the starting accuracy (step 0) to the best
  mean accuracy any method reached.
- Steps-to-threshold per run: the first evaluation step at or above the threshold; a run that
  never gets there counts at the budget (its ratio is then a bound) and is reported as censored.
- Speedup of bot: mean steps of the baseline / mean steps of bot over seeds, with a paired
  percentile-bootstrap 95% interval (botgrpo.metrics.bootstrap_ratio_ci); against grpo and
  against the best other baseline (lowest mean steps among grpo, dr_grpo, dapo, gspo, pure).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from botgrpo.harness.config import CompareConfig
from botgrpo.harness.results import eval_curves, train_means
from botgrpo.metrics import bootstrap_ratio_ci, steps_to_threshold

BASELINES = ("grpo", "dr_grpo", "dapo", "gspo", "pure")


def pick_thresholds(curves: dict, given: tuple[float, ...]) -> list[float]:
    """The given thresholds, or 25/50/75% from the start accuracy to the best mean accuracy."""
    if given:
        return sorted(given)
    starts = [v[0] for seeds in curves.values() for _, v in seeds.values()]
    start = float(np.mean(starts))
    best = max(
        float(np.max(np.mean([v for _, v in seeds.values()], axis=0))) for seeds in curves.values()
    )
    return [round(start + f * (best - start), 3) for f in (0.25, 0.5, 0.75)] if best > start else []


def run_steps(curves: dict, threshold: float) -> dict[str, list[int | None]]:
    """method -> steps-to-threshold of each seed (None: not reached), seeds in order."""
    return {
        m: [steps_to_threshold(s, v, threshold) for _, (s, v) in sorted(seeds.items())]
        for m, seeds in curves.items()
    }


def _fmt_steps(steps: list[int | None], budget: int) -> str:
    reached = [s for s in steps if s is not None]
    if not reached:
        return f"> {budget}"
    mean = np.mean([budget if s is None else s for s in steps])
    miss = len(steps) - len(reached)
    return f"{mean:.0f}" + (f" ({miss} not reached)" if miss else "")


def _censor_note(base: list, bot: list) -> str:
    """Which way runs that never reached the threshold (counted at the budget) bias the ratio."""
    n_base, n_bot = sum(s is None for s in base), sum(s is None for s in bot)
    if n_base and n_bot:
        return f"; {n_base} + {n_bot} runs censored on both sides: not a bound either way"
    if n_base:
        return f"; {n_base} baseline runs censored at the budget: the ratio is a lower bound"
    if n_bot:
        return f"; {n_bot} bot runs censored at the budget: the ratio is an upper bound"
    return ""


def noise_warning(curves: dict, thresholds: list[float], n_problems: int) -> str | None:
    """A warning when the thresholds span less than 3 binomial standard errors of one
    evaluation (sqrt(p (1 - p) / n) at the start accuracy): steps-to-threshold then measures
    evaluation noise, not learning."""
    if not thresholds:
        return None
    starts = [v[0] for seeds in curves.values() for _, v in seeds.values()]
    p = min(max(float(np.mean(starts)), 1.0 / n_problems), 1 - 1.0 / n_problems)
    se = float(np.sqrt(p * (1 - p) / n_problems))
    span = thresholds[-1] - float(np.mean(starts))
    if span >= 3 * se:
        return None
    return (
        f"**Warning: within evaluation noise.** The thresholds lie {span:.3f} above the start "
        f"accuracy {np.mean(starts):.3f}, less than 3 standard errors of one evaluation on "
        f"{n_problems} problems (SE {se:.3f}): the accuracies barely moved, so these "
        "speedups measure noise, not learning. Train longer, or change the task or the rate."
    )


def speedup_lines(steps: dict, threshold: float, budget: int) -> list[str]:
    """Speedup of bot vs grpo and vs the best other baseline at one threshold."""
    if "bot" not in steps:
        return []
    lines = []
    censored = {m: [budget if s is None else s for s in v] for m, v in steps.items()}
    others = [m for m in BASELINES if m in steps]
    best = min(others, key=lambda m: np.mean(censored[m])) if others else None
    pairs = [("grpo", "grpo" if "grpo" in steps else None)]
    if best is not None and best != "grpo":
        pairs.append(("best baseline", best))
    for name, base in pairs:
        if base is None or any(s == 0 for s in censored[base] + censored["bot"]):
            continue
        ci = bootstrap_ratio_ci(steps[base], steps["bot"], budget=budget, seed=0)
        lines.append(
            f"- accuracy >= {threshold:.3f}: {base} / bot = **{ci.ratio:.2f}x** "
            f"(95% CI {ci.low:.2f}-{ci.high:.2f}, {ci.n_seeds} seeds"
            f"{_censor_note(steps[base], steps['bot'])}) [{name}]"
        )
    return lines


def final_eval_means(records: list[dict], key: str) -> dict[str, float]:
    """method -> mean over seeds of ``key`` in each run's last evaluation (runs lacking it skip)."""
    last: dict[tuple[str, int], dict] = {}
    for r in records:
        if r.get("kind") == "eval" and key in r:
            k = (r["method"], r["seed"])
            if k not in last or r["step"] >= last[k]["step"]:
                last[k] = r
    by_method: dict[str, list[float]] = {}
    for (m, _), r in last.items():
        by_method.setdefault(m, []).append(float(r[key]))
    return {m: float(np.mean(v)) for m, v in by_method.items()}


def _cell(values: dict[str, float], m: str, fmt: str) -> str:
    return format(values[m], fmt) if m in values else "-"


def write_summary(
    records: list[dict], cfg: CompareConfig, lrs: dict[str, float], out: Path, *, seconds: float
) -> Path:
    """Write summary.md and print it."""
    curves = eval_curves(records)
    thresholds = pick_thresholds(curves, cfg.thresholds)
    steps_at = {t: run_steps(curves, t) for t in thresholds}
    zero = train_means(records, "bot/frac_zero_signal_groups")
    step_acc = final_eval_means(records, "step_accuracy")
    drift = final_eval_means(records, "weight_drift")
    head = (
        "| method | lr | final acc (mean ± sd) | best acc | "
        + " | ".join(f"steps to {t:.3f}" for t in thresholds)
        + " | groups with signal | final step acc | weight drift |"
    )
    lines = [
        f"# {cfg.name}: {cfg.task}, {len(cfg.methods)} methods x {cfg.seeds} seeds, "
        f"{cfg.steps} steps",
        "",
        head,
        "|" + "---|" * (head.count("|") - 1),
    ]
    for m, seeds in sorted(curves.items()):
        finals = [v[-1] for _, v in seeds.values()]
        best = max(max(v) for _, v in seeds.values())
        cells = [_fmt_steps(steps_at[t][m], cfg.steps) for t in thresholds]
        signal = f"{1 - zero[m]:.0%}" if m in zero else "-"
        lines.append(
            f"| {m} | {lrs.get(m, cfg.learning_rate):g} | {np.mean(finals):.3f} ± "
            f"{np.std(finals):.3f} | {best:.3f} | "
            + " | ".join(cells)
            + f" | {signal} | {_cell(step_acc, m, '.3f')} | {_cell(drift, m, '.2e')} |"
        )
    lines += ["", "Speedups (ratio of mean steps-to-threshold, paired bootstrap over seeds):"]
    warning = noise_warning(curves, thresholds, cfg.eval_problems)
    if warning:
        lines += ["", warning, ""]
    for t in thresholds:
        lines += speedup_lines(steps_at[t], t, cfg.steps) or [f"- accuracy >= {t:.3f}: n/a"]
    lines += [
        "",
        f"Evaluation: greedy accuracy on {cfg.eval_problems} held-out problems every "
        f"{cfg.eval_every} steps; {cfg.prompts_per_step} prompts x {cfg.num_generations} "
        f"rollouts per step; w_g = {cfg.w_g}, w_s = {cfg.w_s}. Wall time {seconds / 60:.1f} min.",
        "Final step acc: share of correct steps in the greedy completions at the last evaluation. "
        "Weight drift: ||theta - theta_0|| / ||theta_0|| at the end, the distance each method "
        "moved its weights (a method can look faster just by moving further per step).",
        "Plot: curves.png. Raw records: metrics.jsonl.",
    ]
    text = "\n".join(lines) + "\n"
    out.write_text(text)
    print(text)
    return out
