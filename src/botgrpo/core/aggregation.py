"""Loss aggregation: how per-token losses [B, T] become one scalar.

    seq-mean-token-mean      mean_i ( sum_t m l / L_i )        GRPO, BoT-GRPO (paper Eq. 3)
    token-mean               sum m l / sum m                   DAPO (arXiv 2503.14476)
    seq-mean-token-sum-norm  sum_i sum_t m l / (B * L_max)     Dr. GRPO (arXiv 2503.20783)

Rows with no unmasked token are excluded from seq-mean-token-mean's mean; L_max is the
``max_len`` option (the generation budget, constant across steps) or T when omitted. A batch
with no kept token (B = 0, T = 0 or an all-zero mask) gives 0 in every mode, still attached to
the graph. Masked losses are selected away, so NaN or inf there reaches neither the loss nor
the gradient; the mask must be bool or 0/1 and a NaN or inf at a kept position raises.
float16 and bfloat16 losses are summed in float32 (the loss returned is float32): a sum of
~65k fp16 terms overflows fp16's range. A result that still overflows raises, never a NaN.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from botgrpo.core.checks import as_tensor, check_mask, kept_values
from botgrpo.core.registry import Registry

Aggregator = Callable[[Tensor, Tensor, int | None], Tensor]

_AGG: Registry[Aggregator] = Registry("aggregation mode")

#: Names of the aggregation modes.
AGGREGATION_MODES = ("seq-mean-token-mean", "token-mean", "seq-mean-token-sum-norm")


@_AGG.register("seq-mean-token-mean")
def _seq_mean_token_mean(loss_BT: Tensor, mask_BT: Tensor, max_len: int | None) -> Tensor:
    length_B = mask_BT.sum(dim=1)
    per_seq_B = (loss_BT * mask_BT).sum(dim=1) / length_B.clamp_min(1)
    n_rows = (length_B > 0).sum().clamp_min(1)
    return per_seq_B.sum() / n_rows


@_AGG.register("token-mean")
def _token_mean(loss_BT: Tensor, mask_BT: Tensor, max_len: int | None) -> Tensor:
    return (loss_BT * mask_BT).sum() / mask_BT.sum().clamp_min(1)


@_AGG.register("seq-mean-token-sum-norm")
def _seq_mean_token_sum_norm(loss_BT: Tensor, mask_BT: Tensor, max_len: int | None) -> Tensor:
    norm = max_len if max_len is not None else loss_BT.shape[1]
    return (loss_BT * mask_BT).sum() / (loss_BT.shape[0] * norm)


def aggregate_loss(
    loss_BT: Tensor,
    mask_BT: Tensor,
    mode: str = "seq-mean-token-mean",
    *,
    max_len: int | None = None,
) -> Tensor:
    """Reduce per-token losses to a scalar with the named mode (see the module docstring)."""
    fn = _AGG.get(mode)
    loss_BT = as_tensor(loss_BT, "loss_BT")
    if loss_BT.dim() != 2:
        raise ValueError(f"loss_BT must be 2-D [B, T], got shape {tuple(loss_BT.shape)}")
    if not loss_BT.is_floating_point():
        raise ValueError(f"loss_BT must be a float tensor, got dtype {loss_BT.dtype}")
    mask_BT = check_mask(mask_BT, loss_BT.shape)
    bad_len = isinstance(max_len, bool) or not isinstance(max_len, int) or max_len <= 0
    if max_len is not None and bad_len:
        raise ValueError(f"max_len must be a positive int, got {max_len!r}")
    kept_BT = kept_values(loss_BT, mask_BT, "loss_BT")
    if kept_BT.dtype in (torch.float16, torch.bfloat16):
        kept_BT = kept_BT.float()  # sums of ~65k fp16 terms overflow; gradients flow back as given
    if loss_BT.numel() == 0:
        return kept_BT.sum()  # 0, attached to the graph
    loss = fn(kept_BT, mask_BT.to(kept_BT.dtype), max_len)
    if not bool(torch.isfinite(loss.detach())):
        raise ValueError(
            f"the {mode} loss overflowed to {float(loss)} from finite per-token losses of dtype "
            f"{loss_BT.dtype} (largest |loss| {float(kept_BT.detach().abs().max()):.3g}); "
            "lower the learning rate or clip the ratio"
        )
    return loss
