"""Reward-to-go estimators over token rewards: ``otb``, ``reinforce_pp`` and ``gae``.

The alternatives a practitioner with token rewards reaches for instead of a bag: both credit
token t with its return G_t = sum_{s >= t} gamma^(s-t) r_s (the rewards from t on), and differ
in the baseline subtracted from it. Signature as in :mod:`botgrpo.core.estimators`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from botgrpo.core.checks import as_tensor, check_finite, check_mask, check_nonnegative
from botgrpo.core.estimators import register_advantage_estimator
from botgrpo.core.groups import Gather, gather_rollouts


def reward_to_go(rewards_BT: Tensor, mask_BT: Tensor, gamma: float = 1.0) -> Tensor:
    """G_t = r_t + gamma G_{t+1} over kept tokens; a masked position inside a completion (an
    observation span) passes the return through unchanged, and gets 0 itself.

    >>> reward_to_go(torch.tensor([[1.0, 2.0, 4.0]]), torch.tensor([[True, True, True]]), 0.5)
    tensor([[3., 4., 4.]], dtype=torch.float64)
    """
    rewards_BT = as_tensor(rewards_BT, "rewards_BT")
    mask_BT = check_mask(mask_BT, rewards_BT.shape)
    check_finite(rewards_BT, mask_BT, "rewards_BT")
    r = torch.where(mask_BT, rewards_BT.double(), 0.0)
    if gamma == 1.0:
        return torch.where(mask_BT, r.flip(-1).cumsum(-1).flip(-1), 0.0)
    out = torch.zeros_like(r)
    running = torch.zeros(r.shape[0], dtype=r.dtype, device=r.device)
    for t in reversed(range(r.shape[1])):
        running = torch.where(mask_BT[:, t], r[:, t] + gamma * running, running)
        out[:, t] = torch.where(mask_BT[:, t], running, 0.0)
    return out


def _per_token(name: str, value: object, rewards_BT: Tensor, mask_BT: Tensor) -> Tensor:
    """A [B, T] per-token input of an estimator (shape and finiteness checked), float64, 0 at
    masked positions."""
    tensor = as_tensor(value, name)
    if tensor.shape != rewards_BT.shape:
        raise ValueError(
            f"{name} has shape {tuple(tensor.shape)}, expected {tuple(rewards_BT.shape)}"
        )
    check_finite(tensor, mask_BT, name)
    return torch.where(mask_BT, tensor.double(), 0.0)


def _pad_to_longest(stats_BT: Tensor, gather: Gather | None) -> Tensor:
    """Right-pad the time axis to the longest over processes (a collective when gathering)."""
    if gather is None:
        return stats_BT
    longest = int(gather(torch.tensor([stats_BT.shape[-1]], device=stats_BT.device)).max())
    return torch.nn.functional.pad(stats_BT, (0, longest - stats_BT.shape[-1]))


@register_advantage_estimator("otb")
def otb(
    rewards_BT: Tensor,
    mask_BT: Tensor,
    group_B: Tensor,
    *,
    eps: float,
    gather: Gather | None,
    logp_BT: Tensor | None = None,
    sum_pi_sq_BT: Tensor | None = None,
    is_weights_BT: Tensor | None = None,
    handle_zero_tail: bool = True,
    epsilon: float = 1e-8,
) -> Tensor:
    """Optimal token baseline (OTB, arXiv 2602.07078; verl's ``optimal_token_baseline``).

        w_t = 1 - 2 pi_t + sum_v pi_v^2        (||score||^2 proxy, pi_t = exp(logp_t))
        W_t = sum_{j <= t} w_j (x rho_j^2 with is_weights_BT)
        B_t = sum_g G_t W_t / (sum_g W_t + epsilon)       (over the group's rollouts, per t)
        A_t = G_t - B_t,   G_t = sum_{s >= t} r_s

    A per-token baseline on the reward-to-go, weighting each rollout by its accumulated
    variance proxy; no std normalisation. w_t >= 0 in exact arithmetic and is clamped at 0
    (verl does not clamp; the two agree wherever round-off leaves w_t >= 0). Groups of one rollout get A = G. With
    ``handle_zero_tail`` (verl's default) a group's unique longest rollout gets no baseline past
    the second-longest one's length (no other rollout estimates it there). BoT instead pools
    token rewards (not returns) in a bag and standardises them: no reward-to-go, no policy
    statistics. ``eps`` is unused (``epsilon`` is verl's constant).
    """
    check_nonnegative("epsilon", epsilon)
    for name, value in (("logp_BT", logp_BT), ("sum_pi_sq_BT", sum_pi_sq_BT)):
        if value is None:
            raise ValueError(
                f"advantage estimator 'otb' needs {name}: the sampling policy's per-token "
                "log-probabilities (logp_BT) and sums of squared probabilities over the "
                "vocabulary (sum_pi_sq_BT); botgrpo.core takes them from the caller (verl "
                "computes both)"
            )
    logp = _per_token("logp_BT", logp_BT, rewards_BT, mask_BT)
    w_BT = 1.0 - 2.0 * logp.exp() + _per_token("sum_pi_sq_BT", sum_pi_sq_BT, rewards_BT, mask_BT)
    if is_weights_BT is not None:
        w_BT = w_BT * _per_token("is_weights_BT", is_weights_BT, rewards_BT, mask_BT) ** 2
    # w_t = (1 - pi_t)^2 + sum_{v != t} pi_v^2 >= 0 exactly; float32 round-off on confident
    # tokens makes it ~ -1e-6, which would let the baseline's denominator change sign
    w_BT = torch.where(mask_BT, w_BT, 0.0).clamp_min(0.0)
    returns_BT = reward_to_go(rewards_BT, mask_BT)
    path_BT = w_BT.cumsum(-1)
    m_BT = mask_BT.double()
    length_B = m_BT.sum(-1)
    T = rewards_BT.shape[1]
    stats = torch.cat([returns_BT * path_BT * m_BT, path_BT * m_BT], dim=1)
    stats = _pad_to_longest(stats.view(-1, 2, T), gather)  # [B, 2, T_max]
    T_max = stats.shape[-1]
    rows = torch.cat([stats.flatten(1), length_B[:, None], torch.ones_like(length_B)[:, None]], 1)
    ro = gather_rollouts(rows, group_B, gather)
    sums_G = ro.group_sum(ro.stats_NK)
    num_GT, den_GT = sums_G[:, :T_max], sums_G[:, T_max : 2 * T_max]
    count_G = sums_G[:, -1]
    baseline_GT = torch.where(count_G[:, None] >= 2, num_GT / (den_GT + epsilon), 0.0)
    baseline_BT = baseline_GT[ro.local_group_B, :T].clone()
    if handle_zero_tail:
        _zero_tail_(baseline_BT, length_B, ro, ro.stats_NK[:, 2 * T_max])
    return torch.where(mask_BT, returns_BT - baseline_BT, 0.0)


def _zero_tail_(baseline_BT: Tensor, length_B: Tensor, ro, length_N: Tensor) -> None:
    """Zero the baseline of each group's unique longest rollout from the second-longest
    rollout's length on (in place)."""
    G = ro.num_groups
    device = length_N.device
    longest_G = torch.full((G,), -1.0, dtype=length_N.dtype, device=device).scatter_reduce(
        0, ro.group_N, length_N, "amax"
    )
    at_longest_N = length_N == longest_G[ro.group_N]
    n_longest_G = ro.group_sum(at_longest_N.double())
    below_N = torch.where(at_longest_N, -1.0, length_N)
    second_G = torch.full((G,), -1.0, dtype=length_N.dtype, device=device).scatter_reduce(
        0, ro.group_N, below_N, "amax"
    )
    g_B = ro.local_group_B
    unique_B = (length_B == longest_G[g_B]) & (n_longest_G[g_B] == 1) & (second_G[g_B] >= 0)
    t_T = torch.arange(baseline_BT.shape[1], dtype=length_B.dtype, device=length_B.device)
    tail_BT = unique_B[:, None] & (t_T[None, :] >= second_G[g_B][:, None])
    baseline_BT.masked_fill_(tail_BT, 0.0)


@register_advantage_estimator("reinforce_pp")
def reinforce_pp(
    rewards_BT: Tensor,
    mask_BT: Tensor,
    group_B: Tensor,
    *,
    eps: float,
    gather: Gather | None,
    gamma: float = 1.0,
    epsilon: float = 1e-8,
) -> Tensor:
    """REINFORCE++ (arXiv 2501.03262; verl's and OpenRLHF's ``reinforce_plus_plus``).

        G_t = r_t + gamma G_{t+1}
        A_t = (G_t - mean(G)) / sqrt(var(G) + epsilon)      (over every kept token of the batch)

    Reward-to-go with batch whitening (unbiased variance, as verl's ``masked_whiten``); no group
    baseline, so ``group_B`` only matters through ``gather`` (the whole batch is one pool).
    A batch with fewer than two kept tokens gets 0. BoT instead centres each token's reward on
    its own group's bag. ``eps`` is unused (``epsilon`` is verl's constant).
    """
    check_nonnegative("epsilon", epsilon)
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma!r}")
    return _whiten(reward_to_go(rewards_BT, mask_BT, gamma), mask_BT, group_B, gather, epsilon)


def gae(
    rewards_BT: Tensor, values_BT: Tensor, mask_BT: Tensor, gamma: float = 1.0, lam: float = 0.95
) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimation (Schulman et al., arXiv 1506.02438), unwhitened.

        delta_t = r_t + gamma V_{t+1} - V_t,     A_t = delta_t + gamma lam A_{t+1}
        returns_t = A_t + V_t                    (the value model's regression target)

    Over kept tokens; a masked position inside a completion (an observation span) is skipped,
    its neighbours linked across it, as in verl; V after the last token is 0. Returns float64
    (advantages, returns), 0 at masked positions.

    >>> adv, ret = gae(torch.tensor([[0.0, 1.0]]), torch.tensor([[0.5, 0.5]]),
    ...                torch.tensor([[True, True]]), gamma=1.0, lam=1.0)
    >>> adv.tolist(), ret.tolist()
    ([[0.5, 0.5]], [[1.0, 1.0]])
    """
    rewards_BT = as_tensor(rewards_BT, "rewards_BT")
    mask_BT = check_mask(mask_BT, rewards_BT.shape)
    values_BT = as_tensor(values_BT, "values_BT")
    if values_BT.shape != rewards_BT.shape:
        raise ValueError(
            f"values_BT has shape {tuple(values_BT.shape)}, expected {tuple(rewards_BT.shape)}"
        )
    check_finite(rewards_BT, mask_BT, "rewards_BT")
    check_finite(values_BT, mask_BT, "values_BT")
    r = torch.where(mask_BT, rewards_BT.double(), 0.0)
    v = torch.where(mask_BT, values_BT.double(), 0.0)
    adv = torch.zeros_like(r)
    next_value = torch.zeros(r.shape[0], dtype=r.dtype, device=r.device)
    running = torch.zeros_like(next_value)
    for t in reversed(range(r.shape[1])):
        kept = mask_BT[:, t]
        step = r[:, t] + gamma * next_value - v[:, t] + gamma * lam * running
        running = torch.where(kept, step, running)
        next_value = torch.where(kept, v[:, t], next_value)
        adv[:, t] = torch.where(kept, running, 0.0)
    return adv, torch.where(mask_BT, adv + v, 0.0)


@register_advantage_estimator("gae")
def gae_estimator(
    rewards_BT: Tensor,
    mask_BT: Tensor,
    group_B: Tensor,
    *,
    eps: float,
    gather: Gather | None,
    values_BT: Tensor | None = None,
    gamma: float = 1.0,
    lam: float = 0.95,
    whiten: bool = True,
    epsilon: float = 1e-8,
) -> Tensor:
    """PPO's advantages: :func:`gae` with a learned value model's ``values_BT``, whitened over
    every kept token of the batch (verl's ``gae``: unbiased variance, shifted mean) unless
    ``whiten`` is False. No group statistics: ``group_B`` matters only for ``gather``.
    ``eps`` is unused (``epsilon`` is verl's constant)."""
    if values_BT is None:
        raise ValueError(
            "advantage estimator 'gae' needs values_BT, a value model's per-token values"
        )
    for name, value in (("gamma", gamma), ("lam", lam)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    check_nonnegative("epsilon", epsilon)
    values = _per_token("values_BT", values_BT, rewards_BT, mask_BT)
    adv_BT, _ = gae(rewards_BT, values, mask_BT, gamma, lam)
    if not whiten:
        return adv_BT
    return _whiten(adv_BT, mask_BT, group_B, gather, epsilon)


def _whiten(x_BT: Tensor, mask_BT: Tensor, group_B: Tensor, gather, epsilon: float) -> Tensor:
    """(x - mean) / sqrt(var + epsilon) over every kept token of the (gathered) batch; 0 with
    fewer than two kept tokens."""
    m_BT = mask_BT.double()
    rows = torch.stack([m_BT.sum(-1), (x_BT * m_BT).sum(-1), (x_BT**2 * m_BT).sum(-1)], dim=1)
    n, total, squares = gather_rollouts(rows, group_B, gather).stats_NK.sum(0).unbind()
    if n < 2:
        return torch.zeros_like(x_BT)
    mean = total / n
    var = (squares - n * mean**2).clamp_min(0.0) / (n - 1)
    return torch.where(mask_BT, (x_BT - mean) * torch.rsqrt(var + epsilon), 0.0)
