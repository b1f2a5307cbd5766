"""Random batches for core tests: variable lengths, shuffled non-contiguous groups, garbage."""

from __future__ import annotations

import torch


def random_batch(
    seed: int,
    *,
    n_groups: int = 4,
    k: int = 4,
    length: int = 12,
    n_steps: int = 3,
    per_rollout_constant: bool = False,
    equal_lengths: bool = False,
):
    """Return (rewards_BT, mask_BT, group_B, steps_BT) with garbage at masked positions.

    Group ids are large, non-contiguous and shuffled; lengths vary (some rows may be empty when
    ``equal_lengths`` is False); masks are right-padded; step indices cover each rollout's kept
    tokens in contiguous runs (some tokens fall outside any step).
    """
    gen = torch.Generator().manual_seed(seed)
    batch = n_groups * k
    ids = torch.randperm(1000, generator=gen)[:n_groups] * 7 - 300
    group_B = ids.repeat_interleave(k)[torch.randperm(batch, generator=gen)]
    if equal_lengths:
        lengths = torch.full((batch,), length)
    else:
        lengths = torch.randint(0, length + 1, (batch,), generator=gen)
        lengths[0] = length  # at least one full row
    mask_BT = torch.arange(length)[None, :] < lengths[:, None]
    if per_rollout_constant:
        rewards_BT = torch.randint(0, 3, (batch, 1), generator=gen).float().expand(batch, length)
        rewards_BT = rewards_BT.clone()
    else:
        rewards_BT = torch.randn(batch, length, generator=gen)
    garbage = torch.tensor([float("nan"), float("inf"), 1e30, -7.0])
    pick = torch.randint(0, 4, (batch, length), generator=gen)
    rewards_BT = torch.where(mask_BT, rewards_BT, garbage[pick])
    bounds = torch.sort(torch.randint(0, length, (batch, n_steps), generator=gen), dim=1).values
    steps_BT = (torch.arange(length)[None, None, :] >= bounds[:, :, None]).sum(1) - 1
    off = torch.rand(batch, length, generator=gen) < 0.1
    steps_BT = torch.where(off, -1, steps_BT)
    return rewards_BT, mask_BT, group_B, steps_BT
