"""Token rewards of a batch of completions as right-padded [B, T] tensors, and the advantage step
on them. Engine-neutral: TRL's and verl's integrations both build their rewards here.

Completions are right-padded: position t of row i is token t of completion i, so a completion's n
token rewards fill positions 0..n-1 of its row. The reward every estimator reads follows the
paper's comparison protocol:

==========================  ========================================================
estimator                   reward it reads
==========================  ========================================================
grpo, dr_grpo, rloo         the outcome R_i (the outcome parts, weighted and summed)
pure                        step rewards (the token parts, with steps) + outcome R_i
reinforce_pp, otb, gae      the token parts, and R_i on each completion's last token
                            (their credit is a reward-to-go: an outcome spread over
                            every token would count L - t times)
bot, bot_uniform, others    the token rewards r_t = R_i + token parts (+ steps if
                            the estimator takes ``steps_BT``, e.g. grpo_process)
==========================  ========================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from botgrpo.core import get_advantage_estimator
from botgrpo.scoring.entries import RewardBatch

#: Estimators that read only the outcome of each rollout.
OUTCOME_ESTIMATORS = frozenset({"grpo", "dr_grpo", "rloo"})
#: Estimators that read step rewards and the outcome separately (``outcome_B`` option).
STEP_OUTCOME_ESTIMATORS = frozenset({"pure"})
#: Estimators that credit a token with its reward-to-go: the outcome sits on the last token.
RETURN_ESTIMATORS = frozenset({"reinforce_pp", "otb", "gae"})


@dataclass(frozen=True)
class TokenBatch:
    """Rewards of B completions, padded to the completion width T.

    Attributes:
        outcome_B: float64 [B], sum over reward functions of weight * outcome part; 0 where
            every function returned None (unscorable).
        local_BT: float64 [B, T], sum over reward functions of weight * token part.
        steps_BT: int64 [B, T] step index (-1 outside any step), or None if no entry had steps.
        mask_BT: bool [B, T], the bag: a completion's own tokens (model-generated ones when a
            tool mask is present) of every scorable completion.
    """

    outcome_B: Tensor
    local_BT: Tensor
    steps_BT: Tensor | None
    mask_BT: Tensor

    @property
    def rewards_BT(self) -> Tensor:
        """r_t = outcome + token part on the bag, 0 elsewhere."""
        return (self.outcome_B[:, None] + self.local_BT) * self.mask_BT

    @property
    def return_rewards_BT(self) -> Tensor:
        """r_t = token part, plus the outcome on each completion's last bag token; 0 off the
        bag (the rewards whose reward-to-go is the outcome plus the token parts after t)."""
        last_BT = self.mask_BT & (self.mask_BT.cumsum(-1) == self.mask_BT.sum(-1, keepdim=True))
        return (self.local_BT + self.outcome_B[:, None] * last_BT) * self.mask_BT


def build_token_batch(
    batch: RewardBatch,
    rewards_per_func_BF: Tensor,
    weights_F: Tensor,
    names: Sequence[str],
    width: int,
    tool_mask_BT: Tensor | None = None,
) -> TokenBatch:
    """Assemble :class:`TokenBatch` from the recorded token parts and the outcome columns.

    ``rewards_per_func_BF`` holds each function's outcome parts (NaN = None; in TRL, this
    process's slice of its reward matrix); ``weights_F`` are the per-function weights (TRL's
    ``reward_weights``); ``tool_mask_BT`` (optional) is 0 on tool-output tokens.
    """
    device = rewards_per_func_BF.device
    b = len(batch.lengths)
    weighted = rewards_per_func_BF.double() * weights_F.to(device).double()[None, :]
    scored_B = ~torch.isnan(rewards_per_func_BF).all(dim=1)
    outcome_B = torch.where(scored_B, weighted.nansum(dim=1), torch.zeros((), dtype=torch.float64))
    length_B = torch.tensor(batch.lengths, device=device)
    if length_B.numel() and int(length_B.max()) > width:
        raise ValueError(
            f"a completion has {int(length_B.max())} tokens but the batch is {width} wide"
        )
    positions_T = torch.arange(width, device=device)
    mask_BT = (positions_T[None, :] < length_B[:, None]) & scored_B[:, None]
    if tool_mask_BT is not None:
        mask_BT = mask_BT & tool_mask_BT.bool()
    local_BT = torch.zeros(b, width, dtype=torch.float64, device=device)
    for slot, arrays in batch.local.items():
        _place(local_BT, arrays, float(weights_F[slot]), accumulate=True)
    steps_BT = _merge_steps(batch, names, b, width, device)
    return TokenBatch(outcome_B, local_BT, steps_BT, mask_BT)


def _place(
    out_BT: Tensor, arrays: Sequence[np.ndarray | None], scale: float, accumulate: bool
) -> None:
    rows = [i for i, a in enumerate(arrays) if a is not None and a.size]
    if not rows:
        return
    lengths = [arrays[i].shape[0] for i in rows]
    values = np.concatenate([arrays[i] for i in rows])
    row_idx = torch.from_numpy(np.repeat(np.asarray(rows), lengths)).to(out_BT.device)
    col_idx = torch.from_numpy(np.concatenate([np.arange(n) for n in lengths])).to(out_BT.device)
    vals = torch.from_numpy(values).to(out_BT.device, out_BT.dtype) * scale
    out_BT.index_put_((row_idx, col_idx), vals, accumulate=accumulate)


def _merge_steps(
    batch: RewardBatch, names: Sequence[str], b: int, width: int, device: torch.device
) -> Tensor | None:
    if not batch.steps:
        return None
    merged: list[np.ndarray | None] = [None] * b
    owner: list[int] = [-1] * b
    for slot, arrays in batch.steps.items():
        for i, steps in enumerate(arrays):
            if steps is None:
                continue
            if merged[i] is not None and not np.array_equal(merged[i], steps):
                raise ValueError(
                    f"reward functions {names[owner[i]]!r} and {names[slot]!r} give different step "
                    f"indices for {batch.where(i)}; only one step structure per completion is allowed"
                )
            merged[i], owner[i] = steps, slot
    steps_BT = torch.full((b, width), -1, dtype=torch.int64, device=device)
    _place(steps_BT, merged, 1, accumulate=False)
    return steps_BT


def token_advantages(
    estimator: str,
    tb: TokenBatch,
    group_B: Tensor,
    *,
    eps: float,
    options: dict | None = None,
    gather: Callable[[Tensor], Tensor] | None = None,
) -> Tensor:
    """The core estimator's float32 [B, T] advantages for ``tb`` (0 outside the bag).

    ``gather`` (e.g. ``accelerator.gather``) makes group statistics exact when a prompt's group
    is split across processes; every process must call this together.
    """
    fn = get_advantage_estimator(estimator)
    accepted = getattr(fn, "options", ())
    opts = dict(options or {})
    if estimator in OUTCOME_ESTIMATORS:
        rewards_BT = tb.outcome_B[:, None].expand_as(tb.local_BT)
    elif estimator in STEP_OUTCOME_ESTIMATORS:
        rewards_BT = tb.local_BT
        opts["outcome_B"] = tb.outcome_B
    elif estimator in RETURN_ESTIMATORS:
        rewards_BT = tb.return_rewards_BT
    else:
        rewards_BT = tb.rewards_BT
    if "steps_BT" in accepted:
        if tb.steps_BT is None:
            raise ValueError(
                f"advantage estimator {estimator!r} reads step rewards, but no reward entry of this "
                "batch carries steps: add a token reward function returning TokenReward(steps=...)"
            )
        opts["steps_BT"] = tb.steps_BT
    return fn(rewards_BT, tb.mask_BT, group_B, eps=eps, gather=gather, **opts)
