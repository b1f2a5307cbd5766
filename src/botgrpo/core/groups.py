"""Group reductions over per-rollout statistics, exact across processes.

Every estimator reduces each rollout to a few sufficient statistics (a row of ``stats_BK``),
combines those rows per group, and maps the group results back onto its own rollouts. When a
prompt's group is split over processes, ``gather`` (e.g. ``accelerator.gather``) all-gathers
``stats_BK`` and ``group_B`` first, so every process combines the same complete groups and gets
exactly the advantages a single process would. The communication is O(B * K) numbers per step,
independent of sequence length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

Gather = Callable[[Tensor], Tensor]

#: A group whose std is at most this fraction of its root-mean-square reward carries no signal.
ZERO_STD_RTOL = 1e-6


@dataclass(frozen=True)
class Rollouts:
    """Per-rollout statistics of every rollout in the (possibly multi-process) batch.

    Attributes:
        stats_NK: statistics of all N gathered rollouts (this process's B alone without gather).
        group_N: dense group index 0..G-1 of every gathered rollout.
        local_group_B: dense group index of each of this process's rollouts.
        num_groups: G.
    """

    stats_NK: Tensor
    group_N: Tensor
    local_group_B: Tensor
    num_groups: int

    def group_sum(self, values_N: Tensor) -> Tensor:
        """Sum of ``values_N`` (one value, or one row of values, per gathered rollout) per
        group: [G] or [G, K]."""
        shape = (self.num_groups, *values_N.shape[1:])
        out = torch.zeros(shape, dtype=values_N.dtype, device=values_N.device)
        return out.index_add_(0, self.group_N, values_N)


def gather_rollouts(stats_BK: Tensor, group_B: Tensor, gather: Gather | None = None) -> Rollouts:
    """All-gather per-rollout statistics [B, K] and group ids, and index groups densely.

    Group ids are arbitrary integers; ``torch.unique`` makes them dense, so the cost is
    O(N log N) in the number of rollouts N, with no Python loop over groups. ``gather`` is called
    exactly twice on every process (it is a collective).
    """
    if gather is None:
        all_stats, all_ids = stats_BK, group_B
    else:
        all_stats, all_ids = gather(stats_BK), gather(group_B)
        if all_stats.shape[0] != all_ids.shape[0] or all_stats.shape[1:] != stats_BK.shape[1:]:
            raise ValueError("gather must all-gather along dim 0 and keep the other dimensions")
    unique_ids, group_N = torch.unique(all_ids, return_inverse=True)
    local_group_B = group_N if gather is None else torch.searchsorted(unique_ids, group_B)
    return Rollouts(all_stats, group_N, local_group_B, int(unique_ids.shape[0]))


@dataclass(frozen=True)
class GroupMoments:
    """A group's pooled statistics, looked up for each local rollout ([B] each).

    Attributes:
        mu_B: weighted mean of the group's pooled values.
        sigma_B: weighted population std of the group's pooled values.
        count_B: number of rollouts with nonzero weight in the group.
        signal_B: the group carries signal: count >= 2 and sigma > ZERO_STD_RTOL * rms.
        rollouts: the gathered rollouts, for estimators that need more than moments.
    """

    mu_B: Tensor
    sigma_B: Tensor
    count_B: Tensor
    signal_B: Tensor
    rollouts: Rollouts


def pooled_moments(
    weight_B: Tensor,
    mean_B: Tensor,
    var_B: Tensor,
    group_B: Tensor,
    gather: Gather | None = None,
) -> GroupMoments:
    """Weighted mean and population variance of each group's pooled bag of values.

    Rollout i contributes a bag of total weight W_i = ``weight_B[i]`` whose own mean is
    m_i = ``mean_B[i]`` and own population variance v_i = ``var_B[i]``. Pooling the bags of a
    group g (Chan et al.'s parallel variance: exact, and stable under a large common offset):

        mu_g     = sum_i W_i m_i / sum_i W_i
        sigma2_g = sum_i W_i (v_i + (m_i - mu_g)^2) / sum_i W_i

    Rollouts of weight 0 (e.g. fully masked) do not count.
    """
    present_B = (weight_B > 0).to(weight_B.dtype)
    stats = torch.stack([weight_B, mean_B, var_B, present_B], dim=1)
    ro = gather_rollouts(stats, group_B, gather)
    w_N, m_N, v_N, p_N = ro.stats_NK.unbind(dim=1)
    tiny = torch.finfo(weight_B.dtype).tiny
    sum_w_G = ro.group_sum(w_N).clamp_min(tiny)
    mu_G = ro.group_sum(w_N * m_N) / sum_w_G
    var_G = ro.group_sum(w_N * (v_N + (m_N - mu_G[ro.group_N]) ** 2)) / sum_w_G
    if not (bool(torch.isfinite(mu_G).all()) and bool(torch.isfinite(var_G).all())):
        # the same on every process (the statistics are gathered): no one-sided raise
        raise ValueError(
            "rewards_BT: a group's mean or variance is not finite although every kept reward "
            "is: the rewards (or their sums) are beyond the floating-point range; rescale them"
        )
    sigma_G = var_G.sqrt()
    rms_G = (var_G + mu_G**2).sqrt()
    count_G = ro.group_sum(p_N)
    signal_G = (count_G >= 2) & (sigma_G > ZERO_STD_RTOL * rms_G)
    g = ro.local_group_B
    return GroupMoments(mu_G[g], sigma_G[g], count_G[g], signal_G[g], ro)


def center_rows_(values_BT: Tensor, mask_BT: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per-row (length, mean, population variance) of masked values, as float64 [B] each,
    subtracting each row's mean from ``values_BT`` in place (masked positions stay 0) so callers
    reuse the centred values without a copy. ``values_BT`` must be 0 at masked positions; empty
    rows give zeros.

    Two passes (mean, then squared deviations): a row with a large constant offset keeps its
    small spread. Sums run in the values' dtype with PyTorch's cascaded summation.
    """
    length_B = mask_BT.sum(dim=1, dtype=torch.int32).to(torch.float64)
    safe_B = length_B.clamp_min(1.0)
    mean_B = values_BT.sum(dim=1).to(torch.float64) / safe_B
    values_BT.sub_(mean_B.to(values_BT.dtype)[:, None]).mul_(mask_BT)
    var_B = torch.linalg.vector_norm(values_BT, dim=1).to(torch.float64) ** 2 / safe_B
    return length_B, mean_B, var_B
