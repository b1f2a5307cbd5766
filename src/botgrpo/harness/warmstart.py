"""Warm start: a supervised stage on a task's demonstrations, trained to convergence, cached.

RL re-weights behaviour the model already produces; it rarely teaches a missing skill. So every
method starts from the same supervised checkpoint that has *converged* on the task's
demonstrations: with a flawed teacher (:mod:`botgrpo.tasks.teacher`, the built-in tasks'
default) it has mastered the mechanics and imitates the teacher's slip at about the teacher's
rate, which is what reward can then move. A warm start stopped early makes errors of missing
knowledge instead, which no method fixes in a small budget. The checkpoint lives in
``cache_dir/warm-<hash>`` where the hash covers the task (its fingerprint), the held-out prompts
it must not train on, the model shape, every training option and ``WARM_START_VERSION`` (bumped
when the procedure changes), so changing any of them trains a new one and reruns reuse it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path

import torch
from filelock import FileLock, Timeout
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer

from botgrpo import shipped
from botgrpo.folders import command_line, mark_folder
from botgrpo.harness.convergence import Check, ConvergenceRule
from botgrpo.harness.packing import pack_rows
from botgrpo.harness.progress import QuietProgress
from botgrpo.loading import from_pretrained
from botgrpo.shipped import PACKAGED_DIR, packaged_warm_start, shipped_warm_start
from botgrpo.tasks.base import Task, task_fingerprint
from botgrpo.tasks.noise import clean_task
from botgrpo.tasks.teacher import demonstrate
from botgrpo.tiny import TinyModelSpec, build_tiny_model

__all__ = [  # the shipped warm starts are botgrpo.shipped's, re-exported where users import them
    "PACKAGED_DIR",
    "WarmStartConfig",
    "packaged_warm_start",
    "shipped_warm_start",
    "warm_start",
]

#: Bump when the warm-start procedure changes, so old cached checkpoints are not reused.
WARM_START_VERSION = 2

#: How a warm start decides it is done (WarmStartConfig.stop).
STOP_RULES = ("steps", "converged")

#: Options added after warm starts were shipped, with the value those trained with: left out
#: of the cache key at that value, so the shipped keys stay valid.
_LEGACY = {"anneal": 0.1, "patience_fraction": 0.0, "watch_accuracy": False, "packed": False}

#: Options of the "converged" rule alone (not in the cache key of a fixed-steps warm start).
_CONVERGED_ONLY = (
    "stop",
    "check_every",
    "patience",
    "tolerance",
    "anneal",
    "patience_fraction",
    "watch_accuracy",
)

#: Held-out demonstrations whose loss the "converged" rule watches.
CHECK_BATCH = 64


@dataclass(frozen=True)
class WarmStartConfig:
    """Options of the supervised warm start.

    Attributes:
        steps: optimizer steps of supervised training on demonstrations.
        batch_size: demonstrations per step.
        lr: peak AdamW learning rate (linear warm-up over 5% of the schedule, cosine decay to
            10% at its end; a run stopped early by ``schedule_steps`` ends above 10%).
        weight_decay: AdamW weight decay.
        seed: seed of the data stream and of the tiny model's initialisation.
        model: the tiny model's shape.
        schedule_steps: length of the learning-rate schedule; 0 = ``steps``. A value above
            ``steps`` stops a longer run early, at a checkpoint part-way through learning the
            task (where single steps are mostly, not always, right).
    """

    steps: int = 3000
    batch_size: int = 32
    lr: float = 3e-3
    weight_decay: float = 0.01
    seed: int = 0
    model: TinyModelSpec = field(
        default_factory=lambda: TinyModelSpec(
            hidden=128, layers=4, heads=4, kv_heads=2, intermediate=256, max_positions=256
        )
    )
    schedule_steps: int = 0
    stop: str = "steps"
    """"steps": train exactly ``steps`` on the cosine schedule; "converged": train at the peak
    rate (after a short warm-up) until the loss on a fixed check batch of demonstrations (64,
    from their own stream; never the evaluation's held-out problems)
    improves by less than ``tolerance`` (relative) over ``patience`` checks ``check_every``
    steps apart, then anneal the rate linearly to 10% over a tenth of the steps run (at least
    ``check_every``) and stop; ``steps`` is then the most it trains."""
    check_every: int = 50
    """Steps between held-out loss checks when ``stop`` is "converged"."""
    patience: int = 3
    """Checks without a relative improvement of ``tolerance`` that count as converged."""
    tolerance: float = 0.01
    """Relative improvement of the held-out loss that still counts as learning."""
    anneal: float = 0.1
    """Length of the "converged" rule's final anneal (the rate falls linearly to 10% of
    ``lr``), as a fraction of the steps run before it (at least ``check_every`` steps)."""
    patience_fraction: float = 0.0
    """The "converged" rule also waits until the flat checks span at least this fraction of
    the steps run so far (0: ``patience`` checks are enough)."""
    watch_accuracy: bool = False
    """Whether the "converged" rule also waits for the check batch's token accuracy to be
    flat (:mod:`botgrpo.harness.convergence`), not only its loss."""
    packed: bool = False
    """Pack each batch's demonstrations into rows of the model's positions, none attending to
    another (:mod:`botgrpo.harness.packing`): the same demonstrations and loss as padded rows
    up to round-off, with a third fewer positions on chain, so each step is cheaper."""

    def __post_init__(self) -> None:
        if self.steps < 0 or self.batch_size < 1:
            raise ValueError("WarmStartConfig needs steps >= 0 and batch_size >= 1")
        if self.stop not in STOP_RULES:
            raise ValueError(f"WarmStartConfig.stop must be one of {STOP_RULES}, got {self.stop!r}")
        if self.check_every < 1 or self.patience < 1 or not 0 <= self.tolerance < 1:
            raise ValueError(
                "WarmStartConfig needs check_every >= 1, patience >= 1 and 0 <= tolerance < 1"
            )
        if self.stop == "converged" and self.schedule_steps:
            raise ValueError("WarmStartConfig: schedule_steps applies to stop='steps' only")
        if self.schedule_steps and self.schedule_steps < self.steps:
            raise ValueError(
                f"WarmStartConfig.schedule_steps ({self.schedule_steps}) must be 0 or >= steps "
                f"({self.steps})"
            )
        if not self.lr > 0:
            raise ValueError(f"WarmStartConfig.lr must be > 0, got {self.lr}")
        if not 0 < self.anneal <= 1:
            raise ValueError(f"WarmStartConfig.anneal must be in (0, 1], got {self.anneal}")
        if not 0 <= self.patience_fraction < 1:
            raise ValueError(
                f"WarmStartConfig.patience_fraction must be in [0, 1), got {self.patience_fraction}"
            )

    def _key_fields(self) -> dict:
        """The config as hashed: schedule_steps only when it changes training (0 and ``steps``
        train identically), the stopping rule's options only with stop="converged", so
        checkpoints cached before they existed stay valid."""
        fields = asdict(self)
        if fields.pop("schedule_steps") not in (0, self.steps):
            fields["schedule_steps"] = self.schedule_steps
        if self.stop == "steps":
            for name in _CONVERGED_ONLY:
                fields.pop(name)
        for name, legacy in _LEGACY.items():
            if fields.get(name, legacy) == legacy:
                fields.pop(name, None)
        return fields

    def cache_key(self, task: Task, exclude: frozenset[str] = frozenset()) -> str:
        """Hash of the task's fingerprint, the excluded prompts, this config and the version
        (noisy verdicts do not change a warm start: the clean task's fingerprint)."""
        payload = {
            "task": task_fingerprint(clean_task(task)),
            "exclude": hashlib.sha256("\n".join(sorted(exclude)).encode()).hexdigest(),
            "config": self._key_fields(),
            "version": WARM_START_VERSION,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def sample_outside(task: Task, rng: random.Random, exclude: frozenset[str]):
    """A problem of ``task`` whose prompt is not in ``exclude``; ValueError after 1000 tries."""
    for _ in range(1000):
        ex = task.sample(rng)
        if ex.prompt not in exclude:
            return ex
    raise ValueError(
        f"task {task.name!r} keeps drawing held-out problems: too few distinct problems are "
        "left for training; lower --eval-problems or add problems"
    )


def _encode(task: Task, tokenizer, rng: random.Random, exclude: frozenset[str]):
    """One demonstration as (prompt + completion + EOS ids, labels only on the completion)."""
    ex = sample_outside(task, rng, exclude)
    p_ids = tokenizer(ex.prompt, add_special_tokens=False).input_ids
    c_ids = tokenizer(demonstrate(task, ex, rng), add_special_tokens=False).input_ids
    c_ids = [*c_ids, tokenizer.eos_token_id]
    return p_ids + c_ids, [-100] * len(p_ids) + c_ids


def _pad(rows: list[tuple[list[int], list[int]]], pad: int) -> dict[str, torch.Tensor]:
    """Right-padded ids, labels and attention mask of (ids, labels) rows."""
    width = max(len(ids) for ids, _ in rows)
    return {
        "input_ids": torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in rows]),
        "labels": torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in rows]),
        "attention_mask": torch.tensor(
            [[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in rows]
        ),
    }


