"""Why a user's ``module:attr`` spec (a task factory, a reward function) did not import, in
words, with the fix."""

from __future__ import annotations


def import_hint(err: ImportError, spec: str) -> str:
    """An import error of a ``module:attr`` spec in words, with its fix: a module of the user's
    own that Python cannot find (the botgrpo command does not import from the current folder)
    or a missing package."""
    module = spec.partition(":")[0]
    if err.name and module.split(".")[0] == err.name.split(".")[0]:
        return (
            f"{err}; a module of your own must be importable: run with its folder on PYTHONPATH "
            "(e.g. PYTHONPATH=. botgrpo ...) or install its package, and check the import path"
        )
    return f"{err}; install the missing package (e.g. pip install {err.name or 'it'})"
