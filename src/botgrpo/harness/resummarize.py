"""`botgrpo summarize`: the summary and plot of finished comparisons, recomputed from their runs.

Reads each comparison folder's ``config.json`` and run records and writes ``summary.md``,
``summary.json`` and ``curves.png`` again, optionally

- with another lead metric or given thresholds (nothing is rerun);
- for a subset of methods, each optionally at one learning rate (``bot@0.0002``);
- merged from several comparisons, e.g. each method at the learning rate where it did best.
  Their runs must be comparable: the same task, starting checkpoint, budget, evaluation and
  reward settings (checked; the learning rate and the seeds may differ).

A folder whose comparison swept learning rates (``lr_sweep.json``) may hold runs of a method at
several rates; unless ``--methods`` names a rate, each method is summarised at the rate its
sweep chose, and the summary shows the sweep.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from botgrpo.folders import (
    atomic_write_text,
    check_folder_kind,
    check_not_busy,
    command_line,
    own_folder,
)
from botgrpo.harness.config import CompareConfig
from botgrpo.harness.results import comparison_records

#: Options that may differ between merged comparisons (they do not change what a run measures,
#: or, for the learning rate, the summary reports it per method).
MAY_DIFFER = ("name", "out_dir", "methods", "seeds", "learning_rate", "method_lrs", "lr_sweep")
MAY_DIFFER += ("workers",)
MAY_DIFFER += ("sweep_seeds", "progress", "thresholds", "metric", "checkpoint_every")


def load_config(root: Path) -> CompareConfig:
    """The CompareConfig a comparison folder was made with."""
    path = root / "config.json"
    if not path.is_file():
        raise ValueError(f"{root} holds no config.json: pass a `botgrpo compare` output folder")
    try:
        raw = json.loads(path.read_text())
    except ValueError as err:
        raise ValueError(f"{path} is not valid JSON ({err}); rerun `botgrpo compare`") from None
    if not isinstance(raw, dict):
        raise ValueError(
            f"{path} must hold the comparison's options as a JSON object, got a "
            f"{type(raw).__name__}; rerun `botgrpo compare` to rewrite it"
        )
    names = {f.name for f in dataclasses.fields(CompareConfig)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items() if k in names}
    try:
        return CompareConfig(**values)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: {err}") from None


def config_from_runs(cfg: CompareConfig, root: Path) -> CompareConfig:
    """``cfg`` (a folder's config.json) with every option its finished runs recorded in their
    ``done.json`` taken from the runs: config.json is a file anyone can edit, the runs' records
    are what was run. A disagreement is said on stderr; runs that disagree among themselves are
    a ValueError."""
    import sys

    settings = []
    for path in sorted((root / "runs").glob("*/done.json")):
        try:
            stored = json.loads(path.read_text()).get("settings")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(stored, dict):
            settings.append((path.parent.name, stored))
    # the rate, seeds and such are each run's own or the summary's (MAY_DIFFER)
    names = {f.name for f in dataclasses.fields(CompareConfig)} - set(MAY_DIFFER)
    changes = {}
    for key in sorted(names & {k for _, s in settings for k in s}):
        values = {
            json.dumps(s[key], sort_keys=True): (run, s[key]) for run, s in settings if key in s
        }
        if len(values) > 1:
            (run_a, a), (run_b, b) = list(values.values())[:2]
            raise ValueError(
                f"the runs of {root} were made with different {key} ({run_a}: {a!r}, {run_b}: "
                f"{b!r}); summarize comparable runs only"
            )
        recorded = next(iter(values.values()))[1]
        if json.loads(json.dumps(getattr(cfg, key), default=list)) != recorded:
            changes[key] = tuple(recorded) if isinstance(recorded, list) else recorded
    if not changes:
        return cfg
    said = "; ".join(f"{k} {getattr(cfg, k)!r} -> {v!r}" for k, v in changes.items())
    print(
        f"summarize: {root / 'config.json'} disagrees with its runs' records ({said}); the "
        "summary uses the runs'",
        file=sys.stderr,
    )
    try:
        return dataclasses.replace(cfg, **changes)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"the runs of {root} recorded settings botgrpo cannot read: {err}"
        ) from None


def _parse_choice(text: str) -> tuple[str, float | None]:
    name, _, lr = text.partition("@")
    try:
        return name, float(lr) if lr else None
    except ValueError:
        raise ValueError(
            f"--methods {text!r}: write METHOD or METHOD@LR, e.g. bot@0.0002"
        ) from None


def select(
    records: list[dict],
    choices: tuple[str, ...],
    swept: dict[str, float] | None = None,
    *,
    chosen_by: str = "its learning-rate sweep chose in lr_sweep.json",
    fix: str = "finish them with the same `botgrpo compare` command, or summarise a rate that "
    "ran with --methods METHOD@RATE and --out",
) -> list[dict]:
    """The records of the chosen methods, each at its chosen rate: the one given in
    ``choices``, else the one a learning-rate sweep chose (``swept``); a method still found at
    several rates must be given one. A method whose rate in ``swept`` has no records is a
    ValueError (never dropped silently), its message naming where the rate came from
    (``chosen_by``) and ``fix``."""
    swept = swept or {}
    wanted: dict[str, float | None] = dict(_parse_choice(c) for c in choices)
    found: dict[str, set] = {}
    for r in records:
        found.setdefault(r["method"], set()).add(r.get("lr"))
    rate = {m: wanted.get(m) or swept.get(m) for m in (wanted or found)}
    records = [
        r for r in records if r["method"] in rate and rate[r["method"]] in (None, r.get("lr"))
    ]
    missing = sorted(set(wanted) - {r["method"] for r in records})
    if missing:
        raise ValueError(f"no finished runs of {', '.join(missing)} (at the rate given)")
    unrun = sorted(set(rate) - set(wanted) - {r["method"] for r in records})
    if unrun:  # a sweep chose a rate whose runs are not finished: never drop the method silently
        m = unrun[0]
        others = ", ".join(f"{lr:g}" for lr in sorted(lr for lr in found[m] if lr is not None))
        raise ValueError(
            f"no finished run of {m} at the rate {chosen_by} ({rate[m]:g}; its runs are at "
            f"{others}): {fix}"
        )
    rates: dict[str, set] = {}
    for r in records:
        rates.setdefault(r["method"], set()).add(r.get("lr"))
    mixed = {m: sorted(v) for m, v in rates.items() if len(v) > 1}
    if mixed:
        m, v = next(iter(mixed.items()))
        raise ValueError(
            f"{m} ran at several learning rates {v}: choose one with --methods {m}@{v[0]:g}"
        )
    return records


def read_sweep(path: Path) -> dict:
    """A comparison's ``lr_sweep.json``, checked: a JSON object whose ``best`` maps each swept
    method to a positive rate and whose ``mean_over_run`` holds a score for each of them.
    ValueError naming the file otherwise."""
    fix = "rerun the comparison's `botgrpo compare` command to rewrite it"
    try:
        report = json.loads(path.read_text())
    except ValueError as err:
        raise ValueError(f"{path} is not valid JSON ({err}); {fix}") from None
    best = report.get("best") if isinstance(report, dict) else None
    scores = report.get("mean_over_run") if isinstance(report, dict) else None
    if not isinstance(best, dict) or not isinstance(scores, dict):
        raise ValueError(f"{path} needs the objects 'best' and 'mean_over_run'; {fix}")
    for m, lr in best.items():
        if isinstance(lr, bool) or not isinstance(lr, int | float) or not 0 < lr < math.inf:
            raise ValueError(f"{path}: best[{m!r}] = {lr!r} is not a learning rate; {fix}")
        if m not in scores:
            raise ValueError(f"{path}: mean_over_run holds no scores of {m!r}; {fix}")
    return report


def sweep_report(roots: list[Path]) -> dict | None:
    """The learning-rate sweeps (lr_sweep.json) of the folders, merged; None when none swept."""
    reports = [
        (root, read_sweep(root / "lr_sweep.json"))
        for root in roots
        if (root / "lr_sweep.json").is_file()
    ]
    if not reports:
        return None
    merged = {k: v for k, v in reports[0][1].items() if k not in ("best", "mean_over_run")}
    merged["best"], merged["mean_over_run"] = {}, {}
    for root, report in reports:
        for key in ("metric", "sweep_seeds"):
            if report.get(key) != merged.get(key):
                raise ValueError(
                    f"the learning-rate sweeps of {reports[0][0]} and {root} differ in {key}: "
                    "summarize them separately"
                )
        for m, lr in report["best"].items():
            if merged["best"].setdefault(m, lr) != lr:
                raise ValueError(
                    f"{m} was swept in two folders with different choices: pick one with "
                    f"--methods {m}@LR"
                )
            merged["mean_over_run"][m] = report["mean_over_run"][m]
    return merged


def _check_comparable(configs: list[CompareConfig], roots: list[Path]) -> None:
    first = dataclasses.asdict(configs[0])
    for cfg, root in zip(configs[1:], roots[1:], strict=True):
        other = dataclasses.asdict(cfg)
        diff = sorted(k for k in first if k not in MAY_DIFFER and first[k] != other[k])
        if diff:
            raise ValueError(
                f"{root} is not comparable with {roots[0]}: "
                + ", ".join(f"{k} {first[k]!r} vs {other[k]!r}" for k in diff)
            )


def _run_seconds(roots: list[Path], lrs: dict[str, float]) -> dict[str, list[float]]:
    """method -> training wall time of each summarised run (method at its chosen rate)."""
    out: dict[str, list[float]] = {}
    for root in roots:
        for path in sorted((root / "runs").glob("*/done.json")):
            try:
                done = json.loads(path.read_text())
                settings = done.get("settings", {})
                method, lr = settings.get("method"), settings.get("learning_rate")
                if method in lrs and (lrs[method] is None or lr in (None, lrs[method])):
                    seconds = float(done["seconds"])
                    if not 0 <= seconds < math.inf:
                        raise ValueError(seconds)
                    out.setdefault(method, []).append(seconds)
            except (ValueError, TypeError, KeyError, AttributeError):
                raise ValueError(
                    f"{path} is not a done.json botgrpo wrote (it needs settings and a number of "
                    "seconds); rerun that run"
                ) from None
    return out


def check_out_folder(out: Path, roots: list[Path]) -> None:
    """ValueError unless ``out`` may receive a summary: one of ``roots`` (in place), a new or
    empty folder, or a folder ``summarize`` wrote before; never a comparison's folder (it holds
    runs), a folder inside one, or a folder of other files."""
    for root in roots:
        if not root.is_dir():
            raise ValueError(f"{root} is not a folder: pass `botgrpo compare` output folders")
    target = out.expanduser().resolve()
    homes = [r.resolve() for r in roots]
    if target in homes:
        if len(set(homes)) > 1:
            raise ValueError(
                f"--out {out} is one of the comparisons being merged: its summary would report "
                "runs its folder does not hold; merge into a new folder"
            )
        check_not_busy(out, "--out")
        return
    inside = [r for r, home in zip(roots, homes, strict=True) if home in target.parents]
    if inside:
        raise ValueError(f"--out {out} lies inside the comparison {inside[0]}; pass a new folder")
    if not target.exists() or not any(target.iterdir()):
        check_folder_kind(out, "summary", what="--out")  # not inside a run or a warm start
        return
    if not target.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    if any((target / part).exists() for part in ("runs", "sweep", "done.json")):
        raise ValueError(
            f"--out {out} is another comparison's folder (it holds its runs); its files would be "
            "overwritten: pass a new folder"
        )
    if not (target / "summary.json").is_file():
        raise ValueError(f"--out {out} holds other files; pass a new or empty folder")
    check_folder_kind(out, "summary", what="--out")
    check_not_busy(out, "--out")


def _check_no_repeats(records: list[dict], per_root: list[tuple[Path, list[dict]]]) -> None:
    """ValueError naming the run and the folders when a (method, seed, step) is recorded twice:
    it would be counted twice."""
    key = lambda r: (r["kind"], r["method"], r["seed"], r["step"])  # noqa: E731
    seen: set = set()
    for r in records:
        if key(r) in seen:
            where = [str(root) for root, rs in per_root if any(key(x) == key(r) for x in rs)]
            said = " and ".join(where[:2])
            raise ValueError(
                f"{r['method']} seed {r['seed']} step {r['step']} is recorded twice (in {said}): "
                "pass each comparison once, and merge comparisons of different seeds only"
            )
        seen.add(key(r))


def _wall_seconds(run_seconds: dict[str, list[float]], workers: int) -> float:
    """Wall time of the chosen runs alone, as ``workers`` at a time would take it."""
    return sum(sum(v) for v in run_seconds.values()) / max(1, workers)


def resummarize(
    roots: list[Path],
    out: Path,
    *,
    methods: tuple[str, ...] = (),
    metric: str | None = None,
    thresholds: tuple[float, ...] = (),
) -> Path:
    """Write summary.md, summary.json and curves.png into ``out`` from the runs of ``roots``;
    returns the path of summary.md."""
    from botgrpo.harness.plots import plot_curves, plot_lr_sweep
    from botgrpo.harness.summary import recorded_wall_seconds, write_summary

    if methods and out.resolve() in {r.resolve() for r in roots}:
        raise ValueError("a subset of methods goes to a new folder: pass --out")
    check_out_folder(out, roots)
    configs = [config_from_runs(load_config(r), r) for r in roots]
    _check_comparable(configs, roots)
    sweep = sweep_report(roots)
    swept = {m: float(lr) for m, lr in (sweep or {}).get("best", {}).items()}
    per_root = [(root, comparison_records(root)) for root in roots]
    records = select([r for _, rs in per_root for r in rs], methods, swept)
    _check_no_repeats(records, per_root)
    names = tuple(sorted({r["method"] for r in records}))
    if not methods:  # never drop a method of the comparisons silently
        for cfg_i, root in zip(configs, roots, strict=True):
            absent = [m for m in cfg_i.methods if m not in names]
            if absent:
                raise ValueError(
                    f"{root} has no finished run of {', '.join(absent)}: finish them with the "
                    "same `botgrpo compare` command, or summarise the others with --methods "
                    "and --out"
                )
    seeds = {r["seed"] for r in records}
    if metric and metric.startswith("greedy") and not configs[0].greedy:
        raise ValueError(
            f"the runs of {roots[0]} were evaluated without greedy completions (--greedy "
            f"false), so they hold no {metric}: summarise a sampled metric (--metric "
            f"sampled_{metric.partition('_')[2]})"
        )
    cfg = dataclasses.replace(
        configs[0],
        name=out.name,
        methods=names,
        method_lrs=tuple(i for i in configs[0].method_lrs if i.partition("=")[0] in names),
        seeds=len(seeds),
        metric=metric or configs[0].metric,
        thresholds=thresholds or configs[0].thresholds,
    )
    lrs = {r["method"]: r["lr"] for r in records if "lr" in r}
    if not any(cfg.metric in r for r in records if r["kind"] == "eval"):
        raise ValueError(
            f"the runs' evaluations hold no {cfg.metric!r}; pick a metric they recorded (--metric)"
        )
    run_seconds = _run_seconds(roots, {m: lrs.get(m) for m in names})
    in_place = out.resolve() in {r.resolve() for r in roots}
    kind = "comparison" if in_place else "summary"
    with own_folder(out, kind, command_line(), also=("summary",), what="--out"):
        if not in_place:  # a comparison's own config.json and metrics.jsonl stay its own
            atomic_write_text(out / "config.json", json.dumps(cfg.__dict__, indent=2, default=list))
            atomic_write_text(out / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in records))
        # in place, the comparison's own summary measured the commands that ran it; a new
        # folder (or a comparison without one) estimates it from its runs' times
        measured = recorded_wall_seconds(out / "summary.json") if in_place else 0.0
        summary = write_summary(
            records,
            cfg,
            lrs,
            out / "summary.md",
            seconds=0.0 if measured else _wall_seconds(run_seconds, cfg.workers),
            run_seconds=run_seconds,
            lr_sweep=sweep,
            earlier_seconds=measured,
        )
        thr = json.loads(summary.with_suffix(".json").read_text())["thresholds"]
        plot_curves(records, out / "curves.png", cfg.metric, f"{cfg.name}: {cfg.task}", thr)
        if sweep:
            summarised = json.loads(summary.with_suffix(".json").read_text())["lr_sweep"]
            plot_lr_sweep(summarised, out / "lr_sweep.png")
        elif not in_place:  # a summary folder reused for runs without a sweep: no stale plot
            (out / "lr_sweep.png").unlink(missing_ok=True)
    return summary