def _batch(
    task: Task, tokenizer, rng: random.Random, size: int, exclude: frozenset[str] = frozenset()
) -> dict[str, torch.Tensor]:
    """``size`` random demonstrations, right-padded, labels only on the completion."""
    rows = [_encode(task, tokenizer, rng, exclude) for _ in range(size)]
    return _pad(rows, tokenizer.pad_token_id)


def _batches(
    task: Task, tokenizer, rng: random.Random, config: WarmStartConfig, exclude: frozenset[str]
) -> Iterator[dict[str, torch.Tensor]]:
    """Training batches without end, each of ``config.batch_size`` random demonstrations:
    right-padded rows, or (``config.packed``) rows packed up to the model's positions
    (:func:`~botgrpo.harness.packing.pack_rows`; the same demonstrations and loss)."""
    while True:
        if not config.packed:
            yield _batch(task, tokenizer, rng, config.batch_size, exclude)
            continue
        rows = [_encode(task, tokenizer, rng, exclude) for _ in range(config.batch_size)]
        packed = pack_rows(rows, config.model.max_positions, tokenizer.pad_token_id)
        yield {**packed, "use_cache": False}


def _lr_at(step: int, total: int, peak: float) -> float:
    warm = max(1, int(0.05 * total))
    if step < warm:
        return peak * (step + 1) / warm
    progress = (step - warm) / max(1, total - warm)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


