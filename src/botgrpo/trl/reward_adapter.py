"""Let token reward functions run inside TRL's reward loop, next to its scalar reward functions.

TRL calls every reward function as ``fn(prompts, completions, completion_ids, **columns)`` and
expects one float (or None) per completion. A :class:`RewardAdapter` wraps a user function,
checks every entry, hands TRL the entry's *outcome part* (one float) and keeps the entry's
*token part* for the advantage step. The split itself is engine-neutral and lives in
:mod:`botgrpo.scoring.entries` (the verl hook uses it too); its table is repeated there.

An exception inside the function is an error naming the function and the completion (its index
in this process's batch and in the global batch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn
from trl.trainer.utils import get_callable_name, is_async_callable

from botgrpo.scoring.entries import RewardBatch, entry_bound, split_entries

__all__ = [
    "AsyncRewardAdapter",
    "RewardAdapter",
    "RewardBatch",
    "RewardFunctionError",
    "adapt_reward_funcs",
    "split_entries",
]

_NO_LOG = {"log_extra": lambda *a, **k: None, "log_metric": lambda *a, **k: None}


class RewardFunctionError(RuntimeError):
    """A user's reward function raised: the message names the function and the completion.
    ``botgrpo train`` ends on it in one line, as on
    :class:`~botgrpo.scoring.entries.RewardOutputError` (what it returned cannot be a reward)."""


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
        bound = entry_bound(self.func, args.local_bound)
        return split_entries(self.__name__, out, batch, self.slot, args.w_g, args.w_s, bound)

    def _locate(self, err, prompts, completions, completion_ids, kwargs) -> RewardFunctionError:
        """Find the first completion on which the function fails alone (called on failure only)."""
        for i, one in enumerate(_single_calls(prompts, completions, completion_ids, kwargs)):
            try:
                self.func(**one)
            except Exception as single_err:
                return self._failure(single_err, i)
        return self._failure(err, None, len(prompts))

    def _failure(self, err: Exception, i: int | None, n: int = 0) -> RewardFunctionError:
        where = (
            self.owner.reward_batch.where(i)
            if i is not None
            else f"this process's batch of {n} completions (on no single completion alone)"
        )
        return RewardFunctionError(
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
    ) -> RewardFunctionError:
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
