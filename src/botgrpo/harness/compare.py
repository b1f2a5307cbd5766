"""`botgrpo compare`: methods x seeds from one warm start, in parallel, resumable.

1. Warm start (cached by hash) -> the shared initial checkpoint.
2. Optional learning-rate sweep: every method at every rate on ``sweep_seeds`` seeds, on a separate
   validation stream of held-out problems; each method keeps the rate with the highest mean
   of the lead metric over its run (the reported test problems never choose a rate).
3. Every (method, seed) run at its rate, ``workers`` at a time, one CPU thread each; finished
   runs are skipped when the command is run again.
4. ``metrics.jsonl`` (all records), ``summary.md``, ``summary.json`` and ``curves.png`` in
   ``OUT_DIR/NAME/``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from tqdm.auto import tqdm

from botgrpo.harness.config import CompareConfig
from botgrpo.harness.evaluate import held_out_prompts
from botgrpo.harness.runner import RunSpec, execute_run, is_done, run_label
from botgrpo.harness.warmstart import WarmStartConfig, warm_start


def _progress_of(spec: RunSpec) -> int:
    path = Path(spec.run_dir) / "progress.json"
    if (Path(spec.run_dir) / "done.json").exists():  # settings were checked before the runs
        return spec.config.steps
    try:
        return int(json.loads(path.read_text())["step"])
    except (OSError, ValueError, KeyError):
        return 0


def run_all(specs: list[RunSpec], workers: int, progress: bool, desc: str) -> None:
    """Run every unfinished spec, ``workers`` at a time, with one progress bar over all steps."""
    todo = [s for s in specs if not is_done(s)]
    if not todo:
        return
    total = sum(s.config.steps for s in todo)
    bar = tqdm(total=total, desc=desc, unit="step", disable=not progress)
    os.environ["OMP_NUM_THREADS"] = "1"
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        pending = {pool.submit(execute_run, s): s for s in todo}
        while pending:
            done, _ = wait(pending, timeout=2.0, return_when=FIRST_COMPLETED)
            for fut in done:
                spec = pending.pop(fut)
                fut.result()  # re-raise a failed run's error here
                bar.set_postfix_str(f"finished {spec.label}")
            bar.n = sum(_progress_of(s) for s in todo)
            bar.refresh()
    bar.close()


def _specs(
    cfg: CompareConfig,
    root: Path,
    model_path: str | Path,
    lrs: dict[str, float],
    seeds: range,
    folder: str,
) -> list[RunSpec]:
    return [
        RunSpec(m, s, lrs[m], str(model_path), str(root / folder / run_label(m, s, lrs[m])), cfg)
        for s in seeds
        for m in cfg.methods
    ]


def sweep_learning_rates(
    cfg: CompareConfig, root: Path, model_path: str | Path
) -> dict[str, float]:
    """Best learning rate per method on seeds 0..sweep_seeds-1: the highest mean of the lead
    metric over the run (its area under the curve), averaged over the seeds, on the
    validation stream. Writes lr_sweep.json with every score and the choices."""
    from botgrpo.harness.results import load_records

    specs = [
        RunSpec(
            m,
            seed,
            lr,
            str(model_path),
            str(root / "sweep" / run_label(m, seed, lr)),
            cfg,
            stream="validation",
        )
        for m in cfg.methods
        for lr in cfg.lr_sweep
        for seed in range(cfg.sweep_seeds)
    ]
    run_all(specs, cfg.workers, cfg.progress, "lr sweep")
    scores: dict[str, dict[float, list[float]]] = {m: {} for m in cfg.methods}
    for spec in specs:
        evals = [
            r[cfg.metric]
            for r in load_records(Path(spec.run_dir) / "metrics.jsonl")
            if r["kind"] == "eval"
        ]
        scores[spec.method].setdefault(spec.learning_rate, []).append(sum(evals) / len(evals))
    means = {m: {lr: sum(v) / len(v) for lr, v in by_lr.items()} for m, by_lr in scores.items()}
    best = {m: max(by_lr, key=by_lr.get) for m, by_lr in means.items()}
    report = {
        "metric": cfg.metric,
        "stream": "validation",
        "sweep_seeds": cfg.sweep_seeds,
        "best": best,
        "mean_over_run": {
            m: {f"{lr:g}": v for lr, v in by_lr.items()} for m, by_lr in means.items()
        },
    }
    (root / "lr_sweep.json").write_text(json.dumps(report, indent=2))
    return best


def _checked_init_model(name: str) -> str:
    """``name`` as an absolute path when it is a local folder; loads its config first so a typo
    fails here, once, rather than in every worker."""
    from transformers import AutoConfig

    local = Path(name).expanduser()
    resolved = str(local.resolve()) if local.exists() else name
    try:
        AutoConfig.from_pretrained(resolved)
    except (OSError, ValueError) as err:
        raise ValueError(
            f"--init-model {name!r} is neither a local model folder nor a loadable hub model "
            f"({err}); pass a folder saved with save_pretrained or a hub name"
        ) from err
    return resolved


def warm_start_config(cfg: CompareConfig) -> WarmStartConfig:
    """The warm-start options of a comparison."""
    return WarmStartConfig(
        steps=cfg.warm_start_steps,
        lr=cfg.warm_start_lr,
        schedule_steps=cfg.warm_start_schedule_steps,
    )


def starting_checkpoint(cfg: CompareConfig, task, *, use_packaged: bool = True) -> Path:
    """The cached (or shipped, or freshly trained) warm start every run of ``cfg`` starts from;
    it never trains on the held-out problems."""
    held = held_out_prompts(task, cfg.eval_problems)
    return warm_start(
        task,
        warm_start_config(cfg),
        Path(cfg.out_dir) / ".cache",
        exclude=held,
        progress=cfg.progress,
        use_packaged=use_packaged,
    )


def compare(cfg: CompareConfig) -> Path:
    """Run the whole comparison; returns the path of ``summary.md``."""
    from botgrpo.harness.plots import plot_curves, plot_lr_sweep
    from botgrpo.harness.results import collect, load_records
    from botgrpo.harness.summary import write_summary
    from botgrpo.tasks import load_task

    root = Path(cfg.out_dir) / cfg.name
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(cfg.__dict__, indent=2, default=list))
    start = time.perf_counter()
    task = load_task(cfg.task)
    if cfg.init_model:
        model_path: str | Path = _checked_init_model(cfg.init_model)
    else:
        model_path = starting_checkpoint(cfg, task)
    lrs = sweep_learning_rates(cfg, root, model_path) if cfg.lr_sweep else cfg.learning_rates()
    specs = _specs(cfg, root, model_path, lrs, range(cfg.seeds), "runs")
    run_all(specs, cfg.workers, cfg.progress, f"{cfg.name}: {len(specs)} runs")
    collect([Path(s.run_dir) for s in specs], root / "metrics.jsonl")
    records = load_records(root / "metrics.jsonl")
    summary = write_summary(
        records,
        cfg,
        lrs,
        root / "summary.md",
        seconds=time.perf_counter() - start,
        run_seconds=_run_seconds(specs),
        lr_sweep=json.loads((root / "lr_sweep.json").read_text()) if cfg.lr_sweep else None,
    )
    thresholds = json.loads(summary.with_suffix(".json").read_text())["thresholds"]
    plot_curves(records, root / "curves.png", cfg.metric, f"{cfg.name}: {cfg.task}", thresholds)
    if cfg.lr_sweep:
        plot_lr_sweep(json.loads((root / "lr_sweep.json").read_text()), root / "lr_sweep.png")
    return summary


def _run_seconds(specs: list[RunSpec]) -> dict[str, list[float]]:
    """method -> training wall time of each finished run (from its done.json)."""
    out: dict[str, list[float]] = {}
    for spec in specs:
        try:
            seconds = json.loads((Path(spec.run_dir) / "done.json").read_text())["seconds"]
        except (OSError, ValueError, KeyError):
            continue
        out.setdefault(spec.method, []).append(float(seconds))
    return out
