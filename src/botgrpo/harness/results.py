"""Reading run records: metrics.jsonl files into curves per (method, seed)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path


def load_records(path: str | Path) -> list[dict]:
    """Every JSON line of a metrics file."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def collect(run_dirs: list[Path], out: Path) -> None:
    """Concatenate the runs' metrics.jsonl files into ``out``."""
    with out.open("w") as fh:
        for d in run_dirs:
            fh.write((d / "metrics.jsonl").read_text())


def eval_curves(
    records: list[dict], key: str = "accuracy"
) -> dict[str, dict[int, tuple[list, list]]]:
    """method -> seed -> (steps, values) of the eval records, sorted by step."""
    out: dict[str, dict[int, tuple[list, list]]] = defaultdict(dict)
    rows = sorted(
        (r for r in records if r["kind"] == "eval" and key in r),
        key=lambda r: (r["method"], r["seed"], r["step"]),
    )
    for r in rows:
        steps, values = out[r["method"]].setdefault(r["seed"], ([], []))
        steps.append(r["step"])
        values.append(r[key])
    return out


def train_means(records: list[dict], key: str) -> dict[str, float]:
    """method -> mean of a training-log key over all its steps and seeds."""
    sums: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r["kind"] == "train" and key in r:
            sums[r["method"]].append(r[key])
    return {m: sum(v) / len(v) for m, v in sums.items()}
