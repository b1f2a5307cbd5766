"""Who owns a folder botgrpo writes: one kind of folder each, one command at a time.

Every folder a botgrpo command writes records what it is in ``.botgrpo.json`` (see
:data:`KINDS`: a comparison, a training run, a summary, a cached warm start) and, while the
command writes, is held by a file lock (``filelock``) on ``.botgrpo.lock`` inside it. So:

- a command never writes into a folder of another kind (``botgrpo train --output_dir`` pointed
  at a comparison or a cached warm start is refused, as is anything inside the package's shipped
  checkpoints): :class:`FolderOwned`, one line naming the folder's kind and the fix;
- a second command on a folder in use ends at once with :class:`FolderBusy`, naming the command
  that holds it (its pid and since when); the lock is the kernel's, released when the holder's
  process ends, however it ends, so a killed command never leaves a folder locked;
- a file replaced by a command is written beside itself and renamed into place
  (:func:`atomic_write_text`), so an interrupted command leaves the old or the new file, never
  half of one.

Folders written before the marker existed are recognised by their contents
(:func:`folder_kind`). A cached warm start is published whole by renaming a private temporary
folder (:mod:`botgrpo.harness.warmstart`), under a lock beside it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

#: The file in each folder that names its kind and the command that made it.
OWNER_FILE = ".botgrpo.json"

#: The lock file of a folder a command is writing.
LOCK_FILE = ".botgrpo.lock"

#: Folder kinds, with what a message calls them.
KINDS = {
    "comparison": "a `botgrpo compare` comparison",
    "run": "a run of a comparison",
    "training": "a `botgrpo train` output folder",
    "summary": "a `botgrpo summarize` output folder",
    "diagnosis": "a `botgrpo diagnose` output folder",
    "warm-start": "a cached warm start",
    "shipped": "a warm start shipped with botgrpo",
    "real-model": "a converted real model (`make real-model`)",
    "model": "a model folder botgrpo did not write (config.json and weights)",
}

#: The package's own checkpoints: never written by a command but `botgrpo warm-start --package`.
SHIPPED_DIR = Path(__file__).resolve().parent / "checkpoints"


class FolderOwned(ValueError):
    """The folder (or one above it) belongs to another kind of botgrpo output."""


class FolderBusy(ValueError):
    """Another botgrpo command is writing the folder now."""


def _marker(path: Path) -> dict | None:
    try:
        data = json.loads((path / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("kind") in KINDS else None


def _json_keys(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return set()
    return set(data) if isinstance(data, dict) else set()


def folder_kind(path: str | Path) -> str | None:
    """The kind (a key of :data:`KINDS`) of folder ``path``, or None for a folder botgrpo did not
    write (or one that does not exist): its ``.botgrpo.json``, else what its contents show."""
    path = Path(path)
    try:
        if not path.is_dir():
            return None
        resolved = path.resolve()
    except OSError:
        return None
    if resolved == SHIPPED_DIR or SHIPPED_DIR in resolved.parents:
        return "shipped"
    marker = _marker(path)
    if marker is not None:
        return marker["kind"]
    has = lambda name: (path / name).exists()  # noqa: E731
    if has("warm_start.json") and has("config.json"):
        return "warm-start"
    if has("metrics.jsonl") and (has("done.json") or has("progress.json")):
        return "run"
    if _json_keys(path / "config.json") >= {"task", "methods", "seeds"}:
        ran = has("runs") or has("sweep") or has("lr_sweep.json")
        return "comparison" if ran or not has("summary.json") else "summary"
    if has("summary.json") and has("summary.md"):
        return "summary"
    if has("training_args.bin") or any(path.glob("checkpoint-*/trainer_state.json")):
        return "training"
    weights = has("model.safetensors") or has("pytorch_model.bin")
    if has("config.json") and weights:
        return "model"
    return None


def _describe(path: Path, kind: str) -> str:
    return f"{path} is {KINDS[kind]}"


def check_folder_kind(
    path: str | Path, kind: str, *, also: tuple[str, ...] = (), what: str = "output folder"
) -> None:
    """:class:`FolderOwned` unless ``path`` is free for a command that writes a folder of
    ``kind``: it is new, of that kind (or one of ``also``), or a folder botgrpo did not write;
    no folder above it is botgrpo's (a comparison's runs, a warm start's files and the
    shipped checkpoints belong to them); and, for a folder botgrpo did not write, none of its
    subfolders is botgrpo's of another kind (a ``--out-dir`` holding comparisons or cached warm
    starts: marking it would lock them away). Creates nothing."""
    path = Path(path).expanduser()
    own = folder_kind(path)
    if own is not None and own != kind and own not in also:
        raise FolderOwned(
            f"{what} {_describe(path, own)}; a command that writes {KINDS[kind]} must not write "
            "into it: pick another folder"
        )
    if own is None and path.is_dir():
        for child in sorted(path.iterdir()):
            theirs = folder_kind(child) if child.is_dir() else None
            if theirs is not None and theirs not in (kind, *also, "model"):
                raise FolderOwned(
                    f"{what} {path} holds {child.name}, which is {KINDS[theirs]}; a command that "
                    f"writes {KINDS[kind]} must not write around it: pick another folder"
                )
    try:
        resolved = path.resolve()
    except OSError:
        return
    for above in resolved.parents:
        theirs = folder_kind(above)
        if theirs is not None and theirs != "model":
            raise FolderOwned(
                f"{what} {path} lies inside {above}, which is {KINDS[theirs]}; pick a folder "
                "outside it"
            )


def check_no_foreign_files(path: str | Path, names: tuple[str, ...], what: str) -> None:
    """:class:`FolderOwned` when ``path`` is a folder botgrpo did not write that already holds
    one of the files ``names`` a command would replace or remove: those are the user's.
    Creates nothing."""
    path = Path(path).expanduser()
    if folder_kind(path) is not None:
        return
    found = [name for name in names if (path / name).exists()]
    if found:
        raise FolderOwned(
            f"{what} {path} holds {', '.join(found)}, which botgrpo did not write and would "
            "replace: pick another folder"
        )


def check_empty_unless_ours(path: str | Path, what: str) -> None:
    """:class:`FolderOwned` when ``path`` is a folder botgrpo did not write that holds anything:
    a command that keeps checkpoints there (and, as transformers does, removes old
    ``checkpoint-*`` folders) must not take over the user's files. Creates nothing."""
    path = Path(path).expanduser()
    if not path.is_dir() or folder_kind(path) is not None:
        return
    entries = sorted(child.name for child in path.iterdir())
    if entries:
        shown = ", ".join(entries[:3]) + (
            f" and {len(entries) - 3} more" if len(entries) > 3 else ""
        )
        raise FolderOwned(
            f"{what} {path} already holds files botgrpo did not write ({shown}); pass a new or "
            "empty folder"
        )


