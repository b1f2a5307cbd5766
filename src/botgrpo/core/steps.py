"""Step structure of rollouts: from a per-token step index to per-step rewards and ends.

A step is the set of a rollout's unmasked tokens sharing one step index (``steps_BT`` >= 0);
its reward is the mean token reward over those tokens and its end is its last token's position.
Everything is vectorised over all steps of the batch at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Steps:
    """All steps of a batch, flattened ([S] each, S = number of steps in the batch).

    Attributes:
        row_S: the rollout each step belongs to.
        end_S: the position of the step's last token.
        reward_S: the mean token reward of the step.
        batch: B, the number of rollouts.
    """

    row_S: Tensor
    end_S: Tensor
    reward_S: Tensor
    batch: int

    def per_row_count(self) -> Tensor:
        """Number of steps of each rollout, float64 [B]."""
        ones = torch.ones_like(self.reward_S)
        return torch.zeros(self.batch, dtype=ones.dtype, device=ones.device).index_add_(
            0, self.row_S, ones
        )

    def per_row_sum(self, values_S: Tensor) -> Tensor:
        """Sum of ``values_S`` over each rollout's steps, [B]."""
        out = torch.zeros(self.batch, dtype=values_S.dtype, device=values_S.device)
        return out.index_add_(0, self.row_S, values_S)

    def place(self, values_S: Tensor, shape: torch.Size, fill: float = 0.0) -> Tensor:
        """A [B, T] tensor holding each step's value at its end position, ``fill`` elsewhere."""
        out = torch.full(shape, fill, dtype=values_S.dtype, device=values_S.device)
        return out.index_put_((self.row_S, self.end_S), values_S)


def collect_steps(rewards_BT: Tensor, steps_BT: Tensor) -> Steps:
    """Group tokens into steps by (rollout, step index); ``steps_BT`` is -1 off-step and masked."""
    batch, length = rewards_BT.shape
    on_step = steps_BT >= 0
    # dense step ids, in the same order: any ids (up to 2**63 - 1) give keys within int64
    ids, dense = torch.unique(steps_BT[on_step], return_inverse=True)
    n_ids = max(int(ids.numel()), 1)
    rows_BT = torch.arange(batch, device=rewards_BT.device)[:, None].expand(batch, length)
    pos_BT = torch.arange(length, device=rewards_BT.device)[None, :].expand(batch, length)
    keys, inverse = torch.unique(rows_BT[on_step] * n_ids + dense, return_inverse=True)
    n_steps = keys.shape[0]
    dev = rewards_BT.device
    sums = torch.zeros(n_steps, dtype=rewards_BT.dtype, device=dev).index_add_(
        0, inverse, rewards_BT[on_step]
    )
    counts = torch.zeros(n_steps, dtype=rewards_BT.dtype, device=dev).index_add_(
        0, inverse, torch.ones_like(sums[inverse])
    )
    ends = torch.zeros(n_steps, dtype=torch.long, device=dev).scatter_reduce_(
        0, inverse, pos_BT[on_step], reduce="amax", include_self=False
    )
    return Steps(keys // n_ids, ends, sums / counts, batch)


def suffix_sum(values_BT: Tensor) -> Tensor:
    """out[b, t] = sum_{t' >= t} values[b, t']."""
    return values_BT.flip(1).cumsum(1).flip(1)