@dataclass(frozen=True)
class WarmStartRun:
    """What a warm start's training did."""

    final_loss: float
    """Mean training loss of the last 50 steps."""
    steps: int
    """Optimizer steps run (fewer than ``steps`` when it stopped on convergence)."""
    checks: tuple[Check, ...] = ()
    """Each check of the held-out check batch (stop="converged"): step, loss, token accuracy."""


#: Optimizer steps between the resume points of a fixed-steps warm start.
RESUME_EVERY = 100


def train_warm_start(
    task: Task,
    config: WarmStartConfig,
    out_dir: Path,
    progress: bool,
    exclude: frozenset[str] = frozenset(),
    resume_dir: Path | None = None,
    device: str = "cpu",
) -> WarmStartRun:
    """Build the tiny model in ``out_dir`` and fine-tune it on demonstrations in place (see
    ``WarmStartConfig.stop`` for when it stops).

    ``resume_dir`` (stop="steps"): every :data:`RESUME_EVERY` steps the model, the optimizer,
    the data stream's position and the recent losses are saved there, and a build that finds
    them goes on from that step instead of starting over (the same batches, so the same
    checkpoint as an uninterrupted run); the caller removes the folder once published.

    ``device``: where the model trains ("cpu", "cuda", "cuda:1", ...); the demonstrations are
    made on the CPU either way. A GPU's float rounding differs from the CPU's, so its checkpoint
    is close to, not equal to, the CPU's of the same key."""
    build_tiny_model(out_dir, spec=config.model)
    tokenizer = AutoTokenizer.from_pretrained(out_dir)
    model = from_pretrained(AutoModelForCausalLM, out_dir).to(device)
    torch.manual_seed(config.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    rng = random.Random(f"warm-start-{config.seed}")
    rule = None
    if config.stop == "converged":
        check_rng = random.Random(f"warm-start-check-{config.seed}")
        check = _batch(task, tokenizer, check_rng, CHECK_BATCH, exclude)
        rule = ConvergenceRule(config, _on(check, device))
        resume_dir = None  # the rule's checks are not saved: a converged run starts over
    recent: list[float] = []
    first = _resume(resume_dir, model, opt, rng, recent) if resume_dir is not None else 0
    model.train()
    batches = _batches(task, tokenizer, rng, config, exclude)
    bar = tqdm(
        range(first, config.steps),
        desc="warm start (training)",
        disable=not progress,
        initial=first,
        total=config.steps,
    )
    ticker = QuietProgress("warm start", config.steps, enabled=not progress, initial=first)
    steps = first
    for step in bar:
        ticker.update(step)
        if resume_dir is not None and step > first and step % RESUME_EVERY == 0:
            _save_resume(resume_dir, step, model, opt, rng, recent)
        for group in opt.param_groups:
            if rule is None:
                group["lr"] = _lr_at(step, config.schedule_steps or config.steps, config.lr)
            else:
                group["lr"] = rule.lr(step)
        loss = model(**_on(next(batches), device)).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        steps = step + 1
        recent = [*recent[-49:], loss.item()]
        bar.set_postfix(loss=f"{recent[-1]:.3f}")
        if rule is not None and rule.after(model, step):
            break
    bar.close()
    model.to("cpu").save_pretrained(out_dir)
    final = sum(recent) / len(recent) if recent else float("nan")
    return WarmStartRun(final, steps, tuple(rule.checks) if rule is not None else ())


def _on(batch: dict, device: str) -> dict:
    """``batch`` with its tensors on ``device``."""
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def _save_resume(folder: Path, step: int, model, opt, rng: random.Random, recent) -> None:
    """The state at the start of ``step`` (written beside itself, then renamed into place)."""
    folder.mkdir(parents=True, exist_ok=True)
    state = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "rng": rng.getstate(),
        "torch_rng": torch.get_rng_state(),
        "recent": list(recent),
    }
    tmp = folder / "state.pt.tmp"
    torch.save(state, tmp)
    tmp.replace(folder / "state.pt")


