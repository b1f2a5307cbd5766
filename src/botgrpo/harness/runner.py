"""One training run of the comparison: a method, a seed, a learning rate.

The run trains :class:`~botgrpo.trl.BoTGRPOTrainer` with the method's preset from the shared
warm-start checkpoint on the seed's problems, evaluates on the held-out problems every
``eval_every`` steps (and at step 0), and appends every record to ``metrics.jsonl`` in its
folder; ``done.json`` marks a finished run so that a resumed comparison skips it.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from botgrpo.folders import atomic_write_text, mark_folder
from botgrpo.harness.config import CompareConfig
from botgrpo.harness.resume import (
    DRIFT_REFERENCE,
    RESUMED_FILE,
    STARTED_FILE,
    DriftReference,
    RunClock,
    changed_settings,
    keep_peak_memory,
    keep_records_to,
    note_resumed,
    read_records,
    resume_point,
    resumed_steps,
    started_settings,
    trainer_folder,
    write_started,
)

#: Training-log keys copied into metrics.jsonl (when the trainer logs them); each training
#: record also holds ``solved``, the share of the step's rollouts that solved their problem.
TRAIN_KEYS = (
    "loss",
    "reward",
    "bot/frac_zero_signal_groups",
    "bot/local_share",
    "bot/return_local_share",
    "bot/advantage/abs_mean",
    "completions/mean_length",
    "clip_ratio/region_mean",
    "kl",
)


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs (picklable: it crosses to a worker process).

    Attributes:
        method: the BoTGRPOTrainer preset.
        seed: data order and sampling seed.
        learning_rate: the run's learning rate.
        model_path: the starting checkpoint (the cached warm start, or ``init_model``).
        run_dir: the run's output folder.
        config: the comparison's options.
        stream: the held-out stream it is evaluated on: "test" (reported) or "validation"
            (the learning-rate sweep, so rates are never picked on the reported problems).
    """

    method: str
    seed: int
    learning_rate: float
    model_path: str
    run_dir: str
    config: CompareConfig
    stream: str = "test"

    @property
    def label(self) -> str:
        return run_label(self.method, self.seed, self.learning_rate)


def run_label(method: str, seed: int, lr: float) -> str:
    """Folder name of a run."""
    return f"{method}-lr{lr:g}-s{seed}"


#: Options that do not change what a single run computes (so resuming with them changed is fine);
#: the rate a run trains at is the spec's own, whichever of them chose it.
_NOT_RUN_SETTINGS = (
    "name",
    "out_dir",
    "methods",
    "seeds",
    "learning_rate",
    "method_lrs",
    "lr_sweep",
    "sweep_seeds",
    "thresholds",
    "workers",
    "progress",
    "checkpoint_every",
    # part of the warm start's key, so of model_path
    "warm_start_stop",
    "warm_start_batch_size",
    "warm_start_anneal",
    "warm_start_patience",
    "warm_start_watch_accuracy",
    "warm_start_packed",
)


def _reads_verdicts(method: str) -> bool:
    """Whether a preset's estimator reads the step signal (outcome-only ones do not)."""
    from botgrpo.scoring.token_batch import OUTCOME_ESTIMATORS
    from botgrpo.trl.presets import PRESETS

    return PRESETS[method].advantage_estimator not in OUTCOME_ESTIMATORS


