"""User mistakes on the command line: one line naming the problem and the fix, exit status 2.

Commands check what the user gave them (task specs, files, reward names, config files) before
any warm start, model build or training, and raise :class:`UsageError` for a mistake. The
``botgrpo`` entry point prints it as ``botgrpo <command>: error: <message>`` and exits with
status 2; any other exception is a bug and keeps its traceback. Set ``BOTGRPO_TRACEBACK=1`` to
see the traceback of a usage error too.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


class UsageError(Exception):
    """A mistake in the user's input; its message says what is wrong and how to fix it."""


def run_reporting_usage_errors(command: str, run: Callable[[], int]) -> int:
    """``run()``, or 2 after printing ``botgrpo <command>: error: ...`` for a :class:`UsageError`."""
    try:
        return run()
    except UsageError as err:
        if os.environ.get("BOTGRPO_TRACEBACK"):
            raise
        message = " ".join(str(err).split())  # one line, whatever the message held
        print(f"botgrpo {command}: error: {message}", file=sys.stderr)
        return 2


def check_task_spec(spec: str) -> Any:
    """The task of ``spec`` (see :func:`botgrpo.tasks.load_task`), loaded and asked for one
    problem, so a bad spec, a missing or malformed file, an unknown dataset or a missing
    package fails now; raises :class:`UsageError` naming the spec."""
    from botgrpo.tasks import load_task

    try:
        task = load_task(spec)
        task.sample(random.Random(0))
    except OSError as err:
        where = err.filename if err.filename is not None else spec
        raise UsageError(
            f"task {spec!r}: cannot read {where} ({err.strerror or err}); check the path"
        ) from err
    except ImportError as err:
        raise UsageError(
            f"task {spec!r}: {err}; install the missing package (e.g. pip install "
            f"{err.name or 'it'}) or check the module path"
        ) from err
    except (ValueError, TypeError) as err:
        raise UsageError(f"task {spec!r}: {err}") from err
    return task


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
        data = yaml.safe_load(text)
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