def _resume(folder: Path, model, opt, rng: random.Random, recent: list[float]) -> int:
    """The step saved in ``folder`` (0 when nothing is), with the model, optimizer, data stream
    and recent losses restored to it."""
    path = folder / "state.pt"
    if not path.is_file():
        return 0
    try:
        state = torch.load(path, weights_only=False, map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
    except (OSError, RuntimeError, KeyError, ValueError, EOFError, pickle.UnpicklingError):
        print(
            f"warm start: the resume point in {folder} is unreadable: starting over",
            file=sys.stderr,
            flush=True,
        )
        return 0
    rng.setstate(state["rng"])
    torch.set_rng_state(state["torch_rng"])
    recent[:] = state["recent"]
    print(f"warm start: resuming from step {state['step']} ({folder})", file=sys.stderr, flush=True)
    return int(state["step"])


def _length(config: WarmStartConfig) -> str:
    """How long the warm start of ``config`` trains, in words, with chain's time as a guide."""
    if config.stop == "steps":
        return f"{config.steps} steps; chain's 3000 take about 45 min on 2 cores"
    watched = "loss and token accuracy are" if config.watch_accuracy else "loss is"
    return (
        f"until its check {watched} flat, at most {config.steps} steps; chain's took 1320 "
        "steps, 8.4 min on 2 cores"
    )


def warm_start_path(
    task: Task, config: WarmStartConfig, cache_dir: str | Path, exclude: frozenset[str]
) -> Path:
    """Where :func:`warm_start` keeps the checkpoint of (task, config, exclude): nothing is
    trained or read, so a command can check its runs against it first."""
    return Path(cache_dir) / f"warm-{config.cache_key(task, exclude)}"


#: Every WarmStartConfig field with a plain default: the value a warm start made before the
#: field existed trained with.
_FIELD_DEFAULTS = {f.name: f.default for f in fields(WarmStartConfig) if f.default is not MISSING}


def why_training(task: Task, config: WarmStartConfig, use_packaged: bool) -> str:
    """Why no shipped checkpoint serves (task, config), in words: what differs from the
    closest shipped warm start (the task's settings, training options, the held-out set)."""
    if not use_packaged:
        return "--retrain was given"
    metas = []
    for meta_path in (
        sorted(shipped.PACKAGED_DIR.glob("*/warm_start.json"))
        if shipped.PACKAGED_DIR.is_dir()
        else []
    ):
        try:
            metas.append((meta_path.parent.name, json.loads(meta_path.read_text())))
        except (OSError, ValueError):
            continue
    if not metas:
        return "no warm start ships with this installation"
    kind = type(task).__name__
    metas = [(n, m) for n, m in metas if str(m.get("task", "")).startswith(f"{kind}(")]
    if not metas:  # a task of the user's own: nothing shipped is close to it
        return f"no warm start ships for a {kind} task ({getattr(task, 'name', kind)!r})"
    ours = asdict(config)
    best = None
    for name, meta in metas:
        theirs = {**_FIELD_DEFAULTS, **meta.get("config", {})}  # older metas lack new fields
        diff = [f"{k} {theirs[k]!r} -> {ours[k]!r}" for k in ours if theirs.get(k) != ours[k]]
        if meta.get("task") != repr(task):
            diff.insert(0, f"task {task!r} (shipped: {meta.get('task')})")
        rank = (name != getattr(task, "name", None), len(diff))  # the same task's first
        if best is None or rank < best[2]:
            best = (name, diff, rank)
    name, diff, _ = best  # type: ignore[misc]
    if not diff:
        return (
            f"the held-out problems differ from those the shipped warm start {name!r} excluded "
            "(--eval-problems above 500 reserves more)"
        )
    return f"it differs from the shipped warm start {name!r} in: {'; '.join(diff)}"


def warm_start(
    task: Task,
    config: WarmStartConfig,
    cache_dir: str | Path,
    *,
    exclude: frozenset[str] = frozenset(),
    progress: bool = True,
    use_packaged: bool = True,
    rebuild: bool = False,
    device: str = "cpu",
) -> Path:
    """Path of the warm-start checkpoint for (task, config), training it if not cached.

    ``exclude``: prompts the warm start must not train on (the held-out problems).
    ``use_packaged``: take a checkpoint shipped with the package when one was trained with
    exactly this key (``botgrpo warm-start`` rebuilds it); False always trains. Before training
    one, a line on stderr says why (what differs from the shipped one) and how long it takes.
    A task with noisy verdicts gets its clean task's warm start. ``rebuild``: train anew and
    replace the cached one (``botgrpo warm-start --retrain``). ``device``: where it trains
    (:func:`train_warm_start`; not part of the key).

    A fixed-steps warm start that was interrupted goes on from its last resume point
    (``.warm-KEY.resume``, every 100 steps) rather than starting over.

    Commands that need the same new warm start share it: the first builds it in a private
    temporary folder under a lock beside the entry (``warm-KEY.lock``) and renames it into place
    when complete; the others wait for the lock and reuse it. An entry lacking any of
    :data:`REQUIRED_FILES` is rebuilt.
    """
    task = clean_task(task)
    key = config.cache_key(task, exclude)
    final = warm_start_path(task, config, cache_dir, exclude)
    if not rebuild and is_complete(final):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(final.with_name(final.name + ".lock")))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(
            f"warm start: waiting for another botgrpo command that is building {final}",
            file=sys.stderr,
            flush=True,
        )
        lock.acquire()
    try:
        if not rebuild and is_complete(final):
            return final  # finished by the command this one waited for
        for stale in final.parent.glob(f".{final.name}.*.tmp"):
            shutil.rmtree(stale, ignore_errors=True)  # this entry's: its lock is held here
        clear_dead_builds(final.parent)
        if rebuild:  # anew: not from an interrupted run's resume point
            shutil.rmtree(final.with_name(f".{final.name}.resume"), ignore_errors=True)
        _build(task, config, key, final, exclude, progress, use_packaged and not rebuild, device)
    finally:
        lock.release()
    return final


