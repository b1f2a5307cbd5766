"""summary.json and summary.md: what each method learned, how fast, and how sure that is.

The statistics are :mod:`botgrpo.harness.stats`' (thresholds from the start and the plateau,
crossings held for two evaluations, area under the curve, intervals only from three seeds up).
``summary.json`` holds every number for scripts and dashboards; ``summary.md`` leads with a
verdict in words, then the table. Speedups compare bot (and bot_uniform) with grpo and with the
best other baseline (fewest mean steps to the middle threshold among dr_grpo, dapo, gspo, pure).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np

from botgrpo.folders import atomic_write_text
from botgrpo.harness import stats
from botgrpo.harness.config import CompareConfig
from botgrpo.harness.results import EVAL_METRICS, eval_curves, train_means, train_tail_means

BASELINES = ("grpo", "dr_grpo", "dapo", "gspo", "pure")
CHALLENGERS = ("bot", "bot_uniform")


def _metric_stats(curves: stats.Curves, method: str) -> dict[str, float]:
    seeds = curves.get(method, {})
    if not seeds:
        return {}
    finals = [v[-1] for _, v in seeds.values()]
    return {
        "start": float(np.mean([v[0] for _, v in seeds.values()])),
        "final": float(np.mean(finals)),
        "final_sd": float(np.std(finals, ddof=1)) if len(finals) > 1 else 0.0,  # sample sd
        "best": float(max(max(v) for _, v in seeds.values())),
    }


def _problems(cfg: CompareConfig) -> int:
    """Independent problems behind one evaluation of the lead metric."""
    return (
        min(cfg.pass_problems, cfg.eval_problems)
        if cfg.metric.startswith("sampled")
        else (cfg.eval_problems)
    )


def _pairs(methods: list[str], steps_mid: dict[str, list[int | None]], budget: int):
    """(label, baseline, challenger) pairs: each challenger vs grpo and vs the best other."""
    others = [m for m in BASELINES if m in methods and m != "grpo"]
    best = None
    if others and steps_mid:
        best = min(
            others, key=lambda m: np.mean([budget if s is None else s for s in steps_mid[m]])
        )
    elif others:
        best = others[0]
    for c in (c for c in CHALLENGERS if c in methods):
        if "grpo" in methods:
            yield "vs grpo", "grpo", c
        if best is not None:
            yield "vs best other baseline", best, c


def _comparisons(
    curves: dict, steps_at: dict, aucs: dict, thresholds: tuple[float, ...], budget: int
) -> tuple[list[dict], list[dict]]:
    """Speedups at every threshold and AUC differences of each (baseline, challenger) pair,
    paired on the seeds both ran."""
    mid = thresholds[len(thresholds) // 2] if thresholds else None
    speedups, auc_diffs = [], []
    for label, base, chal in _pairs(list(curves), steps_at.get(mid, {}), budget):
        common = sorted(set(curves[base]) & set(curves[chal]))  # pair on the shared seeds
        if not common:
            continue

        def paired(per_method: dict, m: str, common=common) -> list:
            seeds = sorted(curves[m])
            return [per_method[m][seeds.index(seed)] for seed in common]

        for t in thresholds:
            both = {base: paired(steps_at[t], base), chal: paired(steps_at[t], chal)}
            s = stats.speedup(both, base, chal, t, budget)
            if s is not None:
                speedups.append({"label": label, **asdict(s), "censoring": s.censoring()})
        auc_b, auc_c = paired(aucs, base), paired(aucs, chal)
        diff = stats.paired_difference_ci(auc_c, auc_b)
        auc_diffs.append(
            {
                "label": label,
                "baseline": base,
                "method": chal,
                "mean": float(np.mean(auc_c) - np.mean(auc_b)),
                "low": diff[1] if diff else None,
                "high": diff[2] if diff else None,
            }
        )
    return speedups, auc_diffs


def build_summary(
    records: list[dict],
    cfg: CompareConfig,
    lrs: dict[str, float],
    *,
    seconds: float,
    run_seconds: dict[str, list[float]] | None = None,
    lr_sweep: dict | None = None,
    earlier_seconds: float = 0.0,
) -> dict:
    """Every number of the summary as a JSON-ready dict (the content of summary.json);
    ``lr_sweep`` is the learning-rate sweep's report (lr_sweep.json) when rates were swept.
    ``seconds`` is this command's wall time, ``earlier_seconds`` that of the earlier commands
    whose summaries this folder held (a resumed comparison adds its own to theirs)."""
    curves = eval_curves(records, cfg.metric)
    lv = stats.levels(curves, _problems(cfg), cfg.thresholds)
    steps_at = {t: stats.crossings(curves, t) for t in lv.thresholds}
    aucs = stats.auc_gains(curves, lv.start) if curves else {}
    zero = train_means(records, "bot/frac_zero_signal_groups")
    solved_tail = train_tail_means(records, "solved", 10)
    others = {k: eval_curves(records, k) for k in EVAL_METRICS}
    drift = eval_curves(records, "weight_drift")
    methods: dict[str, dict] = {}
    for m in sorted(curves):
        methods[m] = {
            "lr": lrs.get(m, cfg.learning_rate),
            "seeds": sorted(curves[m]),
            "metrics": {k: _metric_stats(c, m) for k, c in others.items() if m in c},
            "steps_to_threshold": {f"{t:g}": steps_at[t][m] for t in lv.thresholds},
            "auc_gain": aucs.get(m, []),
            "auc_gain_mean": float(np.mean(aucs[m])) if m in aucs else None,
            "groups_with_signal": 1 - zero[m] if m in zero else None,
            "train_solved_last10": solved_tail.get(m),
            "weight_drift": _metric_stats(drift, m).get("final"),
            "wall_seconds_per_run": float(np.mean(run_seconds[m]))
            if run_seconds and run_seconds.get(m)
            else None,
        }
    _add_costs(methods, records, cfg.steps)
    speedups, auc_diffs = _comparisons(curves, steps_at, aucs, lv.thresholds, cfg.steps)
    summary = {
        "name": cfg.name,
        "task": cfg.task,
        "metric": cfg.metric,
        "metric_means": EVAL_METRICS[cfg.metric],
        "budget_steps": cfg.steps,
        "eval_every": cfg.eval_every,
        "problems_per_evaluation": _problems(cfg),
        "n_seeds": cfg.seeds,
        "wall_seconds": round(seconds + earlier_seconds, 1),
        "wall_seconds_command": round(seconds, 1),
        "start": lv.start,
        "plateau": lv.plateau,
        "evaluation_se": lv.se,
        "learned": lv.learned,
        "thresholds": list(lv.thresholds),
        "thresholds_given": lv.given,
        "methods": methods,
        "speedups": speedups,
        "auc_differences": auc_diffs,
        "lr_sweep": _sweep_of(lr_sweep, methods) if lr_sweep else None,
        "verdict_noise": cfg.verdict_noise or None,
        "step_verifier": cfg.step_verifier or None,
        "critic_learning_rate": cfg.critic_learning_rate if "ppo" in methods else None,
    }
    if cfg.verdict_noise:
        summary["verdict_noise_on"] = _noise_target(cfg)
    summary["verdict"] = verdict(summary)
    return summary


def _add_costs(methods: dict, records: list[dict], budget: int) -> None:
    """Each method's cost (mean over its runs' cost records): training seconds per step, peak
    memory of the training process, and seconds to each threshold (steps x seconds per step;
    a run that never got there counts at the budget)."""
    for m, info in methods.items():
        costs = [r for r in records if r["kind"] == "cost" and r["method"] == m]
        if not costs:
            info["cost"] = None
            continue
        per_step = float(np.mean([r["seconds_per_step"] for r in costs]))
        cost = {"seconds_per_step": per_step, "runs": len(costs)}
        for key in ("peak_rss_bytes", "cuda_peak_bytes"):
            values = [r[key] for r in costs if key in r]
            if values:
                cost[key] = float(np.max(values))
        cost["seconds_to_threshold"] = {
            t: per_step * float(np.mean([budget if x is None else x for x in steps]))
            for t, steps in info["steps_to_threshold"].items()
        }
        info["cost"] = cost


def _cost_table(s: dict) -> list[str]:
    """Seconds per step, peak memory and seconds to the thresholds, per method."""
    rows = [(m, info["cost"]) for m, info in s["methods"].items() if info.get("cost")]
    if not rows:
        return []
    thr = s["thresholds"]
    gpu = any("cuda_peak_bytes" in c for _, c in rows)
    head = (
        "| method | s / step (training) | peak RSS | "
        + ("CUDA peak | " if gpu else "")
        + "".join(f"s to {t:.3f} | " for t in thr)
    )
    lines = ["Costs (means over runs; peaks: the largest run's):", "", head]
    lines.append("|" + "---|" * (head.count("|") - 1))
    for m, c in rows:
        cells = [m, f"{c['seconds_per_step']:.2f}", _gib(c.get("peak_rss_bytes"))]
        if gpu:
            cells.append(_gib(c.get("cuda_peak_bytes")))
        cells += [f"{c['seconds_to_threshold'][f'{t:g}']:.0f}" for t in thr]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _gib(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**30:.2f} GiB"


def _sweep_of(report: dict, methods: dict) -> dict:
    """The sweep's report restricted to the summarised methods."""
    return {
        **report,
        "best": {m: v for m, v in report["best"].items() if m in methods},
        "mean_over_run": {m: v for m, v in report["mean_over_run"].items() if m in methods},
    }


