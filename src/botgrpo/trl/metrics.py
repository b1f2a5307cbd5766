"""The trainer's own per-step metrics, computed from per-rollout sums gathered across processes.

Each process reduces its rollouts to a few sums (one row per rollout), one ``gather`` joins the
rows of all processes, and every metric is a ratio of global sums, so it does not depend on how
rollouts are spread over processes. Definitions (``docs/trainer/metrics.md``):

- ``bot/token_reward/mean``: mean token reward r_t over the bag (all scored completion tokens).
- ``bot/local_share``: sum |token part| / (sum |outcome part| + sum |token part|) over the bag:
  0 = outcome only, 1 = local signal only.
- ``bot/return_local_share``: sum_i |sum_t token part| / (sum_i |outcome part| + sum_i |sum_t
  token part|) over the scorable completions: the token parts' share of the first token's
  reward-to-go G_0 = outcome + sum_t token part, what the reward-to-go presets (``otb``,
  ``reinforce_pp``, ``ppo``; the outcome counted once, on the last token) rank rollouts by. It
  grows with the completion's length where ``bot/local_share`` does not: near 1, the summed
  token parts, not the outcome, decide a rollout's return.
- ``bot/advantage/mean``, ``/std``, ``/abs_mean``: over the loss tokens (TRL's loss mask).
- ``bot/frac_zero_signal_groups``: share of prompt groups whose advantages are all 0.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from botgrpo.trl.token_batch import TokenBatch

_COLUMNS = (
    "bag",
    "reward_sum",
    "outcome_abs",
    "local_abs",
    "outcome_once_abs",
    "local_sum_abs",
    "loss_tokens",
    "adv_sum",
    "adv_sq",
    "adv_abs",
    "signal",
    "group",
)


def rollout_sums(tb: TokenBatch, adv_BT: Tensor, loss_mask_BT: Tensor, group_B: Tensor) -> Tensor:
    """float64 [B, 12]: the per-rollout sums every metric is built from."""
    bag = tb.mask_BT.double()
    scored_B = bag.sum(1) > 0
    loss = loss_mask_BT.double()
    adv = adv_BT.double()
    return torch.stack(
        [
            bag.sum(1),
            (tb.rewards_BT * bag).sum(1),
            tb.outcome_B.abs() * bag.sum(1),
            (tb.local_BT.abs() * bag).sum(1),
            tb.outcome_B.abs() * scored_B,
            (tb.local_BT * bag).sum(1).abs(),
            loss.sum(1),
            (adv * loss).sum(1),
            (adv**2 * loss).sum(1),
            (adv.abs() * loss).sum(1),
            (adv != 0).any(1).double(),
            group_B.double(),
        ],
        dim=1,
    )


def step_metrics(sums_NC: Tensor) -> dict[str, float]:
    """Metrics from the gathered per-rollout sums of every process."""
    col = dict(zip(_COLUMNS, sums_NC.unbind(1), strict=True))
    total = {k: float(v.sum()) for k, v in col.items() if k not in ("signal", "group")}
    bag = max(total["bag"], 1.0)
    tokens = max(total["loss_tokens"], 1.0)
    magnitude = total["outcome_abs"] + total["local_abs"]
    returns = total["outcome_once_abs"] + total["local_sum_abs"]
    adv_mean = total["adv_sum"] / tokens
    groups, group_N = torch.unique(col["group"], return_inverse=True)
    signal_G = torch.zeros(groups.shape[0], dtype=torch.float64).scatter_reduce_(
        0, group_N, col["signal"], "amax"
    )
    return {
        "bot/token_reward/mean": total["reward_sum"] / bag,
        "bot/local_share": total["local_abs"] / magnitude if magnitude > 0 else 0.0,
        "bot/return_local_share": total["local_sum_abs"] / returns if returns > 0 else 0.0,
        "bot/advantage/mean": adv_mean,
        "bot/advantage/std": max(total["adv_sq"] / tokens - adv_mean**2, 0.0) ** 0.5,
        "bot/advantage/abs_mean": total["adv_abs"] / tokens,
        "bot/frac_zero_signal_groups": float(1.0 - signal_G.mean()) if groups.numel() else 0.0,
    }


def gathered_step_metrics(
    tb: TokenBatch,
    adv_BT: Tensor,
    loss_mask_BT: Tensor,
    group_B: Tensor,
    gather: Callable[[Tensor], Tensor] | None,
) -> dict[str, float]:
    """:func:`step_metrics` over all processes (one collective call of ``gather``)."""
    sums = rollout_sums(tb, adv_BT, loss_mask_BT, group_B)
    sums = gather(sums) if gather is not None else sums
    return step_metrics(sums.cpu())
