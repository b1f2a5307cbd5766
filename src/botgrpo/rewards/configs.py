"""Build reward configs from plain mappings (YAML, JSON, command-line keyword arguments).

>>> from botgrpo.rewards import MathRewardConfig
>>> cfg = config_from_mapping(MathRewardConfig, {"steps": {"window": 1}, "answer_column": "gold"})
>>> cfg.steps.window, cfg.steps.propagation, cfg.answer_column
(1, 'error', 'gold')
"""

from __future__ import annotations

import dataclasses
import types
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
        _check_option_type(cls, name, hint, value)
        kwargs[name] = value
    return cls(**kwargs)


_BASIC = (bool, int, float, str)

#: The spellings a boolean option accepts from text (case-insensitive).
TRUE_WORDS = ("true", "yes", "1", "on")
FALSE_WORDS = ("false", "no", "0", "off")


def basic_members(hint: Any) -> tuple[type, ...] | None:
    """The basic types (bool, int, float, str, None) a hint allows, or None when it allows
    anything else too (a list, a dict, an enum: not checked here)."""
    if hint in _BASIC:
        return (hint,)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = typing.get_args(hint)
        if all(m in _BASIC or m is type(None) for m in members):
            return members
    return None


def matches_basic(value: object, allowed: tuple[type, ...]) -> bool:
    if value is None:
        return type(None) in allowed
    if isinstance(value, bool):
        return bool in allowed
    if isinstance(value, int):
        return int in allowed or float in allowed
    return any(isinstance(value, t) for t in allowed if t is not bool)


def _check_option_type(cls: type, name: str, hint: Any, value: Any) -> None:
    """TypeError when a mapping's value cannot be what the field holds: a nested config that
    is not a mapping, a string where a tuple goes, a string 'false' where a bool goes."""
    where = f"{cls.__name__}.{name}"
    if dataclasses.is_dataclass(hint) and not isinstance(value, hint):
        if isinstance(value, Mapping):  # a dataclass built directly: its fields are not read
            options = ", ".join(f"{k}={v!r}" for k, v in value.items())
            raise TypeError(
                f"{where} must be a {hint.__name__}, got the mapping {value!r}: pass "
                f"{hint.__name__}({options}), or give the whole config as a mapping to the "
                "reward's factory"
            )
        raise TypeError(f"{where} must be a mapping of {hint.__name__} options, got {value!r}")
    if typing.get_origin(hint) is tuple and not isinstance(value, tuple | list):
        raise TypeError(f"{where} must be a list, got {value!r}")
    allowed = basic_members(hint)
    if allowed is not None and not matches_basic(value, allowed):
        names = " or ".join("None" if t is type(None) else t.__name__ for t in allowed)
        raise TypeError(f"{where} must be {names}, got {value!r}")


def check_config_types(config: object) -> None:
    """TypeError naming the first field of the config dataclass ``config`` that holds the wrong
    kind of value (a string 'false' for a bool, a string for a list, a number for a nested
    config); called by every reward config's ``__post_init__``."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):  # type: ignore[arg-type]
        _check_option_type(type(config), f.name, hints[f.name], getattr(config, f.name))
