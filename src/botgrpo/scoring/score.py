"""Score completions with token reward functions outside any trainer's reward loop.

An engine without TRL's reward loop (verl's agent loop, an offline evaluation) calls the reward
functions itself and turns their answers into a :class:`~botgrpo.scoring.token_batch.TokenBatch`
here, through the same split (:func:`~botgrpo.scoring.entries.split_entries`) and assembly
(:func:`~botgrpo.scoring.token_batch.build_token_batch`) as the TRL trainer, so one reward function
gives token for token the same rewards under either engine:

    r_t = sum_f weight_f * (outcome part_f + token part_f[t])     on the completion's tokens

The outcome parts pass through a float32 matrix, exactly like TRL's reward matrix.

>>> from botgrpo.rewards import TokenReward
>>> def reward(completion_ids, **columns):
...     return [TokenReward(outcome=1.0, local=[0.5] * len(ids)) for ids in completion_ids]
>>> spec = RewardSpec([reward], w_g=3.0, w_s=0.5)
>>> tb = score_completions(spec, prompts=["p"], completions=["ab"], completion_ids=[[7, 8]])
>>> tb.rewards_BT.tolist()   # 3 * 1 + 0.5 * 0.5
[[3.25, 3.25]]
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from botgrpo.scoring.entries import RewardBatch, entry_bound, split_entries
from botgrpo.scoring.token_batch import TokenBatch, build_token_batch


def reward_name(func: Callable) -> str:
    """A reward function's name in errors and logs (its ``__name__``, else its class name)."""
    return getattr(func, "__name__", None) or type(func).__name__


@dataclass(frozen=True)
class RewardSpec:
    """The reward functions of a run and how their answers are weighted (Eq. 4 of the paper).

    Args:
        funcs: reward functions ``fn(prompts, completions, completion_ids, **columns)``, each
            returning one TokenReward, float, list of per-token floats or None per completion.
        w_g: weight of each rollout's outcome G (scalars count as outcomes: ``w_g * s``).
        w_s: weight of the local signal S_t.
        local_bound: bound B on |S_t| (a function's own ``local_bound`` attribute wins).
        weights: one weight per function (TRL's ``reward_weights``); None: all 1.
    """

    funcs: Sequence[Callable]
    w_g: float = 1.0
    w_s: float = 1.0
    local_bound: float = math.inf
    weights: Sequence[float] | None = None
    names: list[str] = field(init=False)

    def __post_init__(self) -> None:
        if not self.funcs:
            raise ValueError("RewardSpec needs at least one reward function")
        for func in self.funcs:
            if not callable(func):
                raise TypeError(f"reward function {func!r} is not callable")
        if self.weights is not None and len(self.weights) != len(self.funcs):
            raise ValueError(
                f"got {len(self.weights)} reward weights for {len(self.funcs)} reward functions; "
                "give one weight per function (or none: all 1)"
            )
        object.__setattr__(self, "names", [reward_name(f) for f in self.funcs])

    @property
    def weights_F(self) -> torch.Tensor:
        """float32 [F] per-function weights."""
        weights = self.weights if self.weights is not None else [1.0] * len(self.funcs)
        return torch.tensor([float(w) for w in weights], dtype=torch.float32)

    def call(self, func: Callable, prompts, completions, completion_ids, columns) -> Any:
        """Call one function with the engine-neutral keyword convention, naming it on failure."""
        try:
            return func(
                prompts=prompts, completions=completions, completion_ids=completion_ids, **columns
            )
        except Exception as err:
            raise RuntimeError(
                f"reward function {reward_name(func)!r} raised {type(err).__name__}: {err}"
            ) from err


def token_batch_from_answers(
    spec: RewardSpec,
    answers: Sequence[Any],
    completion_ids: Sequence[Sequence[int]],
    width: int | None = None,
    tool_mask_BT: torch.Tensor | None = None,
) -> TokenBatch:
    """Split every function's answer (``answers[f]``) and assemble the :class:`TokenBatch`.

    ``width`` defaults to the longest completion; ``tool_mask_BT`` is 0 on tool-output tokens.
    """
    batch = RewardBatch(completion_ids)
    n, f = len(batch.lengths), len(spec.funcs)
    outcome_BF = torch.full((n, f), math.nan, dtype=torch.float32)
    for slot, (func, name, out) in enumerate(zip(spec.funcs, spec.names, answers, strict=True)):
        bound = entry_bound(func, spec.local_bound)
        parts = split_entries(name, out, batch, slot, spec.w_g, spec.w_s, bound)
        outcome_BF[:, slot] = torch.tensor([math.nan if p is None else p for p in parts])
    width = max(batch.lengths, default=0) if width is None else width
    return build_token_batch(batch, outcome_BF, spec.weights_F, spec.names, width, tool_mask_BT)


def score_completions(
    spec: RewardSpec,
    prompts: Sequence[Any],
    completions: Sequence[Any],
    completion_ids: Sequence[Sequence[int]],
    columns: Mapping[str, Sequence[Any]] | None = None,
    tool_mask_BT: torch.Tensor | None = None,
) -> TokenBatch:
    """Call every (sync) reward function on the batch and return its :class:`TokenBatch`.

    ``columns`` are the dataset columns (one value per completion), passed as keyword arguments.
    """
    columns = dict(columns or {})
    answers = []
    for func in spec.funcs:
        result = spec.call(func, prompts, completions, completion_ids, columns)
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise TypeError(
                f"reward function {reward_name(func)!r} is async; use ascore_completions"
            )
        answers.append(result)
    return token_batch_from_answers(spec, answers, completion_ids, tool_mask_BT=tool_mask_BT)


async def ascore_completions(
    spec: RewardSpec,
    prompts: Sequence[Any],
    completions: Sequence[Any],
    completion_ids: Sequence[Sequence[int]],
    columns: Mapping[str, Sequence[Any]] | None = None,
    tool_mask_BT: torch.Tensor | None = None,
) -> TokenBatch:
    """:func:`score_completions` for an event loop: async functions are awaited, sync ones run
    in a worker thread so a slow reward (sandbox, judge) does not block the loop."""
    import asyncio

    columns = dict(columns or {})
    answers = []
    for func in spec.funcs:
        result = await asyncio.to_thread(
            spec.call, func, prompts, completions, completion_ids, columns
        )
        if inspect.isawaitable(result):
            result = await _named(func, result)
        answers.append(result)
    return token_batch_from_answers(spec, answers, completion_ids, tool_mask_BT=tool_mask_BT)


async def _named(func: Callable, awaitable: Any) -> Any:
    try:
        return await awaitable
    except Exception as err:
        raise RuntimeError(
            f"reward function {reward_name(func)!r} raised {type(err).__name__}: {err}"
        ) from err
