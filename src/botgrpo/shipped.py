"""The warm starts shipped with the package: small tiny-model checkpoints under
``botgrpo/checkpoints/NAME``, each with its cache key in ``warm_start.json``.

``warm:NAME`` names one wherever a model does (``botgrpo train``, the Python API); a comparison
whose warm-start key matches one copies it into its cache instead of training
(:mod:`botgrpo.harness.warmstart`); ``botgrpo warm-start --retrain --package NAME`` rebuilds one.
"""

from __future__ import annotations

import json
from pathlib import Path

from botgrpo.folders import SHIPPED_DIR

#: Where the shipped warm starts live.
PACKAGED_DIR: Path = SHIPPED_DIR


def shipped_warm_start(name: str) -> Path:
    """The folder of the warm start shipped with the package for task ``name`` (``chain``: the
    demo's starting checkpoint, a tiny model that imitates a teacher who forgets carries);
    ValueError naming the shipped ones. Load it with ``from_pretrained`` as any model folder."""
    from botgrpo.usage import check_package_name

    check_package_name(name, "warm start name")
    shipped = sorted(p.parent.name for p in PACKAGED_DIR.glob("*/warm_start.json"))
    if name not in shipped:
        raise ValueError(
            f"no warm start {name!r} ships with botgrpo; shipped: "
            f"{', '.join(f'warm:{n}' for n in shipped) or 'none'}"
        )
    return PACKAGED_DIR / name


def packaged_warm_start(key: str) -> Path | None:
    """The shipped checkpoint whose warm_start.json records cache key ``key``, if any."""
    if not PACKAGED_DIR.is_dir():
        return None
    for meta in sorted(PACKAGED_DIR.glob("*/warm_start.json")):
        try:
            if json.loads(meta.read_text()).get("key") == key:
                return meta.parent
        except (OSError, ValueError):
            continue
    return None
