"""Reading run records: metrics.jsonl files into curves per (method, seed)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

#: Metric key -> what it measures (keys of an evaluation record in metrics.jsonl).
EVAL_METRICS = {
    "greedy_solved": "held-out problems solved by the greedy completion",
    "greedy_step_acc": "correct steps among the greedy completions' steps",
    "sampled_solved": "held-out problems solved by a completion sampled at the training "
    "temperature (pass@1)",
    "sampled_step_acc": "correct steps among the sampled completions' steps",
    "greedy_compiled": "greedy completions that compile (code tasks: React compiles and "
    "renders; Python parses and raises no error)",
    "sampled_compiled": "sampled completions that compile (the paper's compile rate)",
    "greedy_clean": "greedy completions that compile with no error-level diagnostic",
    "sampled_clean": "sampled completions that compile with no error-level diagnostic",
}

#: Metrics a task reports only when its scores carry them (``Score.metrics``), by base name.
TASK_METRICS = ("compiled", "clean")


def load_records(path: str | Path) -> list[dict]:
    """Every JSON line of a metrics file; ValueError naming the file and line of a line that is
    not a record (see :func:`_record_problem`): no summary is computed from it."""
    records = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason}); rerun that run") from None
    except OSError as err:
        raise ValueError(f"cannot read {path} ({err.strerror or err}); rerun that run") from None
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as err:
            raise ValueError(f"{path}:{n}: not valid JSON ({err}); rerun that run") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{n}: a record must be a JSON object, got {line[:40]!r}")
        problem = _record_problem(record)
        if problem:
            raise ValueError(f"{path}:{n}: {problem}; rerun that run")
        records.append(record)
    return records


def _record_problem(record: dict) -> str:
    """What is wrong with a metrics record, in words ('' when nothing): ``kind`` and ``method``
    are strings, ``seed`` and ``step`` whole numbers >= 0, every other value a number, finite
    in evaluations (a training record may log a diverged loss)."""
    for key in ("kind", "method"):
        if not isinstance(record.get(key), str):
            return f"{key} must be a string, got {record.get(key)!r}"
    for key in ("seed", "step"):
        value = record.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"{key} must be a whole number >= 0, got {value!r}"
    for key, value in record.items():
        if key in ("kind", "method", "seed", "step"):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{key} must be a number, got {value!r}"
        if not math.isfinite(value) and record["kind"] in ("eval", "cost"):  # a loss may diverge
            return f"{key} is {value}"
        if record["kind"] == "cost" and value < 0:
            return f"{key} is a cost, so >= 0; got {value}"
        rate = key in EVAL_METRICS or key.startswith("pass@")
        if rate and record["kind"] == "eval" and not 0 <= value <= 1:
            return f"{key} is a rate, so in [0, 1]; got {value}"
    return ""


def comparison_records(root: str | Path) -> list[dict]:
    """Every record of a comparison's finished runs: ``runs/*/metrics.jsonl`` of the runs that
    wrote ``done.json`` (what a resumed comparison builds on), else the merged
    ``metrics.jsonl`` (:func:`collect`) that a copy of the comparison may keep alone.
    ValueError naming the folder when it keeps neither."""
    root = Path(root)
    done = sorted(p.parent for p in (root / "runs").glob("*/done.json"))
    if done:
        return [r for d in done for r in _finished_run_records(d)]
    if (root / "metrics.jsonl").is_file():
        records = load_records(root / "metrics.jsonl")
        _check_merged_grid(root, records)
        return records
    raise ValueError(
        f"{root} keeps no runs' records (runs/*/metrics.jsonl with done.json, or a merged "
        "metrics.jsonl): no run of the comparison has finished there"
    )


def _finished_run_records(run_dir: Path) -> list[dict]:
    """The records of a finished run, checked whole: a finished run evaluated at step 0 and at
    its last step (its ``done.json`` names the budget), so records that stop short were cut
    (a truncated or emptied ``metrics.jsonl``) and would pass for a run that learned less."""
    records = load_records(run_dir / "metrics.jsonl")
    path = run_dir / "done.json"
    try:
        done = json.loads(path.read_text())
    except (OSError, ValueError):
        done = None
    settings = done.get("settings") if isinstance(done, dict) else None
    if isinstance(done, dict) and settings is None and "settings" not in done:
        return records  # recorded before settings were: nothing to check against
    steps = settings.get("steps") if isinstance(settings, dict) else None
    seconds = done.get("seconds") if isinstance(done, dict) else None
    number = isinstance(seconds, int | float) and not isinstance(seconds, bool)
    if not isinstance(steps, int) or isinstance(steps, bool) or not number:
        raise ValueError(
            f"{path} is not a done.json botgrpo wrote (it needs the run's settings with its "
            "steps, and a number of seconds): delete that run folder and run the comparison's "
            "command again to train it anew"
        )
    claimed = (settings.get("method"), settings.get("seed")) if isinstance(settings, dict) else None
    others = sorted({(r["method"], r["seed"]) for r in records} - {claimed}, key=str)
    if claimed and None not in claimed and others:
        raise ValueError(
            f"{run_dir}: its done.json is {claimed[0]} seed {claimed[1]} but its metrics.jsonl "
            f"holds records of {others[0][0]} seed {others[0][1]}: the folder mixes runs; "
            "delete it and run the comparison's command again to train it anew"
        )
    evals = {r["step"] for r in records if r["kind"] == "eval"}
    every = settings.get("eval_every") if isinstance(settings, dict) else None
    missing = missing_evaluations(evals, steps, every if isinstance(every, int) else None)
    if not missing:
        return records
    raise ValueError(
        f"{run_dir} is finished (done.json) but its metrics.jsonl "
        + ("holds no evaluation" if not evals else f"has no evaluation at {_steps_text(missing)}")
        + f" of its {steps} steps: its records were cut; delete that run folder and run the "
        "comparison's command again to train it anew"
    )


def missing_evaluations(evals: set[int], steps: int, eval_every: int | None) -> list[int]:
    """The evaluation steps a finished run of ``steps`` steps lacks: step 0, every multiple of
    ``eval_every`` (when known and >= 1) and the last step."""
    grid = {0, steps}
    if eval_every is not None and eval_every >= 1:
        grid.update(range(0, steps + 1, eval_every))
    return sorted(grid - evals)


def _steps_text(steps: list[int]) -> str:
    shown = ", ".join(map(str, steps[:6])) + (
        f" and {len(steps) - 6} more" if len(steps) > 6 else ""
    )
    return f"step{'s' if len(steps) > 1 else ''} {shown}"


def _check_merged_grid(root: Path, records: list[dict]) -> None:
    """ValueError when a run in a merged ``metrics.jsonl`` lacks evaluations its comparison's
    ``config.json`` (steps, eval_every) says it made: a cut file passes for runs that learned
    less. Without a readable config there is nothing to check against."""
    try:
        config = json.loads((root / "config.json").read_text())
        steps, every = config["steps"], config.get("eval_every")
    except (OSError, ValueError, KeyError, TypeError):
        return
    if not isinstance(steps, int) or isinstance(steps, bool):
        return
    evals: dict[tuple[str, int], set[int]] = defaultdict(set)
    for r in records:
        if r["kind"] == "eval":
            evals[(r["method"], r["seed"])].add(r["step"])
    for (method, seed), seen in sorted(evals.items()):
        missing = missing_evaluations(seen, steps, every if isinstance(every, int) else None)
        if missing:
            raise ValueError(
                f"{root / 'metrics.jsonl'}: {method} seed {seed} has no evaluation at "
                f"{_steps_text(missing)} of its {steps} steps (config.json): the file was cut; "
                "copy it again from the comparison's folder"
            )


def collect(run_dirs: list[Path], out: Path) -> None:
    """Concatenate the runs' metrics.jsonl files into ``out`` (replaced whole)."""
    from botgrpo.folders import atomic_write_text

    atomic_write_text(out, "".join((d / "metrics.jsonl").read_text() for d in run_dirs))