def _sweep_table(sweep: dict, used: dict[str, float] | None = None) -> list[str]:
    """The learning-rate sweep as a table: the score of every (method, rate), chosen in bold;
    a sentence for each method the summary reads at another rate (``used``: method -> rate,
    e.g. ``summarize --methods grpo@4e-4``)."""
    rates = sorted({float(lr) for by_lr in sweep["mean_over_run"].values() for lr in by_lr})
    n = sweep.get("sweep_seeds", 1)
    lines = [
        f"Learning rates, chosen per method on the {sweep.get('stream', 'validation')} stream "
        f"(never the reported problems): the highest mean `{sweep.get('metric', 'lead metric')}` "
        f"over the run, {n} seed{'s' * (n != 1)} per rate.",
        "",
        "| method | " + " | ".join(f"lr {lr:g}" for lr in rates) + " | chosen |",
        "|---|" + "---|" * (len(rates) + 1),
    ]
    for m, by_lr in sweep["mean_over_run"].items():
        best = float(sweep["best"][m])
        cells = []
        for lr in rates:
            v = next((x for k, x in by_lr.items() if float(k) == lr), None)
            text = _fmt(v, ".3f")
            cells.append(f"**{text}**" if lr == best and v is not None else text)
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {best:g} |")
    edges = sweep_edges(sweep)
    other = [
        f"{m} is summarised at {used[m]:g}, not at the rate its sweep chose ({float(best):g}): "
        "this summary's figures for it are not at its tuned rate."
        for m, best in sweep["best"].items()
        if used and m in used and not math.isclose(float(used[m]), float(best))
    ]
    if edges or other:
        lines += ["", *edges, *other]
    return lines


