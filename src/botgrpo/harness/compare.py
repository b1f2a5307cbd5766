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

import dataclasses
import json
import math
import multiprocessing
import os
import random
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from tqdm.auto import tqdm

from botgrpo.folders import (
    atomic_write_text,
    check_folder_kind,
    check_no_foreign_files,
    check_not_busy,
    check_outside_owned,
    command_line,
    own_folder,
)
from botgrpo.harness.config import CompareConfig, resolve_task_defaults, task_value
from botgrpo.harness.evaluate import held_out_prompts
from botgrpo.harness.progress import QuietProgress
from botgrpo.harness.resume import resume_point
from botgrpo.harness.runner import (
    RunSpec,
    SettingsChanged,
    execute_run,
    is_done,
    read_progress,
    run_label,
    run_settings,
)
from botgrpo.harness.warmstart import WarmStartConfig, warm_start, warm_start_path
from botgrpo.tasks.vocabulary import check_tiny_vocabulary, warn_tiny_room

#: The files a comparison replaces in its folder: in a folder botgrpo did not write, these are
#: the user's, and the comparison is refused rather than replace them (its runs go into
#: ``runs/`` and ``sweep/``, one new folder each, whose finished runs are checked on resume).
COMPARISON_FILES = (
    "config.json",
    "metrics.jsonl",
    "summary.md",
    "summary.json",
    "curves.png",
    "lr_sweep.json",
    "lr_sweep.png",
)

#: A comparison's subfolders of runs and the held-out stream each is evaluated on.
RUN_FOLDERS = {"runs": "test", "sweep": "validation"}


def _progress_of(spec: RunSpec) -> tuple[int, str]:
    """(steps done, phase) of a run: its progress.json, or all steps once done.json exists."""
    if (Path(spec.run_dir) / "done.json").exists():  # settings were checked before the runs
        return spec.config.steps, "done"
    return read_progress(Path(spec.run_dir))


def _resumes_at(spec: RunSpec) -> int:
    """The step an unfinished run goes on from: its resume point's, else 0 (from the start)."""
    point = resume_point(Path(spec.run_dir), run_settings(spec))
    return point[1] if point else 0


def _phases(todo: list[RunSpec], progress: dict[str, tuple[int, str]]) -> str:
    """What the running runs are doing, e.g. ``bot-lr0.0004-s0 evaluating step 0``."""
    running = [
        f"{s.label} {phase}" + (f" step {step}" if phase == "evaluating" else "")
        for s in todo
        for step, phase in [progress[s.label]]
        if phase and phase != "done"
    ]
    return ", ".join(running) or "starting"


def die_with_parent(parent_pid: int) -> None:
    """Pool-worker initializer: end this worker when the comparison's process dies (a ``kill``
    of the command, not only Ctrl-C, which reaches the whole process group), so that no orphan
    goes on writing into run folders a resumed comparison writes too. Linux's
    ``PR_SET_PDEATHSIG``; elsewhere a no-op. Ctrl-C is left to the command, which ends its
    workers (their unfinished runs restart when the comparison is resumed)."""
    import ctypes
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the command ends its workers
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)


