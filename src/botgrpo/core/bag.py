"""The token passes of the bag estimators (bot, bot_uniform), in the float32 buffer they return.

For every group g of rollouts, with rollout weight W_i (1 for ``bot``, its length L_i for
``bot_uniform``) spread evenly over its L_i tokens (arXiv 2610.09804, Eqs. 2-3):

    mu_g      = sum_i W_i mean_i / sum_i W_i
    sigma_g^2 = sum_i (W_i / L_i) Q_i / sum_i W_i,   Q_i = sum_t m_t (r_t - mu_g)^2
    A_t       = m_t (r_t - mu_g) / (sigma_g + eps)

Three passes over the result buffer ``out`` (float32 [B, T]); nothing else of size [B, T] is
allocated, whatever the dtypes of the rewards (float32 or float64) and of the mask (bool or
0/1 numbers):

1. ``out = r * m`` (rewards rounded to float32 on the way); row sums S_i and lengths L_i;
2. ``out -= mu_g * m`` (so ``out = m (r - mu_g)``); Q_i = ||out_i||^2, two-pass variance
   around the group mean, so a large common offset costs no precision;
3. ``out *= 1 / (sigma_g + eps)``, or 0 where the group carries no signal.

Per-row and per-group statistics are float64. The result is scale-invariant (A(c r) = A(r) for
c > 0) up to float limits: rewards are held in float32, and a row whose squared norm would
overflow float32 (|r - mu| above ~1e19) has its norm taken in float64 after rescaling. A float mask is checked to hold only 0 and 1 in
``out`` before pass 1. A non-finite value under the mask (e.g. NaN padding) only costs a slower
first pass; one at a kept position is an error naming its rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

from botgrpo.core.checks import check_binary_mask, check_finite
from botgrpo.core.groups import ZERO_STD_RTOL, Gather, gather_rollouts


def bag_advantage(
    rewards_BT: Tensor,
    mask_BT: Tensor,
    group_B: Tensor,
    eps: float,
    gather: Gather | None,
    *,
    uniform: bool,
) -> Tensor:
    """A_t = (r_t - mu_g) / (sigma_g + eps) over each group's weighted bag; 0 without signal.

    ``rewards_BT`` (any real float dtype) and ``mask_BT`` (bool, or numbers that are all 0 or
    1) are read, never written; the result is a new float32 [B, T], 0 at masked positions.
    """
    weights_BT = _mask_weights(mask_BT)
    out_BT, length_B, sum_B = _masked_rows(rewards_BT, mask_BT, weights_BT)
    present_B = (length_B > 0).to(torch.float64)
    weight_B = length_B if uniform else present_B
    inv_length_B = length_B.clamp_min(1.0).reciprocal_()
    stats_B3 = torch.stack([weight_B, weight_B * sum_B * inv_length_B, present_B], dim=1)
    ro = gather_rollouts(stats_B3, group_B, gather)
    total_G, weighted_G, count_G = ro.group_sum(ro.stats_NK).unbind(dim=1)
    total_G = total_G.clamp_min(torch.finfo(torch.float64).tiny)
    mu_G = weighted_G / total_G
    _subtract_on_mask_(out_BT, weights_BT, mu_G[ro.local_group_B].to(out_BT.dtype)[:, None])
    sq_B = _row_norms(out_BT).square_()
    spread_B = sq_B.mul_(weight_B).mul_(inv_length_B)
    var_G = ro.group_sum(spread_B if gather is None else gather(spread_B)).div_(total_G)
    if not (bool(torch.isfinite(mu_G).all()) and bool(torch.isfinite(var_G).all())):
        # the same on every process (the statistics are gathered): no one-sided raise
        raise ValueError(
            "rewards_BT: a group's mean or variance is not finite although every kept reward "
            "is: the rewards (or their sums) are beyond float32's range (about 3.4e38); "
            "rescale them"
        )
    sigma_G = var_G.sqrt()
    signal_G = (count_G >= 2) & (sigma_G > ZERO_STD_RTOL * (var_G + mu_G**2).sqrt())
    scale_G = torch.where(signal_G, 1.0 / (sigma_G + eps), 0.0)
    return out_BT.mul_(scale_G[ro.local_group_B].to(out_BT.dtype)[:, None])


def _row_norms(out_BT: Tensor) -> Tensor:
    """||out_i|| per row as float64. float32 squares overflow above ~1.8e19, so a row whose
    norm overflows is recomputed in float64 after scaling by its largest magnitude: the result
    is scale-invariant up to the float32 range of the rewards themselves."""
    norm_B = torch.linalg.vector_norm(out_BT, dim=1).to(torch.float64)
    over_B = ~torch.isfinite(norm_B)
    if bool(over_B.any()):
        rows_RT = out_BT[over_B].to(torch.float64)
        top_R1 = rows_RT.abs().amax(dim=1, keepdim=True).clamp_min(torch.finfo(torch.float64).tiny)
        norm_B[over_B] = torch.linalg.vector_norm(rows_RT / top_R1, dim=1) * top_R1[:, 0]
    return norm_B


def _subtract_on_mask_(out_BT: Tensor, weights_BT: Tensor, value_B1: Tensor) -> None:
    """out -= value * m in place (out is 0 off the mask, so it stays 0 there)."""
    if weights_BT.dtype == out_BT.dtype:
        out_BT.addcmul_(weights_BT, value_B1, value=-1.0)
        return
    for rows, m_CT in _mask_chunks(weights_BT, out_BT.dtype):
        out_BT[rows].sub_(value_B1[rows]).mul_(m_CT)


def _mask_weights(mask_BT: Tensor) -> Tensor:
    """The mask as a multiplier without a copy: a bool mask is viewed as uint8 (0/1)."""
    return mask_BT.view(torch.uint8) if mask_BT.dtype == torch.bool else mask_BT


def _masked_rows(
    rewards_BT: Tensor, mask_BT: Tensor, weights_BT: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """(out = r * m as float32, row lengths, row sums of out), lengths and sums as float64.

    Elementwise passes run on same-dtype tensors only: on a CPU, PyTorch first copies a
    mixed-dtype operand to the common dtype (a full-size temporary). A mask of another dtype
    is converted a cache-sized block of rows at a time instead.
    """
    out_BT = torch.empty(rewards_BT.shape, dtype=torch.float32, device=rewards_BT.device)
    check_binary_mask(mask_BT, rewards_BT.shape, scratch=out_BT)
    if rewards_BT.dtype == torch.float32 and weights_BT.dtype == torch.float32:
        torch.mul(rewards_BT, weights_BT, out=out_BT)
        length_B = weights_BT.sum(dim=1).to(torch.float64)  # sums of 0/1: exact
    elif rewards_BT.dtype == torch.float32 and weights_BT.dtype == torch.uint8:
        length_B = out_BT.copy_(weights_BT).sum(dim=1).to(torch.float64)
        out_BT.mul_(rewards_BT)
    else:
        out_BT.copy_(rewards_BT)
        length_B = torch.empty(out_BT.shape[0], dtype=torch.float64, device=out_BT.device)
        for rows, m_CT in _mask_chunks(weights_BT, out_BT.dtype):
            length_B[rows] = m_CT.sum(dim=1)
            out_BT[rows].mul_(m_CT)
    sum_B = out_BT.sum(dim=1).to(torch.float64)
    if not bool(torch.isfinite(sum_B).all()):  # a NaN or inf, kept (an error) or masked
        keep_BT = mask_BT if mask_BT.dtype == torch.bool else mask_BT != 0
        check_finite(rewards_BT, keep_BT, "rewards_BT")
        torch.where(keep_BT, out_BT, torch.zeros((), dtype=out_BT.dtype), out=out_BT)
        sum_B = out_BT.sum(dim=1).to(torch.float64)
    return out_BT, length_B, sum_B


_CHUNK = 1 << 18
"""Elements per block of mask rows converted at a time (a temporary that stays in cache)."""


def _mask_chunks(weights_BT: Tensor, dtype: torch.dtype) -> Iterator[tuple[slice, Tensor]]:
    """(rows, the mask's rows as ``dtype``) for consecutive blocks of rows, in one buffer."""
    batch, width = weights_BT.shape
    step = max(1, _CHUNK // max(width, 1))
    buffer_CT = torch.empty((min(step, batch), width), dtype=dtype, device=weights_BT.device)
    for start in range(0, batch, step):
        rows = slice(start, min(start + step, batch))
        yield rows, buffer_CT[: rows.stop - start].copy_(weights_BT[rows])