def run_settings(spec: RunSpec) -> dict:
    """What a run's results depend on: its method, seed, rate, checkpoint and the run options."""
    options = {k: v for k, v in asdict(spec.config).items() if k not in _NOT_RUN_SETTINGS}
    for key in ("verdict_noise", "step_verifier"):
        if not options.get(key) or not _reads_verdicts(spec.method):
            options.pop(key, None)  # the task's own verdicts; or a method that reads none
    if options.get("critic_learning_rate") is None or spec.method != "ppo":
        options.pop("critic_learning_rate", None)  # the run's own rate; or a method without one
    if options.get("greedy", True):
        options.pop("greedy", None)  # the default: runs recorded before the option match
    if options.get("generation_cache") == "dynamic":
        options.pop("generation_cache")  # likewise
    for key, default in (("chat", False), ("system_prompt", None), ("lora_r", 0)):
        if options.get(key, default) == default:
            options.pop(key, None)  # likewise
    if options.get("top_layers") is None:
        options.pop("top_layers", None)
    options = json.loads(json.dumps(options, default=list))  # tuples -> lists, as stored
    return {
        "method": spec.method,
        "seed": spec.seed,
        "learning_rate": spec.learning_rate,
        "model_path": spec.model_path,
        "stream": spec.stream,
        "eval_rng": EVAL_RNG,
        **options,
    }


#: How a run's evaluations draw their samples (recorded in done.json): from a stream of their
#: own per (seed, step) (:func:`botgrpo.harness.evaluate.eval_seed`). Runs recorded without it
#: shared the training's stream and are not comparable with newer ones.
EVAL_RNG = "per-step"


class SettingsChanged(ValueError):
    """A run folder holds a finished run made with other settings (resuming would mix
    incomparable runs): a user's mistake, reported before anything trains."""


def is_done(spec: RunSpec) -> bool:
    """Whether ``spec``'s run finished; :class:`SettingsChanged` when its folder holds a finished
    run made with different settings (resuming would mix incomparable runs)."""
    path = Path(spec.run_dir) / "done.json"
    if not path.exists():
        return False
    try:
        stored = json.loads(path.read_text()).get("settings")
    except (ValueError, AttributeError):
        raise SettingsChanged(
            f"{path} is not a done.json written by botgrpo; delete that run folder to rerun it"
        ) from None
    if stored is None:  # written before settings were recorded: nothing to compare
        return True
    now = run_settings(spec)
    changed = changed_settings(stored, now)
    if changed == ["eval_rng"]:
        raise SettingsChanged(
            f"{spec.run_dir} holds a run made by an older botgrpo whose evaluations drew from "
            "the training's random stream (newer ones draw from their own per step), so its "
            "numbers are not comparable with new runs: use a new --name, or delete that "
            "folder to rerun it"
        )
    if changed:
        raise SettingsChanged(
            f"{spec.run_dir} holds a finished run made with different settings "
            f"({', '.join(f'{k}: {stored.get(k)!r} -> {now.get(k)!r}' for k in changed)}); "
            "use a new --name, or delete that folder to rerun it"
        )
    return True