def sweep_edges(sweep: dict) -> list[str]:
    """A sentence per method whose chosen rate is the lowest or the highest it tried (of two or
    more): the best rate may lie beyond the grid, so the comparison may hold that method below
    its best. ``sweep``: a learning-rate sweep's report (lr_sweep.json)."""
    out = []
    for m, by_lr in sweep["mean_over_run"].items():
        tried = sorted(float(lr) for lr in by_lr)
        best = float(sweep["best"][m])
        if len(tried) < 2 or best not in (tried[0], tried[-1]):
            continue
        side, more = ("lowest", "lower") if best == tried[0] else ("highest", "higher")
        out.append(
            f"{m} chose {best:g}, the {side} rate it tried: a {more} one may do better; add one "
            "to the sweep (--lr-sweep)."
        )
    return out


def _learning_sentence(s: dict) -> str:
    metric, se = s["metric"], s["evaluation_se"]
    parts = []
    for m, info in s["methods"].items():
        st = info["metrics"].get(metric, {})
        gain = st.get("final", 0) - st.get("start", 0)
        tag = "" if abs(gain) >= stats.NOISE_SE * se else ", inside noise"
        parts.append(f"{m} {st.get('start', 0):.2f} -> {st.get('final', 0):.2f} ({gain:+.2f}{tag})")
    head = (
        "Learning is clear of evaluation noise"
        if s["learned"]
        else "**No method learned beyond evaluation noise**"
    )
    return (
        f"{head} ({metric}, start -> final, one evaluation's standard error {se:.3f}): "
        + "; ".join(parts)
        + "."
    )


