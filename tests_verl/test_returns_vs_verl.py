"""botgrpo.core's otb and reinforce_pp equal verl's own optimal_token_baseline and
reinforce_plus_plus on random ragged batches (verl 0.9.1's core_algos, unmodified)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl.trainer.ppo import core_algos

from botgrpo.core import get_advantage_estimator


def _batch(seed: int, groups: int = 5, k: int = 4, width: int = 19, vocab: int = 11):
    """Token rewards, ragged right-padded masks, uids shuffled, and a real policy's
    per-token log-probabilities and sums of squared probabilities (softmax of random logits)."""
    gen = torch.Generator().manual_seed(seed)
    b = groups * k
    rewards_BT = torch.randn(b, width, generator=gen)
    lengths_B = torch.randint(1, width + 1, (b,), generator=gen)
    if seed % 2:  # ties for the longest rollout in some groups
        lengths_B[::k] = width
        lengths_B[1::k] = width
    mask_BT = (torch.arange(width)[None, :] < lengths_B[:, None]).float()
    probs_BTV = torch.softmax(torch.randn(b, width, vocab, generator=gen) * 2, dim=-1)
    tokens_BT = torch.randint(0, vocab, (b, width), generator=gen)
    logp_BT = probs_BTV.gather(-1, tokens_BT[..., None]).squeeze(-1).log()
    sum_pi_sq_BT = (probs_BTV**2).sum(-1)
    uids = np.array(
        [str(uuid.UUID(int=g + 1)) for g in range(groups) for _ in range(k)], dtype=object
    )
    perm = torch.randperm(b, generator=gen)
    return rewards_BT[perm], mask_BT[perm], uids[perm.numpy()], logp_BT[perm], sum_pi_sq_BT[perm]


def _dense(uids) -> torch.Tensor:
    first = {}
    return torch.tensor([first.setdefault(u, len(first)) for u in uids])


@pytest.mark.parametrize("zero_tail", [True, False])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_otb_equals_verls_optimal_token_baseline(seed, weights, zero_tail):
    rewards_BT, mask_BT, uids, logp_BT, sum_pi_sq_BT = _batch(seed)
    is_BT = (
        torch.rand(rewards_BT.shape, generator=torch.Generator().manual_seed(9)) * 2
        if weights
        else None
    )
    expected, _ = core_algos.compute_optimal_token_baseline_advantage(
        token_level_rewards=rewards_BT,
        response_mask=mask_BT,
        index=uids,
        old_log_probs=logp_BT,
        sum_pi_squared=sum_pi_sq_BT,
        rollout_is_weights=is_BT,
        handle_zero_tail=zero_tail,
    )
    ours = get_advantage_estimator("otb")(
        rewards_BT,
        mask_BT,
        _dense(uids),
        logp_BT=logp_BT,
        sum_pi_sq_BT=sum_pi_sq_BT,
        is_weights_BT=is_BT,
        handle_zero_tail=zero_tail,
    )
    torch.testing.assert_close(ours, expected.float(), rtol=1e-5, atol=1e-5)


def test_otb_defaults_are_verls():
    rewards_BT, mask_BT, uids, logp_BT, sum_pi_sq_BT = _batch(5)
    expected, _ = core_algos.compute_optimal_token_baseline_advantage(
        rewards_BT, mask_BT, uids, logp_BT, sum_pi_sq_BT
    )
    ours = get_advantage_estimator("otb")(
        rewards_BT, mask_BT, _dense(uids), logp_BT=logp_BT, sum_pi_sq_BT=sum_pi_sq_BT
    )
    torch.testing.assert_close(ours, expected.float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("gamma", [1.0, 0.9, 0.5])
@pytest.mark.parametrize("seed", range(4))
def test_reinforce_pp_equals_verls_reinforce_plus_plus(seed, gamma):
    rewards_BT, mask_BT, uids, _, _ = _batch(seed)
    if seed == 3:  # an observation span inside completions: verl carries the return through it
        mask_BT[:, 3:5] = 0
    config = OmegaConf.create({"gamma": gamma})
    expected, _ = core_algos.compute_reinforce_plus_plus_outcome_advantage(
        token_level_rewards=rewards_BT, response_mask=mask_BT, config=config
    )
    ours = get_advantage_estimator("reinforce_pp")(rewards_BT, mask_BT, _dense(uids), gamma=gamma)
    torch.testing.assert_close(ours, expected.float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("gamma", "lam"), [(1.0, 1.0), (0.99, 0.95), (0.9, 0.5)])
@pytest.mark.parametrize("seed", range(4))
def test_gae_equals_verls_gae(seed, gamma, lam):
    rewards_BT, mask_BT, uids, _, _ = _batch(seed)
    if seed == 3:  # an observation span inside completions: verl skips it
        mask_BT[:, 3:5] = 0
    values_BT = torch.randn(rewards_BT.shape, generator=torch.Generator().manual_seed(seed + 7))
    expected, returns = core_algos.compute_gae_advantage_return(
        token_level_rewards=rewards_BT,
        values=values_BT,
        response_mask=mask_BT,
        gamma=gamma,
        lam=lam,
    )
    ours = get_advantage_estimator("gae")(
        rewards_BT, mask_BT, _dense(uids), values_BT=values_BT, gamma=gamma, lam=lam
    )
    torch.testing.assert_close(ours, (expected * mask_BT).float(), rtol=1e-5, atol=1e-5)
    from botgrpo.core.returns import gae

    _, ours_returns = gae(rewards_BT, values_BT, mask_BT.bool(), gamma, lam)
    torch.testing.assert_close(ours_returns, (returns * mask_BT).double(), rtol=1e-5, atol=1e-5)