def _recorder(spec: RunSpec, task, eval_examples, solved_sink: list[float], clock: RunClock):
    from transformers import AutoTokenizer, TrainerCallback

    from botgrpo.harness.evaluate import eval_seed, evaluate

    cfg = spec.config
    out = Path(spec.run_dir)
    eval_tok = AutoTokenizer.from_pretrained(spec.model_path)
    render = None
    if cfg.chat:
        from botgrpo.tasks.data import chat_text

        render = functools.partial(chat_text, eval_tok, system_prompt=cfg.system_prompt)
    base = {"method": spec.method, "seed": spec.seed, "lr": spec.learning_rate}

    def write(record: dict) -> None:
        with (out / "metrics.jsonl").open("a") as fh:
            fh.write(json.dumps({**base, **record}) + "\n")

    reference_path = trainer_folder(out) / DRIFT_REFERENCE

    class Recorder(TrainerCallback):
        reference: DriftReference | None = None

        def _evaluate(self, model, step: int) -> None:
            was_training = model.training
            start = time.perf_counter()
            write_progress(out, step, "evaluating")
            result = evaluate(
                model,
                eval_tok,
                task,
                eval_examples,
                max_new_tokens=cfg.max_completion_length,
                n_samples=cfg.pass_samples,
                sample_problems=cfg.pass_problems,
                ks=tuple(k for k in (1, 2, 4, 8) if k <= cfg.pass_samples),
                temperature=cfg.temperature,
                greedy=cfg.greedy,
                seed=eval_seed(spec.seed, step),
                cache_implementation=cfg.generation_cache,
                render_prompt=render,
            )
            record = {"kind": "eval", "step": step, **result.record()}
            record["weight_drift"] = self.reference.drift(model)
            record["eval_seconds"] = time.perf_counter() - start
            record["elapsed_seconds"] = clock.elapsed()
            write(record)
            write_progress(out, step, "training" if step < cfg.steps else "finishing")
            model.train(was_training)

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            if state.global_step > 0:  # resumed: step 0 and the reference are on record
                self.reference = DriftReference.load(reference_path)
                write_progress(out, state.global_step, "training")
                return
            self.reference = DriftReference(model)
            if cfg.checkpoint_every:
                self.reference.save(reference_path)
            self._evaluate(model, 0)

        def on_log(self, args, state, control, logs=None, **kwargs):
            picked = {k: v for k, v in (logs or {}).items() if k in TRAIN_KEYS}
            if solved_sink:
                picked["solved"] = sum(solved_sink) / len(solved_sink)
                solved_sink.clear()
            if picked:
                write({"kind": "train", "step": state.global_step, **picked})

        def on_step_end(self, args, state, control, model=None, **kwargs):
            write_progress(out, state.global_step, "training")
            if state.global_step % cfg.eval_every == 0 or state.global_step == cfg.steps:
                self._evaluate(model, state.global_step)

        def on_save(self, args, state, control, **kwargs):
            keep_peak_memory(out, peak_memory())  # a resumed run's cost spans its segments

    return Recorder()


def write_progress(run_dir: Path, step: int, phase: str) -> None:
    """``progress.json``: the run's last finished step and what it is doing now (evaluating,
    training, finishing), which the comparison's progress bar shows."""
    tmp = run_dir / "progress.json.tmp"
    tmp.write_text(json.dumps({"step": step, "phase": phase}))
    tmp.replace(run_dir / "progress.json")


def read_progress(run_dir: Path) -> tuple[int, str]:
    """(step, phase) from a run's ``progress.json``; (0, "") before it has one."""
    try:
        data = json.loads((run_dir / "progress.json").read_text())
        return int(data["step"]), str(data.get("phase", ""))
    except (OSError, ValueError, KeyError, TypeError):
        return 0, ""


def _counting_solved(reward_fn, sink: list[float]):
    """``reward_fn`` (a task reward) that also appends 1.0 / 0.0 per rollout to ``sink`` for
    solved / not (outcome >= 1), so each training record can log the share of solved rollouts."""

    def counted(*args, **kwargs):
        out = reward_fn(*args, **kwargs)
        sink.extend(float(tr.info.get("solved", tr.outcome >= 1.0)) for tr in out)
        return out

    return functools.update_wrapper(counted, reward_fn)


def _quiet_worker() -> None:
    """One CPU thread, no progress bars or deprecation chatter from the libraries."""
    import warnings

    import torch
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(1)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)


def _trainer_config(spec: RunSpec, out: Path, saves: dict | None = None):
    from botgrpo.trl import BoTGRPOConfig

    cfg = spec.config
    return BoTGRPOConfig(
        output_dir=str(out / "trainer"),
        preset=spec.method,
        critic_learning_rate=cfg.critic_learning_rate if spec.method == "ppo" else None,
        w_g=cfg.w_g,
        w_s=cfg.w_s,
        learning_rate=spec.learning_rate,
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=cfg.warmup_steps,
        max_steps=cfg.steps,
        per_device_train_batch_size=cfg.prompts_per_step * cfg.num_generations,
        num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        cache_implementation=None if cfg.generation_cache == "dynamic" else cfg.generation_cache,
        seed=spec.seed,
        data_seed=spec.seed,
        use_cpu=True,
        bf16=False,
        logging_steps=1,
        **(saves or {"save_strategy": "no"}),
        report_to=[],
        disable_tqdm=True,
        dataloader_num_workers=0,
        # a tiny model on a CPU: recomputing activations in the backward pass only costs time
        activation_checkpointing=False,
    )


