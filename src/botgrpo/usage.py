"""User mistakes on the command line: one line naming the problem and the fix, exit status 2.

Commands check what the user gave them (task specs, files, reward names, config files) before
any warm start, model build or training, and raise :class:`UsageError` for a mistake. The
``botgrpo`` entry point prints it as ``botgrpo <command>: error: <message>`` and exits with
status 2; any other exception is a bug and keeps its traceback. Set ``BOTGRPO_TRACEBACK=1`` to
see the traceback of a usage error too.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import shutil
import sys
import tempfile
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

from botgrpo.folders import FolderBusy, FolderOwned
from botgrpo.imports import import_hint
from botgrpo.rewards.configs import FALSE_WORDS, TRUE_WORDS  # re-exported: parse_bool's words


class UsageError(Exception):
    """A mistake in the user's input; its message says what is wrong and how to fix it."""


def run_reporting_usage_errors(command: str, run: Callable[[], int]) -> int:
    """``run()``, or 2 after printing ``botgrpo <command>: error: ...`` for a :class:`UsageError`
    (and a folder another command owns or holds: :mod:`botgrpo.folders`); 130 after one line
    for Ctrl-C."""
    try:
        return run()
    except KeyboardInterrupt:
        print(
            f"botgrpo {command}: interrupted; what finished is kept (nothing is left "
            "half-written): run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    except (UsageError, FolderOwned, FolderBusy) as err:
        if os.environ.get("BOTGRPO_TRACEBACK"):
            raise
        message = " ".join(str(err).split())  # one line, whatever the message held
        print(f"botgrpo {command}: error: {message}", file=sys.stderr)
        return 2


def check_task_spec(spec: str) -> Any:
    """The task of ``spec`` (see :func:`botgrpo.tasks.load_task`), loaded and checked in full
    (:func:`botgrpo.tasks.base.validate_task`: a user's task's demonstration and score too), so
    a bad spec, a missing or malformed file, an unknown dataset, a missing package or a task
    that breaks the protocol fails now; raises :class:`UsageError` naming the spec."""
    from botgrpo.tasks import BUILTIN_TASKS, load_task
    from botgrpo.tasks.base import Example, validate_task

    try:
        task = load_task(spec)
        example = task.sample(random.Random(0))
    except OSError as err:
        if err.filename is None:
            raise UsageError(f"task {spec!r}: {err}") from err
        raise UsageError(
            f"task {spec!r}: cannot read {err.filename} ({err.strerror or err}); check the path"
        ) from err
    except ImportError as err:
        raise UsageError(f"task {spec!r}: {import_hint(err, str(spec))}") from err
    except (ValueError, TypeError) as err:
        raise UsageError(f"task {spec!r}: {err}") from err
    except Exception as err:  # a user's factory or sample() failing in its own code
        raise UsageError(
            f"task {spec!r}: loading it raised {type(err).__name__}: {err} (set "
            "BOTGRPO_TRACEBACK=1 for the traceback)"
        ) from err
    if not isinstance(example, Example):
        raise UsageError(
            f"task {spec!r}: its sample() returned a {type(example).__name__}, not an Example "
            "(botgrpo.tasks.base.Example)"
        )
    builtin = str(spec).partition(":")[0] in BUILTIN_TASKS  # checked by botgrpo's own tests
    try:
        validate_task(task, score=not builtin)
    except ValueError as err:
        raise UsageError(f"task {spec!r}: {err} (docs/tasks.md has the protocol)") from err
    except Exception as err:  # a user's task failing in its own code
        raise UsageError(
            f"task {spec!r}: checking it raised {type(err).__name__}: {err} (set "
            "BOTGRPO_TRACEBACK=1 for the traceback)"
        ) from err
    return task


def _unique_key_loader():
    """A yaml SafeLoader whose mappings refuse a key given twice (plain YAML keeps the last)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        pass

    def construct_mapping(loader, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    UniqueKeyLoader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping
    )
    return UniqueKeyLoader


def check_yaml_mapping(path: str, what: str = "config file") -> dict:
    """The YAML mapping in ``path``; :class:`UsageError` if it is missing, unreadable, malformed
    (with the line and column) or not a mapping."""
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise UsageError(
            f"{what} {path}: cannot read it ({err.strerror or err}); check the path"
        ) from err
    try:
        data = yaml.load(text, Loader=_unique_key_loader())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise UsageError(f"{what} {path} is not valid YAML{where}: {problem}") from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(
            f"{what} {path} must hold a YAML mapping of option: value, got a {type(data).__name__}"
        )
    return data


def parse_bool(text: str) -> bool:
    """``text`` as a boolean: true/yes/1/on or false/no/0/off (any case); anything else is an
    error (``argparse`` reports it as an invalid value), never a silent False."""
    word = str(text).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a boolean; write one of {', '.join(TRUE_WORDS + FALSE_WORDS)}"
    )


parse_bool.__name__ = "bool"  # argparse names the type in its message: "invalid bool value"


def one_line_parser_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make ``parser`` raise :class:`UsageError` for a bad flag instead of printing its whole
    usage (hundreds of lines for ``botgrpo train``) before the one line that matters."""
    prog = parser.prog

    def error(message: str) -> NoReturn:
        raise UsageError(f"{message} (`{prog} --help` lists the options)")

    parser.error = error  # type: ignore[method-assign]
    return parser


def check_finite_number(name: str, value: object, *, low: float, low_inclusive: bool) -> None:
    """ValueError unless ``value`` is a finite real number above ``low`` (or equal to it when
    ``low_inclusive``)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    ok = ok and math.isfinite(value) and (value >= low if low_inclusive else value > low)
    if not ok:
        relation = ">=" if low_inclusive else ">"
        raise ValueError(f"{name} must be a finite number {relation} {low:g}, got {value!r}")


def check_unique(name: str, values: Iterable[object]) -> None:
    """ValueError naming the repeated entries of ``values``."""
    seen: set = set()
    repeated = [v for v in values if v in seen or seen.add(v)]
    if repeated:
        raise ValueError(
            f"{name} lists {sorted(set(map(str, repeated)))} more than once; give each once"
        )


def check_folder_name(name: str, what: str) -> None:
    """ValueError unless ``name`` is one plain folder name (not empty, no path separator, not
    '.' or '..'): it names a folder a command creates inside another."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or name != name.strip():
        raise ValueError(
            f"{what} {name!r} must be a plain folder name (no '/', not empty, '.' or '..'), "
            "e.g. my-run"
        )
    _check_name_length(name, what)


#: The longest file name most file systems take, in bytes.
NAME_MAX = 255


def _check_name_length(name: str, what: str) -> None:
    if len(name.encode()) > NAME_MAX - 16:  # room for the suffixes commands add (.tmp, ...)
        raise ValueError(
            f"{what} {name[:20]!r}... is {len(name.encode())} bytes long; file names take at "
            f"most {NAME_MAX - 16} here"
        )


_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def check_package_name(name: str, what: str = "--package") -> None:
    """ValueError unless ``name`` is a plain name: letters, digits, '_', '-' and '.', not
    starting with '.' or '-' (so it can only name a folder directly inside another)."""
    if not _IDENTIFIER.fullmatch(name or "") or name in (".", ".."):
        raise ValueError(
            f"{what} {name!r} must be a plain name of letters, digits, '_', '-' or '.' (e.g. chain)"
        )
    _check_name_length(name, what)


def remove_owned_folder(path: Path, parent: Path, marker: str) -> None:
    """Delete ``path`` only when, resolved, it lies directly inside ``parent`` and holds
    ``marker`` (the file that says this command wrote it); a missing ``path`` is fine. Raises
    ValueError otherwise, deleting nothing."""
    resolved, home = path.resolve(), parent.resolve()
    if resolved.parent != home or path.is_symlink():
        raise ValueError(f"refusing to delete {path}: it is not a folder directly inside {parent}")
    if not resolved.exists():
        return
    if not (resolved / marker).is_file():
        raise ValueError(
            f"refusing to delete {path}: it holds no {marker}, so it was not written by botgrpo; "
            "move it away or pick another name"
        )
    shutil.rmtree(resolved)


def check_writable_folder(path: str | Path, what: str) -> None:
    """ValueError unless ``path`` is a folder that can be written, or can be created: its
    nearest existing ancestor must be a folder in which a folder can be made (tried, then
    removed, so it holds for root and read-only file systems alike). Creates nothing."""
    target = Path(path).expanduser()
    too_long = [p for p in target.parts if len(p.encode()) > NAME_MAX]
    if too_long:
        raise ValueError(
            f"{what}: the name {too_long[0][:20]!r}... is {len(too_long[0].encode())} bytes long; "
            f"file names take at most {NAME_MAX}"
        )
    try:
        if target.exists() and not target.is_dir():
            raise ValueError(f"{what} {path} is a file, not a folder; pass a folder path")
        probe = target
        while not probe.exists():
            probe = probe.parent
    except OSError as err:
        raise ValueError(f"{what} {path}: {err.strerror or err}; pass another folder") from err
    if not probe.is_dir():
        raise ValueError(f"{what} {path}: {probe} is a file, not a folder; pass a folder path")
    try:
        made = tempfile.mkdtemp(prefix=".botgrpo-write-check-", dir=probe)
    except OSError as err:
        raise ValueError(
            f"{what} {path}: cannot write in {probe} ({err.strerror or err}); pass a writable "
            "folder"
        ) from err
    os.rmdir(made)


def check_basic_field_types(obj: object) -> None:
    """ValueError naming the first field of dataclass ``obj`` whose hint is a basic type (bool,
    int, float, str, optionally None) and whose value is not one (e.g. a YAML list where a
    number belongs, or 1.5 for an int); fields of other types are left to their own checks."""
    import dataclasses

    from botgrpo.rewards.configs import basic_members, matches_basic

    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        allowed = basic_members(hints.get(f.name))
        value = getattr(obj, f.name)
        if allowed is not None and not matches_basic(value, allowed):
            names = " or ".join("None" if t is type(None) else t.__name__ for t in allowed)
            raise ValueError(f"{f.name} must be {names}, got {value!r}")
