"""A run's resume points: a run stopped part-way (a killed process, a machine handed back)
goes on from its last checkpoint instead of starting over, with the same results.

With ``checkpoint_every = N`` the Trainer saves its state (weights, optimizer, scheduler and
random states: transformers' ``checkpoint-STEP`` folders, the last one kept) under
``RUN/trainer`` every N steps, right after that step's evaluation. A later command finds the
newest complete checkpoint, keeps the run's records up to its step (``metrics.jsonl``), and
hands it to ``Trainer.train(resume_from_checkpoint=...)``, which restores the random states and
skips the batches already trained on. ``started.json`` holds the run's settings: a checkpoint
of other settings is never resumed. The weight-drift reference (the starting weights of the
trained parameters) is saved beside the checkpoints, so drift is measured from the run's true
start. Timing goes on across resumes: each evaluation record carries ``elapsed_seconds``, the
run's wall time so far (the time between a checkpoint and the stop is not counted).
"""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

from botgrpo.folders import atomic_write_text

#: What transformers writes into a checkpoint folder that resuming needs (trainer_state.json
#: last: a folder without it was cut short).
CHECKPOINT_FILES = ("trainer_state.json", "optimizer.pt", "scheduler.pt", "rng_state.pth")
#: The weights, one of these (a full model's or a LoRA adapter's).
WEIGHT_FILES = (
    "model.safetensors",
    "adapter_model.safetensors",
    "pytorch_model.bin",
    "adapter_model.bin",
)
#: The run's settings at its start (a checkpoint resumes only under the same ones).
STARTED_FILE = "started.json"
#: The steps a run was resumed at (done.json's ``resumed_at_steps`` once it finishes).
RESUMED_FILE = "resumed.json"
#: The peak memory of the run's segments so far, beside its checkpoints.
PEAK_FILE = "peak_memory.json"
#: The weight-drift reference: the trained parameters' starting values, and the norm of all.
DRIFT_REFERENCE = "drift_reference.pt"


def trainer_folder(run_dir: Path) -> Path:
    """Where a run's Trainer writes its checkpoints."""
    return Path(run_dir) / "trainer"


def write_started(run_dir: Path, settings: dict) -> None:
    atomic_write_text(Path(run_dir) / STARTED_FILE, json.dumps(settings, indent=1))


def _eval_steps(run_dir: Path) -> set[int]:
    return {
        int(r["step"]) for r in read_records(run_dir) if r.get("kind") == "eval" and "step" in r
    }


def read_records(run_dir: Path) -> list[dict]:
    """The run's ``metrics.jsonl`` records; a line cut short by a stop is left out."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def _readable(path: Path) -> bool:
    """Whether a torch (zip) or safetensors file is whole: its index at the end is readable
    (a file cut short by a lost machine is not), without reading its tensors."""
    if path.suffix == ".safetensors":
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="pt"):
                return True
        except Exception:  # safetensors raises its own error types on a cut file
            return False
    try:
        with zipfile.ZipFile(path):
            return True
    except (OSError, zipfile.BadZipFile):
        return False


def _complete(folder: Path) -> bool:
    weights = [folder / name for name in WEIGHT_FILES if (folder / name).is_file()]
    if not weights or not all((folder / name).is_file() for name in CHECKPOINT_FILES):
        return False
    try:
        json.loads((folder / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return False
    torch_files = [folder / n for n in CHECKPOINT_FILES if n.endswith((".pt", ".pth"))]
    return all(_readable(path) for path in [*weights, *torch_files])


def started_settings(run_dir: Path) -> dict | None:
    """The settings the run started with (its ``started.json``); None without one."""
    try:
        return json.loads((Path(run_dir) / STARTED_FILE).read_text())
    except (OSError, ValueError):
        return None


def same_model(a, b) -> bool:
    """Whether two recorded starting checkpoints are the same: the same path however it was
    spelled (relative to another working folder, or absolute), or the same cached warm start
    (``warm-<hash>``, the hash covering everything that made it) in another ``--out-dir``."""
    if a == b:
        return True
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    pa, pb = Path(a), Path(b)
    if pa.name == pb.name and pa.name.startswith("warm-") and pa.parent.name == ".cache":
        return pb.parent.name == ".cache"
    try:
        return pa.resolve() == pb.resolve()
    except (OSError, RuntimeError):
        return False


def changed_settings(stored: dict, now: dict) -> list[str]:
    """The keys whose values differ between two runs' recorded settings (the starting
    checkpoint compared by :func:`same_model`)."""
    return sorted(
        k
        for k in now.keys() | stored.keys()
        if now.get(k) != stored.get(k)
        and not (k == "model_path" and same_model(stored.get(k), now.get(k)))
    )


def resume_point(run_dir: Path, settings: dict) -> tuple[Path, int] | None:
    """(checkpoint folder, its step) to resume ``run_dir`` from: the newest complete
    checkpoint whose step has its evaluation recorded, when the run started with ``settings``
    and its drift reference is there; None = start over."""
    run_dir = Path(run_dir)
    started = started_settings(run_dir)
    if (
        not isinstance(started, dict)
        or changed_settings(started, settings)
        or not (trainer_folder(run_dir) / DRIFT_REFERENCE).is_file()
    ):
        return None
    evaluated = _eval_steps(run_dir)
    found = []
    for folder in trainer_folder(run_dir).glob("checkpoint-*"):
        step = folder.name.removeprefix("checkpoint-")
        if step.isdigit() and int(step) in evaluated and _complete(folder):
            found.append((int(step), folder))
    if not found:
        return None
    step, folder = max(found)
    return folder, step


def resumed_steps(run_dir: Path) -> list[int]:
    """The steps an unfinished run was resumed at so far (its ``resumed.json``)."""
    try:
        return [int(x) for x in json.loads((Path(run_dir) / RESUMED_FILE).read_text())]
    except (OSError, ValueError, TypeError):
        return []


def note_resumed(run_dir: Path, step: int) -> None:
    """Add ``step`` to the steps the run was resumed at."""
    steps = sorted({*resumed_steps(run_dir), int(step)})
    atomic_write_text(Path(run_dir) / RESUMED_FILE, json.dumps(steps))


def keep_records_to(run_dir: Path, step: int) -> float:
    """Drop the records written after ``step`` (they are trained again) and return the run's
    elapsed seconds at that step's evaluation."""
    kept = [r for r in read_records(run_dir) if int(r.get("step", 0)) <= step]
    kept = [r for r in kept if r.get("kind") in ("eval", "train")]
    text = "".join(json.dumps(r) + "\n" for r in kept)
    atomic_write_text(Path(run_dir) / "metrics.jsonl", text)
    at = [r for r in kept if r.get("kind") == "eval" and int(r["step"]) == step]
    return float(at[-1].get("elapsed_seconds", 0.0)) if at else 0.0