def check_outside_owned(path: str | Path, what: str) -> None:
    """:class:`FolderOwned` when ``path`` (a folder a command makes things in, such as
    compare's ``--out-dir`` with its ``.cache``) is, or lies inside, a folder botgrpo wrote of
    any kind but a plain model folder. Creates nothing."""
    path = Path(path).expanduser()
    for folder in (path, *path.resolve().parents):
        kind = folder_kind(folder)
        if kind is not None and kind != "model":
            where = "is" if folder == path else f"lies inside {folder}, which is"
            raise FolderOwned(f"{what} {path} {where} {KINDS[kind]}; pick another folder")


def _owner_text(path: Path) -> str:
    marker = _marker(path) or {}
    parts = [str(marker.get("command") or "another botgrpo command")]
    if marker.get("pid"):
        parts.append(f"pid {marker['pid']}")
    if marker.get("started"):
        parts.append(f"since {marker['started']}")
    return ", ".join(parts)


def check_not_busy(path: str | Path, what: str = "output folder") -> None:
    """:class:`FolderBusy` when another command holds ``path``'s lock now; creates nothing (a
    folder without a lock file is free)."""
    path = Path(path).expanduser()
    if not (path / LOCK_FILE).exists():
        return
    try:
        lock = _take(path, what)
    except OSError:
        return  # a read-only folder: the writable-folder check says so
    lock.release()