def _speed_sentence(sp: dict, n_seeds: int, given: bool = False) -> str:
    """The speed comparison at the middle threshold in words; ``n_seeds``: the pair's seeds,
    ``given``: the thresholds were the user's (then the middle one is not half-way)."""
    base, meth, ratio = sp["baseline"], sp["method"], sp["ratio"]
    faster, slower = (meth, base) if ratio >= 1 else (base, meth)
    factor = ratio if ratio >= 1 else 1 / ratio
    how = (
        "the middle one of the thresholds given"
        if given
        else "half-way from the start to the plateau"
    )
    where = f"To reach {sp['threshold']:.3f} ({how})"
    if round(factor, 2) == 1.0:
        text = f"{where}, {meth} and {base} needed the same number of steps (ratio {ratio:.2f})"
    else:
        text = (
            f"{where}, {faster} needed {factor:.2f}x fewer steps than {slower} (steps of "
            f"{base} / steps of {meth} = {ratio:.2f})"
        )
    if sp["censoring"]:
        text += f"; {sp['censoring']}"
    if sp["low"] is None:
        return (
            text + f". From {n_seeds} seed{'s' * (n_seeds != 1)} this is one observation with no "
            f"interval, not evidence of a difference: run with --seeds 5 for a 95% interval."
        )
    ci = f"95% interval {sp['low']:.2f}-{sp['high']:.2f} over {sp['n_seeds']} seeds"
    if sp["low"] > 1:
        return text + f". {ci}: {meth} learned faster, and the interval excludes equal speed."
    if sp["high"] < 1:
        return text + f". {ci}: {base} learned faster, and the interval excludes equal speed."
    return text + f". {ci} includes 1: no reliable difference in speed."