def keep_peak_memory(run_dir: Path, peak: dict[str, float]) -> dict[str, float]:
    """The highest of ``peak`` and the peaks kept by the run's earlier segments (beside its
    checkpoints), kept for the next segment and returned."""
    path = trainer_folder(run_dir) / PEAK_FILE
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    kept = kept if isinstance(kept, dict) else {}
    merged = {}
    for key, value in peak.items():
        earlier = kept.get(key)
        merged[key] = max(float(value), float(earlier) if isinstance(earlier, int | float) else 0.0)
    if path.parent.is_dir():
        atomic_write_text(path, json.dumps(merged))
    return merged


class RunClock:
    """A run's wall time across resumes: ``before`` seconds from earlier segments plus this
    one's, counted from :meth:`begin` (or construction)."""

    def __init__(self, before: float = 0.0):
        self.before = float(before)
        self.start = time.perf_counter()

    def begin(self) -> None:
        """Count this segment from now (training starts; setting up is not counted)."""
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return self.before + time.perf_counter() - self.start


class DriftReference:
    """||theta - theta_0|| / ||theta_0|| over the model's weights, theta_0 the run's start.

    Only trained parameters can move, so only theirs are kept (a LoRA run keeps its adapters,
    not the base model); the norm is over all of them. ``save``/``load`` carry it across a
    resume.

    >>> import torch
    >>> m = torch.nn.Linear(2, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = m.weight.copy_(torch.tensor([[3.0, 4.0]]))
    >>> start = DriftReference(m)
    >>> with torch.no_grad():
    ...     _ = m.weight.add_(torch.tensor([[0.0, 0.5]]))
    >>> start.drift(m)
    0.1
    """

    def __init__(self, model):
        import torch

        named = list(model.named_parameters())
        self.initial = {n: p.detach().clone() for n, p in named if p.requires_grad}
        self.norm_sq = sum(float(p.detach().pow(2).sum()) for _, p in named)
        self._tiny = torch.finfo(torch.float32).tiny

    def drift(self, model) -> float:
        params = dict(model.named_parameters())
        diff = sum(float((params[n].detach() - p0).pow(2).sum()) for n, p0 in self.initial.items())
        return (diff / max(self.norm_sq, self._tiny)) ** 0.5

    def save(self, path: Path) -> None:
        import torch

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        torch.save({"initial": self.initial, "norm_sq": self.norm_sq}, tmp)
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> DriftReference:
        import torch

        data = torch.load(path, map_location="cpu", weights_only=True)
        ref = cls.__new__(cls)
        ref.initial, ref.norm_sq = data["initial"], float(data["norm_sq"])
        ref._tiny = torch.finfo(torch.float32).tiny
        return ref
