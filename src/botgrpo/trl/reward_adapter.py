"""Let token reward functions run inside TRL's reward loop, next to its scalar reward functions.

TRL calls every reward function as ``fn(prompts, completions, completion_ids, **columns)`` and
expects one float (or None) per completion. A :class:`RewardAdapter` wraps a user function,
checks every entry, hands TRL the entry's *outcome part* (one float) and keeps the entry's
*token part* for the advantage step. Each entry is split as follows (weights w_g, w_s):

========================  ====================================  ==================================
entry                     outcome part (what TRL sees)          token part (kept, [n_tokens])
========================  ====================================  ==================================
``TokenReward``           ``w_g * G + format_bonus``            ``w_s * S_t``  (steps kept too)
scalar ``s``              ``w_g * s``  (a scalar is an outcome)  none
per-token floats ``x_t``  ``mean_t x_t``                        ``x_t - mean_t x_t`` (so the sum is x)
``None``                  ``None`` (TRL: not applicable)        none
========================  ====================================  ==================================

A wrong number of entries or token rewards, a NaN/inf, a local signal beyond ``local_bound``, an
unknown entry type or an exception inside the function is an error naming the function and the
completion (its index in this process's batch and in the global batch).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from torch import nn
from trl.trainer.utils import get_callable_name, is_async_callable

from botgrpo.rewards.types import TokenReward

_NO_LOG = {"log_extra": lambda *a, **k: None, "log_metric": lambda *a, **k: None}


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


class RewardAdapter:
    """A reward function as TRL sees it: one outcome float per completion.

    Args:
        func: the user's reward function (sync).
        slot: the function's position in the trainer's reward function list.
        owner: holds the current :class:`RewardBatch` (``owner.reward_batch``) and the weights
            ``w_g``, ``w_s``, ``local_bound`` (the trainer's config).
    """

    def __init__(self, func: Callable, slot: int, owner: Any) -> None:
        self.func = func
        self.slot = slot
        self.owner = owner
        self.__name__ = get_callable_name(func)

    def __call__(self, prompts, completions, completion_ids, **kwargs) -> list[float | None]:
        try:
            out = self.func(
                prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs
            )
        except Exception as err:
            raise self._locate(err, prompts, completions, completion_ids, kwargs) from err
        return self._split(out)

    def _split(self, out: Any) -> list[float | None]:
        batch: RewardBatch = self.owner.reward_batch
        args = self.owner.args
        # a recipe declares its own bound B (``fn.local_bound``); else the config's
        bound = getattr(self.func, "local_bound", args.local_bound)
        return split_entries(self.__name__, out, batch, self.slot, args.w_g, args.w_s, bound)

    def _locate(self, err, prompts, completions, completion_ids, kwargs) -> RuntimeError:
        """Find the first completion on which the function fails alone (called on failure only)."""
        for i, one in enumerate(_single_calls(prompts, completions, completion_ids, kwargs)):
            try:
                self.func(**one)
            except Exception as single_err:
                return self._failure(single_err, i)
        return self._failure(err, None, len(prompts))

    def _failure(self, err: Exception, i: int | None, n: int = 0) -> RuntimeError:
        where = (
            self.owner.reward_batch.where(i)
            if i is not None
            else f"this process's batch of {n} completions (on no single completion alone)"
        )
        return RuntimeError(
            f"reward function {self.__name__!r} raised {type(err).__name__} on {where}: {err}"
        )


class AsyncRewardAdapter(RewardAdapter):
    """:class:`RewardAdapter` for ``async`` reward functions (TRL awaits them concurrently)."""

    async def __call__(self, prompts, completions, completion_ids, **kwargs):  # type: ignore[override]
        try:
            out = await self.func(
                prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs
            )
        except Exception as err:
            raise await self._locate_async(
                err, prompts, completions, completion_ids, kwargs
            ) from err
        return self._split(out)

    async def _locate_async(
        self, err, prompts, completions, completion_ids, kwargs
    ) -> RuntimeError:
        for i, one in enumerate(_single_calls(prompts, completions, completion_ids, kwargs)):
            try:
                await self.func(**one)
            except Exception as single_err:
                return self._failure(single_err, i)
        return self._failure(err, None, len(prompts))


def adapt_reward_funcs(reward_funcs: Any, owner: Any) -> list[Any]:
    """Wrap every plain callable of ``reward_funcs``; reward models (str / nn.Module) pass through."""
    if reward_funcs is None:
        return []
    funcs = reward_funcs if isinstance(reward_funcs, list) else [reward_funcs]
    adapted = []
    for slot, func in enumerate(funcs):
        if isinstance(func, str | nn.Module) or not callable(func):
            adapted.append(func)
        elif is_async_callable(func):
            adapted.append(AsyncRewardAdapter(func, slot, owner))
        else:
            adapted.append(RewardAdapter(func, slot, owner))
    return adapted


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
        raise TypeError(
            f"reward function {name!r} returned {type(out).__name__}; expected a list with one "
            "entry (TokenReward, float, list of per-token floats or None) per completion"
        )
    if len(out) != n:
        raise ValueError(
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
            raise TypeError(
                f"reward function {name!r} returned a bool for {batch.where(i)}; return a float "
                "(e.g. float(correct)) so a flag is not mistaken for a reward"
            )
        elif isinstance(entry, numbers.Real):
            value = float(entry)
            if not math.isfinite(value):
                raise ValueError(
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
        raise TypeError(
            f"reward function {name!r} returned {type(entry).__name__} for {batch.where(i)}; "
            "expected a TokenReward, a float, a 1-D list of per-token floats or None"
        )
    _check_token_count(name, values.shape[0], batch, i)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(
            f"reward function {name!r} returned a non-finite token reward ({values[bad[0]]}) at "
            f"token {int(bad[0])} of {batch.where(i)}"
        )
    return values


def _check_token_count(name: str, n_tokens: int, batch: RewardBatch, i: int) -> None:
    expected = batch.lengths[i]
    if n_tokens != expected:
        raise ValueError(
            f"token reward function {name!r} returned {n_tokens} token rewards for {batch.where(i)}, "
            f"which has {expected} tokens (len(completion_ids[{i}]): the generated ids, EOS "
            "included, padding excluded); map spans onto the generated ids"
        )


def _check_bound(name: str, local: np.ndarray, bound: float, batch: RewardBatch, i: int) -> None:
    if local.size and math.isfinite(bound):
        worst = int(np.argmax(np.abs(local)))
        if abs(local[worst]) > bound:
            raise ValueError(
                f"token reward function {name!r} returned local signal {local[worst]} at token "
                f"{worst} of {batch.where(i)}, beyond local_bound={bound} (|S_t| must be bounded; "
                "raise local_bound if the bound is intended)"
            )


def _single_calls(prompts, completions, completion_ids, kwargs: dict[str, Any]):
    """Keyword arguments calling a reward function on one completion at a time (logging off)."""
    n = len(prompts)
    for i in range(n):
        one = {"prompts": prompts[i : i + 1], "completions": completions[i : i + 1]}
        one["completion_ids"] = completion_ids[i : i + 1]
        for key, value in kwargs.items():
            if key in _NO_LOG:
                one[key] = _NO_LOG[key]
            elif isinstance(value, list) and len(value) == n:
                one[key] = value[i : i + 1]
            else:
                one[key] = value
        yield one
