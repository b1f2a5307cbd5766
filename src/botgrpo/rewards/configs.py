"""Build reward configs from plain mappings (YAML, JSON, command-line keyword arguments).

>>> from botgrpo.rewards import MathRewardConfig
>>> cfg = config_from_mapping(MathRewardConfig, {"steps": {"window": 1}, "answer_column": "gold"})
>>> cfg.steps.window, cfg.steps.propagation, cfg.answer_column
(1, 'error', 'gold')
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

__all__ = ["config_from_mapping"]

C = TypeVar("C")


def config_from_mapping(cls: type[C], values: C | Mapping[str, Any] | None) -> C:
    """``cls(**values)``, building nested config dataclasses from nested mappings.

    An instance of ``cls`` is returned as is and None gives the defaults. Lists become tuples
    where the field is a tuple. Unknown keys raise a ValueError listing the valid ones.
    """
    if values is None:
        return cls()
    if isinstance(values, cls):
        return values
    if not isinstance(values, Mapping):
        raise TypeError(f"{cls.__name__}: expected a mapping or {cls.__name__}, got {values!r}")
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown option(s) {unknown}; valid: {sorted(fields)}")
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint) and isinstance(value, Mapping):
            value = config_from_mapping(hint, value)  # type: ignore[arg-type]
        elif typing.get_origin(hint) is tuple and isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)
