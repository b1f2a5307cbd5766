"""Check a reward function's answer and split each entry into an outcome part and a token part.

Engine-neutral (no trainer imports): the TRL adapter (:mod:`botgrpo.trl.reward_adapter`) and the
verl reward hook (:mod:`botgrpo.verl.reward_hook`) both split answers here, so one reward function
gives the same token rewards under either engine. Each entry is split as follows (weights w_g,
w_s):

========================  ====================================  ==================================
entry                     outcome part                          token part (kept, [n_tokens])
========================  ====================================  ==================================
``TokenReward``           ``w_g * G + format_bonus``            ``w_s * S_t``  (steps kept too)
scalar ``s``              ``w_g * s``  (a scalar is an outcome)  none
per-token floats ``x_t``  ``mean_t x_t``                        ``x_t - mean_t x_t`` (so the sum is x)
``None``                  ``None`` (not applicable)             none
========================  ====================================  ==================================

A wrong number of entries or token rewards, a NaN/inf, a local signal beyond ``local_bound`` or an
unknown entry type is an error naming the function and the completion.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from botgrpo.rewards import TokenReward


class RewardOutputError(ValueError, TypeError):
    """What a reward function returned cannot be a reward (the wrong count or type, a NaN, token
    rewards of the wrong length, a local value beyond its bound); the message names the function
    and the completion. A ValueError and a TypeError both, as the checks raised before."""


class RewardBatch:
    """The token parts of every adapted reward function's answers for one process's batch.

    Attributes:
        lengths: number of completion tokens of each completion (``len(completion_ids[i])``).
        local: per reward-function slot, one float64 array (or None) per completion.
        steps: per slot, one int64 step-index array (or None) per completion.
        process_index: this process's rank, to report global completion indices.
    """

    def __init__(self, completion_ids: Sequence[Sequence[int]], process_index: int = 0) -> None:
        self.lengths = [len(ids) for ids in completion_ids]
        self.local: dict[int, list[np.ndarray | None]] = {}
        self.steps: dict[int, list[np.ndarray | None]] = {}
        self.process_index = process_index

    def where(self, i: int) -> str:
        """Human-readable position of completion ``i``."""
        n = len(self.lengths)
        return f"completion {i} of this process's batch (global index {self.process_index * n + i})"


def entry_bound(func: Callable, default: float) -> float:
    """The bound B on |S_t| for ``func``: its own ``func.local_bound`` (a recipe declares it), else
    ``default`` (the trainer's ``local_bound``)."""
    return getattr(func, "local_bound", default)


def split_entries(
    name: str,
    out: Any,
    batch: RewardBatch,
    slot: int,
    w_g: float,
    w_s: float,
    local_bound: float,
) -> list[float | None]:
    """Check one function's answer and split it into outcome parts (returned) and token parts
    (stored in ``batch`` under ``slot``); see the module docstring for the split."""
    n = len(batch.lengths)
    if isinstance(out, str | bytes) or not isinstance(out, Sequence | np.ndarray):
        raise RewardOutputError(
            f"reward function {name!r} returned {type(out).__name__}; expected a list with one "
            "entry (TokenReward, float, list of per-token floats or None) per completion"
        )
    if len(out) != n:
        raise RewardOutputError(
            f"reward function {name!r} returned {len(out)} entries for {n} completions; return "
            "exactly one entry per completion (None where it does not apply)"
        )
    outcomes: list[float | None] = []
    local: list[np.ndarray | None] = [None] * n
    steps: list[np.ndarray | None] = [None] * n
    for i, entry in enumerate(out):
        if entry is None:
            outcomes.append(None)
        elif isinstance(entry, TokenReward):
            _check_token_count(name, entry.n_tokens, batch, i)
            _check_bound(name, entry.local, local_bound, batch, i)
            outcomes.append(entry.outcome_reward(w_g))
            local[i] = w_s * entry.local
            steps[i] = entry.steps
        elif isinstance(entry, bool | np.bool_):
            raise RewardOutputError(
                f"reward function {name!r} returned a bool for {batch.where(i)}; return a float "
                "(e.g. float(correct)) so a flag is not mistaken for a reward"
            )
        elif isinstance(entry, numbers.Real):
            value = float(entry)
            if not math.isfinite(value):
                raise RewardOutputError(
                    f"reward function {name!r} returned {value} for {batch.where(i)}; rewards must "
                    "be finite (return None where a reward does not apply)"
                )
            outcomes.append(w_g * value)
        else:
            values = _token_floats(name, entry, batch, i)
            mean = float(values.mean()) if values.size else 0.0
            outcomes.append(mean)
            local[i] = values - mean
    if any(x is not None for x in local):
        batch.local[slot] = local
    if any(x is not None for x in steps):
        batch.steps[slot] = steps
    return outcomes


def _token_floats(name: str, entry: Any, batch: RewardBatch, i: int) -> np.ndarray:
    try:
        values = np.asarray(entry, dtype=np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or values.ndim != 1:
        raise RewardOutputError(
            f"reward function {name!r} returned {type(entry).__name__} for {batch.where(i)}; "
            "expected a TokenReward, a float, a 1-D list of per-token floats or None"
        )
    _check_token_count(name, values.shape[0], batch, i)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise RewardOutputError(
            f"reward function {name!r} returned a non-finite token reward ({values[bad[0]]}) at "
            f"token {int(bad[0])} of {batch.where(i)}"
        )
    return values


def _check_token_count(name: str, n_tokens: int, batch: RewardBatch, i: int) -> None:
    expected = batch.lengths[i]
    if n_tokens != expected:
        raise RewardOutputError(
            f"token reward function {name!r} returned {n_tokens} token rewards for {batch.where(i)}, "
            f"which has {expected} tokens (len(completion_ids[{i}]): the generated ids, EOS "
            "included, padding excluded); map spans onto the generated ids"
        )


def _check_bound(name: str, local: np.ndarray, bound: float, batch: RewardBatch, i: int) -> None:
    if local.size and math.isfinite(bound):
        worst = int(np.argmax(np.abs(local)))
        if abs(local[worst]) > bound:
            raise RewardOutputError(
                f"token reward function {name!r} returned local signal {local[worst]} at token "
                f"{worst} of {batch.where(i)}, beyond local_bound={bound} (|S_t| must be bounded; "
                "raise local_bound if the bound is intended: the config's local_bound, or a "
                "local_bound attribute on the function)"
            )