def _checkpointing(spec: RunSpec, judged) -> dict:
    """The Trainer's save options: the last checkpoint every ``checkpoint_every`` steps, or
    none where a checkpoint would not hold the run's whole state: ppo's critic, and verdict
    noise of kind random without a fixed share (its odds follow a running count of the verdicts
    judged so far). A resume is exact with the harness's one generation per step and one epoch
    of problems (TRL's generation buffer is not checkpointed)."""
    every = spec.config.checkpoint_every
    from botgrpo.tasks.noise import NoisyVerdicts

    running = (
        isinstance(judged, NoisyVerdicts) and judged.noise.kind == "random" and judged.share is None
    )
    if not every or spec.method == "ppo" or running:
        return {"save_strategy": "no"}
    return {"save_strategy": "steps", "save_steps": every, "save_total_limit": 1}


def _resume_point(out: Path, settings: dict, label: str):
    """:func:`~botgrpo.harness.resume.resume_point`, saying on stderr why a checkpoint that is
    there is not taken (the run then starts over)."""
    point = resume_point(out, settings)
    if point is None and any(trainer_folder(out).glob("checkpoint-*")):
        started = started_settings(out)
        why = (
            "was made with other settings"
            if isinstance(started, dict) and changed_settings(started, settings)
            else "is incomplete or unreadable"
        )
        print(
            f"botgrpo compare: {label}: its checkpoint {why}; the run starts over", file=sys.stderr
        )
    return point