def verdict(s: dict) -> list[str]:
    """The summary's conclusions in words, one sentence per finding."""
    out = [_learning_sentence(s)]
    if not s["learned"]:
        out.append(
            "Steps-to-threshold and speedups would measure noise here, so none are reported: "
            "train longer, or use a warm start that RL can improve (docs/tasks.md)."
        )
        return out
    mid = s["thresholds"][len(s["thresholds"]) // 2]
    timed = {sp["label"] for sp in s["speedups"] if sp["threshold"] == mid}
    for d in s["auc_differences"]:  # one per pair: say why a pair has no speed ratio
        if d["label"] not in timed:
            out.append(
                f"{d['label']}: no speed ratio at {mid:.3f}: neither {d['method']} nor "
                f"{d['baseline']} ever held it, or a run was there from step 0, so steps to it "
                "compare nothing (the table gives each method's steps)."
            )
    for sp in s["speedups"]:
        if sp["threshold"] == mid:
            seeds = sp.get("n_seeds") or s["n_seeds"]  # the pair's seeds, not every method's
            given = bool(s.get("thresholds_given"))
            out.append(f"{sp['label']}: " + _speed_sentence(sp, seeds, given))
    for d in s["auc_differences"]:
        text = (
            f"Mean gain over the run (area under the curve) {d['method']} - {d['baseline']}: "
            f"{d['mean']:+.3f}"
        )
        if d["low"] is None:
            text += " (no interval below 3 seeds)."
        else:
            text += f" (95% interval {d['low']:+.3f} to {d['high']:+.3f})."
        out.append(text)
    return out


def _strict(value):
    """``value`` with every non-finite float (a diverged run's loss mean) as None, so
    summary.json is strict JSON that any parser reads (``NaN`` and ``Infinity`` are not)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


def _fmt(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _steps_cell(steps: list[float | None], budget: int) -> str:
    reached = [s for s in steps if s is not None]
    if not reached:
        return f"> {budget}"
    mean = np.mean([budget if s is None else s for s in steps])
    miss = len(steps) - len(reached)
    return f"{mean:.0f}" + (f" ({miss} never)" if miss else "")


def _table(s: dict) -> list[str]:
    metric, thr = s["metric"], s["thresholds"]
    head = (
        f"| method | lr | seeds | {metric}: start -> final (sd) | best | "
        + "".join(f"steps to {t:.3f} | " for t in thr)
        + "AUC gain | greedy solved | greedy step acc | sampled step acc | groups with signal "
        "| train solved (last 10) | weight drift |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for m, info in s["methods"].items():
        st = info["metrics"][metric]
        final = {k: info["metrics"].get(k, {}).get("final") for k in EVAL_METRICS}
        cells = [
            m,
            f"{info['lr']:g}",
            str(len(info["seeds"])),
            f"{st['start']:.3f} -> {st['final']:.3f}"
            + (f" ({st['final_sd']:.3f})" if len(info["seeds"]) > 1 else " (1 seed: no sd)"),
            f"{st['best']:.3f}",
            *(_steps_cell(info["steps_to_threshold"][f"{t:g}"], s["budget_steps"]) for t in thr),
            _fmt(info["auc_gain_mean"], "+.3f"),
            _fmt(final["greedy_solved"], ".3f"),
            _fmt(final["greedy_step_acc"], ".3f"),
            _fmt(final["sampled_step_acc"], ".3f"),
            _fmt(info["groups_with_signal"], ".0%"),
            _fmt(info["train_solved_last10"], ".3f"),
            _fmt(info["weight_drift"], ".2e"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_markdown(s: dict) -> str:
    """summary.md from the summary dict."""
    lines = [
        f"# {s['name']}: {s['task']}, {len(s['methods'])} methods x {_seed_count(s)}, "
        f"{s['budget_steps']} steps",
        "",
        *(f"- {v}" for v in s["verdict"]),
        "",
        *(
            [_noise_line(s["verdict_noise"], s.get("verdict_noise_on") == "lines"), ""]
            if s.get("verdict_noise")
            else []
        ),
        *(
            [
                f"Training verdicts: from the learned verifier `{s['step_verifier']}` "
                "(`--step-verifier`); evaluations read the task's exact verdicts, and "
                "outcome-only methods see no verdicts.",
                "",
            ]
            if s.get("step_verifier")
            else []
        ),
        *(
            [f"ppo's critic trains at {s['critic_learning_rate']:g} (its own rate).", ""]
            if s.get("critic_learning_rate")
            else []
        ),
        *_table(s),
        "",
        *_cost_table(s),
        *(
            [*_sweep_table(s["lr_sweep"], {m: i["lr"] for m, i in s["methods"].items()}), ""]
            if s.get("lr_sweep")
            else []
        ),
        f"Lead metric `{s['metric']}`: {s['metric_means']}, on {s['problems_per_evaluation']} "
        f"held-out problems every {s['eval_every']} steps. Thresholds: "
        + (
            "given. "
            if s["thresholds_given"]
            else "25/50/75% of the way from the start to the plateau (the best method's mean "
            "over its last third of evaluations). "
        )
        + "Steps to a threshold: the first evaluation at or above it whose next evaluation is "
        "too, read off the line from the evaluation before it, mean over seeds (never = counted "
        "at the budget). AUC gain: mean gain over the start "
        "across the run. Intervals: paired bootstrap over seeds, from 3 seeds up. Weight drift: "
        "||theta - theta_0|| / ||theta_0|| at the end.",
        f"{_wall_line(s)} Plot: curves.png. Every number: summary.json. Raw records: "
        "metrics.jsonl.",
    ]
    return "\n".join(lines) + "\n"


def _seed_count(s: dict) -> str:
    """``5 seeds``, or ``3-5 seeds`` when the methods ran different numbers (merged runs)."""
    counts = {len(info["seeds"]) for info in s["methods"].values()} or {s["n_seeds"]}
    low, high = min(counts), max(counts)
    text = f"{low}" if low == high else f"{low}-{high}"
    return f"{text} seed{'s' if high != 1 else ''}"


def _noise_target(cfg) -> str:
    """What the comparison's verdict noise changes: "lines" (a code task's line penalties,
    botgrpo.tasks.NoisyLines) or "steps" (step verdicts). A task that no longer loads (a
    re-summary after its data moved) is read by its name: the built-in code tasks change lines."""
    from botgrpo.tasks import load_task

    try:
        own = getattr(load_task(cfg.task), "reward_function", None)
    except (ValueError, OSError, ImportError):
        return "lines" if cfg.task.split(":")[0] in ("react", "python") else "steps"
    return "lines" if callable(own) else "steps"


def _noise_line(spec: str, lines: bool = False) -> str:
    """What the training verdicts were, for a comparison with noisy verdicts (``lines``: the
    line penalties of a code task)."""
    from botgrpo.tasks.noise import VerdictNoise

    return (
        f"Training verdicts: {VerdictNoise.parse(spec).describe(lines)} "
        f"(`--verdict-noise {spec}`); evaluations read clean verdicts, and outcome-only "
        "methods see no verdicts."
    )


def recorded_wall_seconds(path: Path) -> float:
    """The wall time a folder's ``summary.json`` recorded for the commands that built it (0
    without a usable one)."""
    try:
        seconds = float(json.loads(path.read_text())["wall_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0
    return seconds if math.isfinite(seconds) and seconds > 0 else 0.0


def _wall_line(s: dict) -> str:
    """The wall time of the commands that built the folder, this command's share when earlier
    ones count too, and a run's own: a resumed comparison reuses finished runs."""
    per_run = [
        info["wall_seconds_per_run"]
        for info in s["methods"].values()
        if info.get("wall_seconds_per_run")
    ]
    command = s.get("wall_seconds_command", s["wall_seconds"])
    line = f"Wall time {s['wall_seconds'] / 60:.1f} min"
    if command < s["wall_seconds"]:
        line += f", {command / 60:.1f} of them this command's"
    reused = bool(per_run) and command < 0.5 * min(per_run)  # far under one run
    if reused:
        line += " (runs finished before were reused, not rerun)"
    if per_run:
        line += f"; a run takes {np.mean(per_run) / 60:.1f} min on average"
    return line + "."


def write_summary(
    records: list[dict],
    cfg: CompareConfig,
    lrs: dict[str, float],
    out: Path,
    *,
    seconds: float,
    run_seconds: dict[str, list[float]] | None = None,
    lr_sweep: dict | None = None,
    earlier_seconds: float = 0.0,
) -> Path:
    """Write summary.md (``out``) and summary.json beside it, print the markdown."""
    summary = build_summary(
        records,
        cfg,
        lrs,
        seconds=seconds,
        run_seconds=run_seconds,
        lr_sweep=lr_sweep,
        earlier_seconds=earlier_seconds,
    )
    atomic_write_text(out.with_suffix(".json"), json.dumps(_strict(summary), indent=2))
    text = render_markdown(summary)
    atomic_write_text(out, text)
    print(text)
    return out
