"""The token reward of one completion (BoT-GRPO, arXiv 2610.09804, Eq. 4).

    r_t = w_g * G + w_s * S_t + b_format

``G`` is the rollout's global outcome, ``S_t`` a bounded local signal per completion token and
``b_format`` a rollout-level format term. The weights live with the trainer; a reward function
only returns the three ingredients, so one reward can be replayed under different weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TokenReward"]


def _finite_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"TokenReward.{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"TokenReward.{name} must be finite, got {value}")
    return value


def _local_array(local: Any) -> np.ndarray:
    try:
        arr = np.array(local, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"TokenReward.local must be a 1-D array of numbers: {e}") from e
    if arr.ndim != 1:
        raise ValueError(f"TokenReward.local must be 1-D [n_tokens], got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(
            f"TokenReward.local must be finite; token {int(bad[0])} is {arr[bad[0]]} "
            f"({bad.size} non-finite values)"
        )
    arr.setflags(write=False)
    return arr


def _steps_array(steps: Any, n_tokens: int) -> np.ndarray:
    arr = np.asarray(steps)
    if arr.ndim != 1 or arr.shape[0] != n_tokens:
        raise ValueError(
            f"TokenReward.steps must be 1-D of the same length as local ({n_tokens}), "
            f"got shape {arr.shape}"
        )
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"TokenReward.steps must hold integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=True)
    if arr.size and arr.min() < -1:
        raise ValueError(
            f"TokenReward.steps must be >= -1 (-1 = outside any step), got {int(arr.min())}"
        )
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class TokenReward:
    """Outcome, per-token local signal and format bonus of one completion.

    The arrays are copied and made read-only on construction; every value is checked finite.
    Instances compare by identity (``eq=False``: arrays have no single truth value) and pickle,
    so they can be gathered across processes.

    >>> tr = TokenReward(outcome=1.0, local=[0.5, -0.5, 0.0], format_bonus=0.2)
    >>> tr.outcome_reward(w_g=3.0)   # 3 * 1 + 0.2
    3.2
    >>> tr.token_rewards(w_g=3.0, w_s=0.5).tolist()   # 3.2 + 0.5 * [0.5, -0.5, 0]
    [3.45, 2.95, 3.2]
    """

    outcome: float
    """G: the global outcome of the rollout (binary pass/fail or continuous)."""
    local: np.ndarray
    """S_t: the bounded local signal, float64 [n_tokens], one value per completion token."""
    format_bonus: float = 0.0
    """b_format: a rollout-level term added to every token (e.g. +0.2 well-formed tags)."""
    steps: np.ndarray | None = None
    """Step index per token, int64 [n_tokens], -1 outside any step; None when not stepped."""
    info: Mapping[str, Any] = field(default_factory=dict)
    """Diagnostics for logs and pictures (verdicts, spans, flagged lines); not used in r_t."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "outcome", _finite_float("outcome", self.outcome))
        set_(self, "format_bonus", _finite_float("format_bonus", self.format_bonus))
        local = _local_array(self.local)
        set_(self, "local", local)
        if self.steps is not None:
            set_(self, "steps", _steps_array(self.steps, local.shape[0]))
        if not isinstance(self.info, Mapping):
            raise TypeError(f"TokenReward.info must be a mapping, got {type(self.info).__name__}")
        set_(self, "info", dict(self.info))

    @property
    def n_tokens(self) -> int:
        """Number of completion tokens the reward covers."""
        return int(self.local.shape[0])

    def outcome_reward(self, w_g: float) -> float:
        """The rollout-level part of every token's reward: ``w_g * G + b_format``."""
        return float(w_g) * self.outcome + self.format_bonus

    def token_rewards(self, w_g: float, w_s: float) -> np.ndarray:
        """r_t = w_g * G + b_format + w_s * S_t (Eq. 4 plus the format bonus), float64 [n_tokens]."""
        w_s = _finite_float("w_s", w_s)
        with np.errstate(over="ignore"):
            rewards = self.outcome_reward(_finite_float("w_g", w_g)) + w_s * self.local
        if not np.isfinite(rewards).all():
            raise ValueError(
                f"token_rewards: w_g = {w_g!r} and w_s = {w_s!r} overflow float64 (the rewards "
                "are not finite); use weights of a usual size (the paper's: 3.0 and 0.5)"
            )
        return rewards
