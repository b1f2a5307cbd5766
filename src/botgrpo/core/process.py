"""Process-reward advantage estimators that need step structure: grpo_process and pure.

Both take ``steps_BT`` (int [B, T], the step index of each token, -1 outside any step) and read a
step's reward as the mean token reward over its tokens (see :mod:`botgrpo.core.steps`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from botgrpo.core.checks import as_tensor, check_choice, check_positive, check_steps
from botgrpo.core.estimators import register_advantage_estimator
from botgrpo.core.groups import Gather, gather_rollouts, pooled_moments
from botgrpo.core.steps import Steps, collect_steps, suffix_sum


def _row_step_moments(st: Steps) -> tuple[Tensor, Tensor, Tensor]:
    """Per rollout: number of steps, mean step reward, population variance of step rewards."""
    count_B = st.per_row_count()
    mean_B = st.per_row_sum(st.reward_S) / count_B.clamp_min(1.0)
    var_B = st.per_row_sum((st.reward_S - mean_B[st.row_S]) ** 2) / count_B.clamp_min(1.0)
    return count_B, mean_B, var_B


@register_advantage_estimator("grpo_process")
def grpo_process(
    rewards_BT: Tensor,
    mask_BT: Tensor,
    group_B: Tensor,
    *,
    eps: float,
    gather: Gather | None,
    steps_BT: Tensor | None = None,
) -> Tensor:
    """GRPO with process supervision (DeepSeekMath, arXiv 2402.03300, Sec. 4.1.3).

    The step rewards of all rollouts in a group are normalised together, each step weighing 1:
    r~_j = (r_j - mean_g) / (std_g + eps); a token's advantage is the sum of the normalised rewards
    of its rollout's steps ending at or after it: A_t = sum_{j: end_j >= t} r~_j. Tokens after
    the last step get 0. Groups with std ~ 0 or a single rollout get 0.
    """
    steps = check_steps(steps_BT, rewards_BT.shape, mask_BT)
    rewards_BT = rewards_BT.to(torch.float64)
    st = collect_steps(rewards_BT, steps)
    count_B, mean_B, var_B = _row_step_moments(st)
    gm = pooled_moments(count_B, mean_B, var_B, group_B, gather)
    scale_B = torch.where(gm.signal_B, 1.0 / (gm.sigma_B + eps), 0.0)
    norm_S = (st.reward_S - gm.mu_B[st.row_S]) * scale_B[st.row_S]
    return suffix_sum(st.place(norm_S, rewards_BT.shape))


def _min_form_returns(st: Steps, shape: torch.Size, form: str, temperature: float) -> Tensor:
    """PURE's min-form process return at every position (0 after the last step)."""
    if form == "strict":
        placed = st.place(st.reward_S, shape, fill=float("inf"))
        returns = placed.flip(1).cummin(1).values.flip(1)
        return torch.where(torch.isinf(returns), 0.0, returns)
    logits_S = -st.reward_S / temperature
    row_max_B = torch.full(
        (st.batch,), -torch.inf, dtype=logits_S.dtype, device=logits_S.device
    ).scatter_reduce(0, st.row_S, logits_S, reduce="amax")
    exp_S = torch.exp(logits_S - row_max_B[st.row_S])
    weight_S = exp_S / st.per_row_sum(exp_S)[st.row_S]
    return suffix_sum(st.place(weight_S * st.reward_S, shape))


@register_advantage_estimator("pure")
def pure(
    rewards_BT: Tensor,
    mask_BT: Tensor,
    group_B: Tensor,
    *,
    eps: float,
    gather: Gather | None,
    steps_BT: Tensor | None = None,
    outcome_B: Tensor | None = None,
    form: str = "soft",
    temperature: float = 0.1,
) -> Tensor:
    """PURE (arXiv 2504.15275): min-form credit assignment of process rewards, RLOO baseline.

    For a rollout with step rewards r_1..r_n (in order of their ends):
      strict: G_t = min_{j: end_j >= t} r_j
      soft:   r*_j = softmax_j(-r_j / T) r_j (over the rollout's steps), G_t = sum_{end_j >= t} r*_j
    plus the outcome ``outcome_B`` (default 0) credited at the final token, hence added to G_t of
    every token. Baseline: the mean return at the first token of the group's other rollouts,
    A_t = G_t - mean_{j != i} G_0^(j). Groups of one rollout get 0; ``eps`` is unused.
    """
    check_choice("form", form, ("soft", "strict"))
    check_positive("temperature", temperature)
    steps = check_steps(steps_BT, rewards_BT.shape, mask_BT)
    rewards_BT = rewards_BT.to(torch.float64)
    outcome = _check_outcome(outcome_B, rewards_BT)
    st = collect_steps(rewards_BT, steps)
    returns_BT = _min_form_returns(st, rewards_BT.shape, form, temperature) + outcome[:, None]
    present_B = mask_BT.any(dim=1)
    first_B = torch.where(present_B, mask_BT.to(torch.int8).argmax(dim=1), 0)
    start_B = returns_BT.gather(1, first_B[:, None]).squeeze(1) * present_B
    ro = gather_rollouts(torch.stack([start_B, present_B.to(start_B.dtype)], 1), group_B, gather)
    g = ro.local_group_B
    total_B = ro.group_sum(ro.stats_NK[:, 0])[g]
    count_B = ro.group_sum(ro.stats_NK[:, 1])[g]
    baseline_B = (total_B - start_B) / (count_B - 1).clamp_min(1.0)
    return (returns_BT - baseline_B[:, None]) * (count_B >= 2).to(returns_BT.dtype)[:, None]


def _check_outcome(outcome_B: object, rewards_BT: Tensor) -> Tensor:
    if outcome_B is None:
        return torch.zeros(rewards_BT.shape[0], dtype=rewards_BT.dtype, device=rewards_BT.device)
    outcome = as_tensor(outcome_B, "outcome_B").to(rewards_BT.device, rewards_BT.dtype)
    if outcome.shape != (rewards_BT.shape[0],):
        raise ValueError(
            f"outcome_B has shape {tuple(outcome.shape)}, expected ({rewards_BT.shape[0]},)"
        )
    if not torch.isfinite(outcome).all():
        rows = (~torch.isfinite(outcome)).nonzero().flatten().tolist()
        raise ValueError(f"outcome_B contains NaN or inf in rows {rows[:10]}")
    return outcome