def _curves(records: list[dict], kind: str, key: str) -> dict[str, dict[int, tuple[list, list]]]:
    """method -> seed -> (steps, values) of ``key`` in the records of ``kind``, sorted by step."""
    out: dict[str, dict[int, tuple[list, list]]] = defaultdict(dict)
    rows = sorted(
        (r for r in records if r["kind"] == kind and key in r),
        key=lambda r: (r["method"], r["seed"], r["step"]),
    )
    for r in rows:
        steps, values = out[r["method"]].setdefault(r["seed"], ([], []))
        steps.append(r["step"])
        values.append(r[key])
    return out


def eval_curves(
    records: list[dict], key: str = "sampled_solved"
) -> dict[str, dict[int, tuple[list, list]]]:
    """method -> seed -> (steps, values) of the eval records, sorted by step."""
    return _curves(records, "eval", key)


def train_means(records: list[dict], key: str) -> dict[str, float]:
    """method -> mean of a training-log key over all its steps and seeds."""
    sums: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r["kind"] == "train" and key in r:
            sums[r["method"]].append(r[key])
    return {m: sum(v) / len(v) for m, v in sums.items()}


def train_curves(records: list[dict], key: str) -> dict[str, dict[int, tuple[list, list]]]:
    """method -> seed -> (steps, values) of a training-log key, sorted by step."""
    return _curves(records, "train", key)


def train_tail_means(records: list[dict], key: str, last: int) -> dict[str, float]:
    """method -> mean over seeds of a training-log key averaged over each run's last ``last``
    logged steps."""
    out = {}
    for m, seeds in train_curves(records, key).items():
        out[m] = sum(sum(v[-last:]) / len(v[-last:]) for _, v in seeds.values()) / len(seeds)
    return out