def run_all(specs: list[RunSpec], workers: int, progress: bool, desc: str) -> None:
    """Run every unfinished spec, ``workers`` at a time, with one progress bar over their steps
    (labelled with what each running run is doing, and an ETA), or with a progress line every
    minute and at each finished run when ``progress`` is False."""
    todo = [s for s in specs if not is_done(s)]
    if not todo:
        return
    total = sum(s.config.steps for s in todo)
    resumed = sum(_resumes_at(s) for s in todo)  # done before: not part of the pace
    bar = tqdm(total=total, initial=resumed, desc=desc, unit="step", disable=not progress)
    quiet = QuietProgress(desc, total, enabled=not progress, initial=resumed)
    quiet.note(
        f"{len(todo)} of {len(specs)} runs to go, {workers} at a time"
        + (f", {resumed} steps resumed from checkpoints" if resumed else "")
    )
    os.environ["OMP_NUM_THREADS"] = "1"
    ctx = multiprocessing.get_context("spawn")
    # a fresh process per run: its peak memory is its own, not left over from an earlier run
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=ctx,
        max_tasks_per_child=1,
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    ) as pool:
        try:
            pending = {pool.submit(execute_run, s): s for s in todo}
            while pending:
                done, _ = wait(pending, timeout=2.0, return_when=FIRST_COMPLETED)
                states = {s.label: _progress_of(s) for s in todo}
                bar.n = quiet.done = sum(step for step, _ in states.values())
                for fut in done:
                    spec = pending.pop(fut)
                    fut.result()  # re-raise a failed run's error here
                    quiet.note(f"finished {spec.label}")
                bar.set_postfix_str(_phases(todo, states), refresh=False)
                bar.refresh()
                quiet.update(quiet.done, _phases(todo, states))
        except BaseException:  # Ctrl-C or a failed run: end the other runs now, not at their end
            _end_workers(pool)
            raise
        finally:
            bar.close()


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the running workers (their runs are unfinished: a
    resumed comparison restarts them)."""
    # read before the shutdown, which forgets them (a later wait would last the runs' length)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()


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
    atomic_write_text(root / "lr_sweep.json", json.dumps(report, indent=2))
    return best


def _checked_init_model(name: str) -> str:
    """``name`` as an absolute path when it is a local folder (``warm:NAME`` and ``real:NAME``
    resolved, :mod:`botgrpo.models`); loads its config first so a typo fails here, once,
    rather than in every worker."""
    from transformers import AutoConfig

    from botgrpo.models import REAL_PREFIX, WARM_PREFIX, resolve_model_path

    if name.startswith((REAL_PREFIX, WARM_PREFIX)):
        try:
            name = resolve_model_path(name)
        except ValueError as err:
            raise ValueError(f"init_model: {err}") from None
    local = Path(name).expanduser()
    looks_local = name.startswith(("/", "./", "../", "~")) or local.exists()
    if looks_local and not (local / "config.json").is_file():
        raise ValueError(
            f"init_model {name!r} is not a model folder (no config.json there); pass a folder "
            "saved with save_pretrained or a hub name"
        )
    resolved = str(local.resolve()) if local.exists() else name
    try:
        AutoConfig.from_pretrained(resolved)
    except (OSError, ValueError) as err:
        reason = " ".join(str(err).split()).split(". ")[0]
        raise ValueError(
            f"init_model {name!r} cannot be loaded ({reason}); pass a folder saved with "
            "save_pretrained or a hub name available offline"
        ) from err
    return resolved


def check_inputs(cfg: CompareConfig):
    """Everything a comparison needs that its config alone cannot say, checked before any
    folder, warm start or run is made: the task loads and has enough distinct problems for both
    held-out streams and training, the output folder can be written, ``init_model`` loads.
    Returns the task; raises ValueError naming the problem and the fix."""
    from botgrpo.harness.evaluate import HELD_OUT_STREAMS, held_out_examples
    from botgrpo.harness.warmstart import sample_outside
    from botgrpo.tasks import load_task
    from botgrpo.tasks.data import sample_examples
    from botgrpo.tasks.noise import clean_task, with_verdict_noise
    from botgrpo.usage import check_writable_folder

    check_writable_folder(cfg.out_dir, "out_dir")
    check_outside_owned(cfg.out_dir, "out_dir")
    root = Path(cfg.out_dir).expanduser() / cfg.name
    check_folder_kind(root, "comparison", what="comparison folder")
    check_no_foreign_files(root, COMPARISON_FILES, "comparison folder")
    check_not_busy(root, "comparison folder")
    task = clean_task(with_verdict_noise(load_task(cfg.task), cfg.verdict_noise))
    if cfg.step_verifier:
        from botgrpo.tasks.learned import with_step_verifier

        with_step_verifier(task, cfg.step_verifier)  # loads: a bad folder fails now
    resolve_task_defaults(cfg, task)
    if not cfg.init_model:
        check_tiny_vocabulary(task)
        warn_tiny_room(task, cfg.max_completion_length)
    check_task_metric(cfg.metric, task)
    for stream in HELD_OUT_STREAMS:
        held_out_examples(task, cfg.eval_problems, stream)
    held = held_out_prompts(task, cfg.eval_problems)
    _check_training_share(task, held, cfg)
    sample_outside(task, random.Random(0), held)  # training and the warm start draw outside
    n_train = cfg.steps * cfg.prompts_per_step
    sample_examples(task, min(n_train, 100_000), "train-0", exclude=held)
    if cfg.init_model:
        resolved = _checked_init_model(cfg.init_model)
        if cfg.chat:
            _check_chat_template(resolved)
    elif cfg.chat:
        raise ValueError(
            "--chat / --system-prompt render prompts with a chat model's template, but the "
            "tiny warm start learned raw prompts: give --init-model (a chat model)"
        )
    return task


def _check_training_share(task, held: frozenset[str], cfg: CompareConfig) -> None:
    """A finite task keeps at least a tenth of its problems, and one step's prompts, for
    training; ValueError naming the largest --eval-problems that does."""
    from botgrpo.harness.evaluate import HELD_OUT_STREAMS, finite_order

    order = finite_order(task)
    if order is None:
        return
    need = max(cfg.prompts_per_step, math.ceil(len(order) / 10))
    left = len(order) - len(held)
    if left < need:
        most = (len(order) - need) // len(HELD_OUT_STREAMS)
        fix = f"lower --eval-problems to at most {most}" if most >= 1 else "add problems"
        raise ValueError(
            f"task {task.name!r} has {len(order)} distinct problems; test and validation sets "
            f"of {cfg.eval_problems} each leave {left} for training, fewer than {need}: {fix}"
        )


def _check_chat_template(model_path: str) -> None:
    from transformers import AutoTokenizer

    if not getattr(AutoTokenizer.from_pretrained(model_path), "chat_template", None):
        raise ValueError(
            f"init_model {model_path!r} has no chat template: drop --chat / --system-prompt, "
            "or pick a chat model"
        )


def check_task_metric(metric: str, task) -> None:
    """ValueError unless ``task`` reports ``metric`` (compile and clean rates: code tasks only)."""
    from botgrpo.harness.results import TASK_METRICS

    base = metric.partition("_")[2]
    if base in TASK_METRICS and base not in getattr(task, "METRICS", ()):
        raise ValueError(
            f"metric {metric!r} needs a task that reports {base!r} (the code tasks react and "
            f"python do); task {task.name!r} does not: pick sampled_solved or greedy_solved"
        )


def check_resumable(cfg: CompareConfig, root: Path, model_path: str | Path) -> None:
    """Raise :class:`~botgrpo.harness.runner.SettingsChanged` now, before anything trains, when
    a finished run in ``root`` (of the sweep or of the seeds) was made with other settings:
    every finished run there is taken at its own method, seed and rate, the runs this command
    would reuse and the others alike (a folder of another task's or budget's comparison would
    otherwise be taken over, its config and summary replaced, when no run name collides)."""
    for folder, stream in RUN_FOLDERS.items():
        for done in sorted((root / folder).glob("*/done.json")):
            spec = _stored_spec(done, cfg, model_path, stream)
            if spec is not None:
                is_done(spec)


def _stored_spec(
    done: Path, cfg: CompareConfig, model_path: str | Path, stream: str
) -> RunSpec | None:
    """The spec of the finished run whose ``done.json`` is ``done``, under ``cfg``: its own
    method, seed and rate, this command's other settings (None for a run recorded before
    settings were, which has nothing to compare)."""
    from botgrpo.trl.presets import PRESETS

    run_dir = done.parent
    try:
        stored = json.loads(done.read_text()).get("settings")
        if stored is None:
            return None
        method, seed, lr = stored["method"], int(stored["seed"]), float(stored["learning_rate"])
    except (ValueError, TypeError, KeyError, AttributeError):
        raise SettingsChanged(
            f"{done} is not a done.json written by botgrpo; delete that run folder to rerun it"
        ) from None
    if method not in PRESETS:
        raise SettingsChanged(
            f"{run_dir} holds a finished run of method {method!r}, which this botgrpo does not "
            "know: use a new --name, or delete that folder"
        )
    if run_dir.name != run_label(method, seed, lr):
        raise SettingsChanged(
            f"{run_dir} holds the finished run {run_label(method, seed, lr)} under another "
            "name; delete that run folder to rerun it"
        )
    return RunSpec(method, seed, lr, str(model_path), str(run_dir), cfg, stream)


def warm_start_config(cfg: CompareConfig, task) -> WarmStartConfig:
    """The warm-start options of a comparison on ``task`` (its steps when ``cfg`` leaves them
    open; a task with longer texts than the default model's 256 positions names its
    ``max_positions``)."""
    config = WarmStartConfig(
        steps=task_value(cfg, task, "warm_start_steps"),
        batch_size=task_value(cfg, task, "warm_start_batch_size"),
        lr=cfg.warm_start_lr,
        schedule_steps=cfg.warm_start_schedule_steps,
        stop=task_value(cfg, task, "warm_start_stop"),
        anneal=cfg.warm_start_anneal,
        patience_fraction=task_value(cfg, task, "warm_start_patience"),
        watch_accuracy=task_value(cfg, task, "warm_start_watch_accuracy"),
        packed=task_value(cfg, task, "warm_start_packed"),
    )
    positions = getattr(task, "max_positions", None)
    if positions is not None and positions != config.model.max_positions:
        model = dataclasses.replace(config.model, max_positions=int(positions))
        config = dataclasses.replace(config, model=model)
    return config


def planned_checkpoint(cfg: CompareConfig, task) -> Path:
    """Where the warm start of ``cfg`` is (or will be) cached; nothing is trained."""
    held = held_out_prompts(task, cfg.eval_problems)
    return warm_start_path(task, warm_start_config(cfg, task), Path(cfg.out_dir) / ".cache", held)


def starting_checkpoint(
    cfg: CompareConfig,
    task,
    *,
    use_packaged: bool = True,
    rebuild: bool = False,
    device: str = "cpu",
) -> Path:
    """The cached (or shipped, or freshly trained) warm start every run of ``cfg`` starts from;
    it never trains on the held-out problems. ``rebuild``: train it anew, replacing the cached
    one. ``device``: where a warm start that must be trained trains ("cpu", "cuda")."""
    held = held_out_prompts(task, cfg.eval_problems)
    return warm_start(
        task,
        warm_start_config(cfg, task),
        Path(cfg.out_dir) / ".cache",
        exclude=held,
        progress=cfg.progress,
        use_packaged=use_packaged,
        rebuild=rebuild,
        device=device,
    )


def compare(cfg: CompareConfig, task=None) -> Path:
    """Run the whole comparison; returns the path of ``summary.md``. ``task``: the task that
    :func:`check_inputs` returned for ``cfg``, when the caller has checked already."""
    from botgrpo.harness.plots import plot_curves, plot_lr_sweep
    from botgrpo.harness.results import collect, load_records
    from botgrpo.harness.summary import recorded_wall_seconds, write_summary

    if task is None:
        task = check_inputs(cfg)
    resolve_task_defaults(cfg, task)
    root = Path(cfg.out_dir) / cfg.name
    start = time.perf_counter()
    model_path: str | Path
    if cfg.init_model:
        model_path = _checked_init_model(cfg.init_model)
    else:
        model_path = planned_checkpoint(cfg, task)
    check_resumable(cfg, root, model_path)
    with own_folder(root, "comparison", command_line(), what="comparison folder"):
        earlier = recorded_wall_seconds(root / "summary.json")
        atomic_write_text(root / "config.json", json.dumps(cfg.__dict__, indent=2, default=list))
        if not cfg.init_model:
            model_path = starting_checkpoint(cfg, task)
        lrs = sweep_learning_rates(cfg, root, model_path) if cfg.lr_sweep else cfg.learning_rates()
        specs = _specs(cfg, root, model_path, lrs, range(cfg.seeds), "runs")
        run_all(specs, cfg.workers, cfg.progress, cfg.name)
        collect([Path(s.run_dir) for s in specs], root / "metrics.jsonl")
        records = load_records(root / "metrics.jsonl")
        sweep = json.loads((root / "lr_sweep.json").read_text()) if cfg.lr_sweep else None
        summary = write_summary(
            records,
            cfg,
            lrs,
            root / "summary.md",
            seconds=time.perf_counter() - start,
            run_seconds=_run_seconds(specs),
            lr_sweep=sweep,
            earlier_seconds=earlier,
        )
        thresholds = json.loads(summary.with_suffix(".json").read_text())["thresholds"]
        title = f"{cfg.name}: {cfg.task}"
        plot_curves(records, root / "curves.png", cfg.metric, title, thresholds)
        if sweep is not None:
            plot_lr_sweep(sweep, root / "lr_sweep.png")
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