def _peft_config(cfg, model_path: str):
    """LoRA of rank ``cfg.lora_r`` on every linear layer (on the top ``cfg.top_layers``
    only, when set); None for full fine-tuning."""
    if not cfg.lora_r:
        return None
    from peft import LoraConfig

    from botgrpo.trl.layers import lora_on_top_layers

    config = LoraConfig(
        r=cfg.lora_r, lora_alpha=2 * cfg.lora_r, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    return (
        config if cfg.top_layers is None else lora_on_top_layers(config, model_path, cfg.top_layers)
    )


def reset_peak_memory() -> None:
    """Start this process's peak-memory counters afresh (a pool worker runs several runs):
    the resident-set high-water mark (``/proc/self/clear_refs``) and CUDA's peak."""
    import torch

    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:  # not Linux, or not permitted: the peak then spans the process's life
        pass
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()


def peak_memory() -> dict[str, float]:
    """Peak resident memory of this process since :func:`reset_peak_memory` (bytes), and the
    CUDA peak where there is a GPU."""
    import resource

    import torch

    out: dict[str, float] = {}
    try:
        with open("/proc/self/status") as handle:
            hwm = next(line for line in handle if line.startswith("VmHWM:"))
        out["peak_rss_bytes"] = float(int(hwm.split()[1]) * 1024)
    except (OSError, StopIteration, ValueError):
        out["peak_rss_bytes"] = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    if torch.cuda.is_available():
        out["cuda_peak_bytes"] = float(torch.cuda.max_memory_allocated())
    return out


def _write_cost(spec: RunSpec, out: Path, seconds: float) -> None:
    """The run's cost record: training seconds (evaluations excluded) per optimizer step and
    the peak memory of the training process (the highest of its segments' when it was
    resumed). Checkpoint saves count as training time."""
    records = read_records(out)
    eval_seconds = sum(r.get("eval_seconds", 0.0) for r in records if r.get("kind") == "eval")
    train_seconds = max(seconds - eval_seconds, 0.0)
    record = {
        "method": spec.method,
        "seed": spec.seed,
        "lr": spec.learning_rate,
        "kind": "cost",
        "step": spec.config.steps,
        "train_seconds": train_seconds,
        "seconds_per_step": train_seconds / spec.config.steps,
        **keep_peak_memory(out, peak_memory()),
    }
    with (out / "metrics.jsonl").open("a") as handle:
        handle.write(json.dumps(record) + "\n")


def execute_run(spec: RunSpec) -> str:
    """Train and evaluate one run in this process; returns its label."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _quiet_worker()
    from transformers import AutoTokenizer
    from transformers.trainer_callback import PrinterCallback

    from botgrpo.harness.config import resolve_task_defaults
    from botgrpo.harness.evaluate import held_out_examples, held_out_prompts
    from botgrpo.tasks import load_task
    from botgrpo.tasks.data import sample_examples, task_dataset
    from botgrpo.tasks.learned import with_step_verifier
    from botgrpo.tasks.noise import clean_task, with_verdict_noise
    from botgrpo.tasks.reward import task_reward
    from botgrpo.trl import BoTGRPOTrainer

    cfg = spec.config
    out = Path(spec.run_dir)
    if out.is_symlink() or out.resolve().parent != out.parent.resolve():
        raise ValueError(f"run folder {out} is a link; botgrpo deletes only folders it made")
    judged = with_verdict_noise(load_task(cfg.task), cfg.verdict_noise)  # the training reward's
    if _reads_verdicts(spec.method):
        judged = with_step_verifier(judged, cfg.step_verifier)
    task = clean_task(judged)  # evaluations read clean verdicts
    resolve_task_defaults(cfg, task)  # compare() has; a RunSpec made by hand may not
    settings = run_settings(spec)
    saves = _checkpointing(spec, judged)
    point = _resume_point(out, settings, spec.label) if saves["save_strategy"] != "no" else None
    if point is None:
        shutil.rmtree(out, ignore_errors=True)  # an unfinished run restarts from scratch
        out.mkdir(parents=True)
        write_started(out, settings)
        clock = RunClock()
    else:
        clock = RunClock(before=keep_records_to(out, point[1]))
        note_resumed(out, point[1])
    mark_folder(out, "run", f"botgrpo compare: {spec.label}")
    eval_examples = held_out_examples(task, cfg.eval_problems, spec.stream)
    held = held_out_prompts(task, cfg.eval_problems)
    n_train = cfg.steps * cfg.prompts_per_step
    train = task_dataset(sample_examples(task, n_train, f"train-{spec.seed}", exclude=held))
    if cfg.chat:
        from botgrpo.tasks.data import chat_prompt

        train = train.map(lambda row: {"prompt": chat_prompt(row["prompt"], cfg.system_prompt)})
    tokenizer = AutoTokenizer.from_pretrained(spec.model_path)
    solved: list[float] = []
    trainer = BoTGRPOTrainer(
        model=spec.model_path,
        reward_funcs=[_counting_solved(task_reward(judged, tokenizer), solved)],
        args=_trainer_config(spec, out, saves),
        train_dataset=train,
        processing_class=tokenizer,
        callbacks=[_recorder(spec, task, eval_examples, solved, clock)],
        peft_config=_peft_config(cfg, spec.model_path),
    )
    if cfg.top_layers is not None:
        from botgrpo.trl.layers import freeze_below_top_layers

        freeze_below_top_layers(trainer.model, cfg.top_layers)
    trainer.remove_callback(PrinterCallback)  # records go to metrics.jsonl, not stdout
    reset_peak_memory()
    clock.begin()
    trainer.train(resume_from_checkpoint=str(point[0]) if point else None)
    _write_cost(spec, out, clock.elapsed())
    done = {"seconds": clock.elapsed(), "settings": settings}
    resumed = resumed_steps(out)
    if resumed:
        done["resumed_at_steps"] = resumed
    atomic_write_text(out / "done.json", json.dumps(done))  # the run is finished
    shutil.rmtree(trainer_folder(out), ignore_errors=True)  # then its checkpoint goes
    for name in (STARTED_FILE, RESUMED_FILE):
        (out / name).unlink(missing_ok=True)
    return spec.label
