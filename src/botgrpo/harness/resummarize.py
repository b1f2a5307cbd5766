"""`botgrpo summarize`: the summary and plot of finished comparisons, recomputed from their runs.

Reads each comparison folder's ``config.json`` and run records and writes ``summary.md``,
``summary.json`` and ``curves.png`` again, optionally

- with another lead metric or given thresholds (nothing is rerun);
- for a subset of methods, each optionally at one learning rate (``bot@0.0002``);
- merged from several comparisons, e.g. each method at the learning rate where it did best.
  Their runs must be comparable: the same task, starting checkpoint, budget, evaluation and
  reward settings (checked; the learning rate and the seeds may differ).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from botgrpo.harness.config import CompareConfig
from botgrpo.harness.results import load_records

#: Options that may differ between merged comparisons (they do not change what a run measures,
#: or, for the learning rate, the summary reports it per method).
MAY_DIFFER = ("name", "out_dir", "methods", "seeds", "learning_rate", "method_lrs", "lr_sweep")
MAY_DIFFER += ("workers",)
MAY_DIFFER += ("sweep_seeds", "progress", "thresholds", "metric")


def load_config(root: Path) -> CompareConfig:
    """The CompareConfig a comparison folder was made with."""
    path = root / "config.json"
    if not path.is_file():
        raise ValueError(f"{root} holds no config.json: pass a `botgrpo compare` output folder")
    raw = json.loads(path.read_text())
    names = {f.name for f in dataclasses.fields(CompareConfig)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items() if k in names}
    return CompareConfig(**values)


def _run_records(root: Path) -> list[dict]:
    """Every record of the comparison's finished runs (its runs/ folders, else metrics.jsonl)."""
    done = sorted(p.parent for p in (root / "runs").glob("*/done.json"))
    if done:
        return [r for d in done for r in load_records(d / "metrics.jsonl")]
    if (root / "metrics.jsonl").is_file():
        return load_records(root / "metrics.jsonl")
    raise ValueError(f"{root} holds no finished runs")


def _parse_choice(text: str) -> tuple[str, float | None]:
    name, _, lr = text.partition("@")
    try:
        return name, float(lr) if lr else None
    except ValueError:
        raise ValueError(
            f"--methods {text!r}: write METHOD or METHOD@LR, e.g. bot@0.0002"
        ) from None


def select(records: list[dict], choices: tuple[str, ...]) -> list[dict]:
    """The records of the chosen methods (each at its chosen rate, when given); a method found
    at several rates must be given one."""
    if choices:
        wanted = dict(_parse_choice(c) for c in choices)
        records = [
            r
            for r in records
            if r["method"] in wanted and wanted[r["method"]] in (None, r.get("lr"))
        ]
        missing = sorted(set(wanted) - {r["method"] for r in records})
        if missing:
            raise ValueError(f"no finished runs of {', '.join(missing)} (at the rate given)")
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


def _run_seconds(roots: list[Path], methods: set[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for root in roots:
        for path in sorted((root / "runs").glob("*/done.json")):
            done = json.loads(path.read_text())
            method = done.get("settings", {}).get("method")
            if method in methods:
                out.setdefault(method, []).append(float(done["seconds"]))
    return out


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
    from botgrpo.harness.plots import plot_curves
    from botgrpo.harness.summary import write_summary

    if methods and out.resolve() in {r.resolve() for r in roots}:
        raise ValueError("a subset of methods goes to a new folder: pass --out")
    configs = [load_config(r) for r in roots]
    _check_comparable(configs, roots)
    records = select([r for root in roots for r in _run_records(root)], methods)
    # the same (method, seed, step) from two folders would be counted twice
    seen = {(r["kind"], r["method"], r["seed"], r["step"]) for r in records}
    if len(seen) < len(records):
        raise ValueError("the folders hold the same runs twice: pass each comparison once")
    names = tuple(sorted({r["method"] for r in records}))
    seeds = {r["seed"] for r in records}
    cfg = dataclasses.replace(
        configs[0],
        name=out.name,
        methods=names,
        seeds=len(seeds),
        metric=metric or configs[0].metric,
        thresholds=thresholds or configs[0].thresholds,
    )
    lrs = {r["method"]: r["lr"] for r in records if "lr" in r}
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg.__dict__, indent=2, default=list))
    with (out / "metrics.jsonl").open("w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    run_seconds = _run_seconds(roots, set(names))
    summary = write_summary(
        records,
        cfg,
        lrs,
        out / "summary.md",
        seconds=_wall_seconds(run_seconds, cfg.workers),
        run_seconds=run_seconds,
    )
    thr = json.loads(summary.with_suffix(".json").read_text())["thresholds"]
    plot_curves(records, out / "curves.png", cfg.metric, f"{cfg.name}: {cfg.task}", thr)
    return summary