def clear_dead_builds(cache_dir: Path) -> None:
    """Remove the private folders of builds killed outright (SIGKILL, SIGTERM: no chance to
    clean up): a ``.warm-KEY.*.tmp`` folder whose entry's lock nobody holds has no builder.
    (An entry whose lock this process holds is skipped: its caller clears its own.)"""
    for stale in sorted(Path(cache_dir).glob(".warm-*.*.tmp")):
        entry = stale.name[1:].split(".", 1)[0]
        lock = FileLock(str(Path(cache_dir) / f"{entry}.lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            continue  # being built now
        try:
            shutil.rmtree(stale, ignore_errors=True)
        finally:
            lock.release()


#: The files every complete warm-start folder holds (warm_start.json is written last).
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "warm_start.json")


def is_complete(path: Path) -> bool:
    """Whether ``path`` is a finished warm start: every file of :data:`REQUIRED_FILES` (an
    entry left incomplete by an older botgrpo, or by hand, is rebuilt, never taken as cached)."""
    return all((path / name).is_file() for name in REQUIRED_FILES)


def _build(
    task: Task,
    config: WarmStartConfig,
    key: str,
    final: Path,
    exclude: frozenset[str],
    progress: bool,
    use_packaged: bool,
    device: str = "cpu",
) -> None:
    """Make the warm start of ``key`` in a private temporary folder beside ``final`` and publish
    it by renaming it there once complete (the caller holds the entry's lock); an interrupted
    build leaves no folder behind."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would follow it into the cache
    try:
        shipped = packaged_warm_start(key) if use_packaged else None
        if shipped is not None:
            shutil.copytree(shipped, tmp, dirs_exist_ok=True)
        else:
            why = why_training(task, config, use_packaged)
            print(
                f"warm start: training one for task {task.name!r} ({_length(config)}; cached in "
                f"{final} for later runs), because {why}",
                file=sys.stderr,
                flush=True,
            )
            start = time.perf_counter()
            resume = final.with_name(f".{final.name}.resume")
            run = train_warm_start(
                task, config, tmp, progress, exclude, resume_dir=resume, device=device
            )
            meta = {
                "key": key,
                "task": repr(task),
                "config": asdict(config),
                "final_loss": run.final_loss,
                "steps_run": run.steps,
                "device": device,
                "seconds": round(time.perf_counter() - start, 1),
            }
            if run.checks:
                meta["held_out_losses"] = [[c.step, c.loss] for c in run.checks]
                meta["held_out_token_acc"] = [[c.step, c.token_acc] for c in run.checks]
            (tmp / "warm_start.json").write_text(json.dumps(meta, indent=2))
        mark_folder(tmp, "warm-start", command_line())
        if final.exists() or final.is_symlink():
            old = final.with_name(f".{final.name}.old-{os.getpid()}")
            final.rename(old)
            tmp.rename(final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(final)
        shutil.rmtree(final.with_name(f".{final.name}.resume"), ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