def _take(path: Path, what: str) -> FileLock:
    """``path``'s lock, taken now, or :class:`FolderBusy` naming its holder."""
    lock = FileLock(str(path / LOCK_FILE), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise FolderBusy(
            f"{what} {path} is in use by {_owner_text(path)}; wait for it to finish or pick "
            "another folder"
        ) from None
    return lock


@contextmanager
def own_folder(
    path: str | Path,
    kind: str,
    command: str,
    *,
    also: tuple[str, ...] = (),
    what: str = "output folder",
) -> Iterator[Path]:
    """Hold ``path`` (created if missing) as a folder of ``kind`` for ``command`` while the
    ``with`` block runs: checks its kind (:func:`check_folder_kind`), takes its lock at once or
    raises :class:`FolderBusy` naming the holder, records the kind and holder in
    ``.botgrpo.json``, and releases the lock on the way out (also on an exception or Ctrl-C).
    A folder it created is removed again when the block fails before anything else was
    written in it, with the parents it made for it while they stay empty (a setting refused
    once the trainer is built leaves nothing behind)."""
    path = Path(path).expanduser()
    check_folder_kind(path, kind, also=also, what=what)
    created = not path.exists()
    new_parents = [p for p in path.parents if not p.exists()]  # innermost first
    path.mkdir(parents=True, exist_ok=True)
    lock = _take(path, what)
    failed = True
    try:
        check_folder_kind(path, kind, also=also, what=what)  # another command may have won
        record = {
            "kind": folder_kind(path) or kind,
            "command": command,
            "pid": os.getpid(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        atomic_write_text(path / OWNER_FILE, json.dumps(record, indent=2))
        yield path
        failed = False
    finally:
        lock.release()
        if failed and created:
            _remove_if_only_markers(path)
            for parent in new_parents:  # the folders made to hold it, if still empty
                try:
                    parent.rmdir()
                except OSError:
                    break


def _remove_if_only_markers(path: Path) -> None:
    """Remove ``path`` when it holds nothing but botgrpo's marker and lock files."""
    try:
        entries = list(path.iterdir())
        if all(e.name in (OWNER_FILE, LOCK_FILE) and e.is_file() for e in entries):
            for entry in entries:
                entry.unlink()
            path.rmdir()
    except OSError:
        pass  # another process wrote there, or the folder is gone: leave it


def mark_folder(path: str | Path, kind: str, command: str) -> None:
    """Record ``kind`` in ``path``'s ``.botgrpo.json`` (a folder another process writes under a
    lock its parent holds, such as a comparison's run)."""
    record = {"kind": kind, "command": command, "pid": os.getpid()}
    atomic_write_text(Path(path) / OWNER_FILE, json.dumps(record, indent=2))


def command_line() -> str:
    """This process's command, as a message names it (``botgrpo compare --name x``)."""
    argv = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv else ["python"]
    text = " ".join(argv)
    return text if len(text) <= 120 else text[:117] + "..."


def file_mode(path: str | Path) -> int:
    """The permissions a file written at ``path`` should get: those of the file it replaces, or
    what ``open()`` would give a new file (0o666 less the process's umask). A temporary file from
    :func:`tempfile.mkstemp` is owner-only (0o600); renamed into place as is, it would take the
    read permission from everyone else."""
    try:
        return Path(path).stat().st_mode & 0o7777
    except OSError:
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it renamed into place: a
    reader, or a command interrupted half-way, sees the old file or the new one, never part."""
    path = Path(path)
    mode = file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
