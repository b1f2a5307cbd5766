"""Token-bag and outcome advantage estimators: bot, bot_uniform, grpo, dr_grpo, rloo.

All share the signature documented in :mod:`botgrpo.core.estimators`. Outcome-only estimators
read each rollout's outcome as R_i = the masked mean of its token rewards (exactly R_i when the
rewards are constant inside the rollout, as TRL-style scalar rewards are).
"""

from __future__ import annotations

import torch
from torch import Tensor

from botgrpo.core.bag import bag_advantage
from botgrpo.core.checks import check_choice
from botgrpo.core.estimators import register_advantage_estimator
from botgrpo.core.groups import Gather, center_rows_, pooled_moments


@register_advantage_estimator("bot", as_given=True)
def bot(
    rewards_BT: Tensor, mask_BT: Tensor, group_B: Tensor, *, eps: float, gather: Gather | None
) -> Tensor:
    """BoT-GRPO, arXiv 2610.09804 Eqs. 2-3: one bag per group, token weights 1/L_k.

        mu      = (1/K) sum_k (1/L_k) sum_t r_t^(k)
        sigma^2 = (1/K) sum_k (1/L_k) sum_t (r_t^(k) - mu)^2        (population)
        A_t^(k) = (r_t^(k) - mu) / (sigma + eps)

    Every rollout weighs 1 in total whatever its length. With rewards constant inside each
    rollout this is exactly GRPO with the population std. Groups with sigma ~ 0, groups of one
    rollout and empty rows get 0. Cost: O(B*T) plus O(B log B) for the groups.
    """
    return bag_advantage(rewards_BT, mask_BT, group_B, eps, gather, uniform=False)


@register_advantage_estimator("bot_uniform", as_given=True)
def bot_uniform(
    rewards_BT: Tensor, mask_BT: Tensor, group_B: Tensor, *, eps: float, gather: Gather | None
) -> Tensor:
    """Ablation of ``bot``: the same bag, but every token weighs 1 (not 1/L_k).

        mu = sum_k sum_t r_t^(k) / sum_k L_k,   sigma^2 likewise,   A = (r - mu) / (sigma + eps)

    Long rollouts dominate the group statistics; comparing with ``bot`` isolates the effect of the
    1/L_k weighting, which the paper could not separate from token-level credit.
    """
    return bag_advantage(rewards_BT, mask_BT, group_B, eps, gather, uniform=True)


def _outcome_moments(rewards_BT: Tensor, mask_BT: Tensor, group_B: Tensor, gather: Gather | None):
    length_B, outcome_B, _ = center_rows_(rewards_BT, mask_BT)
    present_B = (length_B > 0).to(outcome_B.dtype)
    gm = pooled_moments(present_B, outcome_B, torch.zeros_like(outcome_B), group_B, gather)
    return outcome_B, gm


@register_advantage_estimator("grpo")
def grpo(
    rewards_BT: Tensor,
    mask_BT: Tensor,
    group_B: Tensor,
    *,
    eps: float,
    gather: Gather | None,
    scale: str = "group",
) -> Tensor:
    """GRPO (DeepSeekMath, arXiv 2402.03300): one advantage per rollout, broadcast to its tokens.

        A_i = (R_i - mean_g R) / (std_g R + eps)            scale="group" (population std)
        A_i = (R_i - mean_g R) / (std_batch R + eps)        scale="batch" (std over all rollouts)
        A_i =  R_i - mean_g R                               scale="none"

    R_i = the masked mean of rollout i's token rewards. Population std (divide by K), as in
    the BoT paper's reduction; TRL's GRPOTrainer uses the sample std (K - 1). Groups whose
    rewards are all equal get exactly 0 under every scale.
    """
    check_choice("scale", scale, ("group", "batch", "none"))
    outcome_B, gm = _outcome_moments(rewards_BT, mask_BT, group_B, gather)
    centred_B = torch.where(gm.signal_B, outcome_B - gm.mu_B, 0.0)
    if scale == "group":
        centred_B = torch.where(gm.signal_B, centred_B / (gm.sigma_B + eps), 0.0)
    elif scale == "batch":
        w_N, m_N = gm.rollouts.stats_NK[:, 0], gm.rollouts.stats_NK[:, 1]
        n = w_N.sum().clamp_min(1.0)
        mean = (w_N * m_N).sum() / n
        std = ((w_N * (m_N - mean) ** 2).sum() / n).sqrt()
        centred_B = centred_B / (std + eps) if std + eps > 0 else centred_B
    return centred_B[:, None].expand_as(rewards_BT)


@register_advantage_estimator("dr_grpo")
def dr_grpo(
    rewards_BT: Tensor, mask_BT: Tensor, group_B: Tensor, *, eps: float, gather: Gather | None
) -> Tensor:
    """Dr. GRPO (arXiv 2503.20783): A_i = R_i - mean_g R, no std normalisation.

    Pair it with the constant-normaliser aggregation ``seq-mean-token-sum-norm``; ``eps`` is
    accepted for the shared signature and unused.
    """
    outcome_B, gm = _outcome_moments(rewards_BT, mask_BT, group_B, gather)
    adv_B = (outcome_B - gm.mu_B) * gm.signal_B.to(outcome_B.dtype)
    return adv_B[:, None].expand_as(rewards_BT)


@register_advantage_estimator("rloo")
def rloo(
    rewards_BT: Tensor, mask_BT: Tensor, group_B: Tensor, *, eps: float, gather: Gather | None
) -> Tensor:
    """RLOO (arXiv 2402.14740): A_i = R_i - mean_{j != i} R_j = K/(K-1) (R_i - mean_g R).

    Groups of one rollout (no leave-one-out baseline) get 0; ``eps`` is unused.
    """
    outcome_B, gm = _outcome_moments(rewards_BT, mask_BT, group_B, gather)
    k_B = gm.count_B
    factor_B = torch.where(gm.signal_B, k_B / (k_B - 1).clamp_min(1.0), 0.0)
    return ((outcome_B - gm.mu_B) * factor_B)[:, None].expand_as(rewards_BT)
