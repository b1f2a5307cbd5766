"""Advantage estimators: hand-computed cases, vectorised == loop, invariances, bad input."""

from __future__ import annotations

import math
import threading

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from botgrpo.core import ADVANTAGE_ESTIMATORS, get_advantage_estimator
from tests.core_batches import random_batch
from tests.core_reference import loop_reference

STEP_ESTIMATORS = ("grpo_process", "pure")


def policy_statistics(shape, vocab: int = 7, seed: int = 0):
    """logp_BT and sum_pi_sq_BT of a real softmax policy over a small vocabulary."""
    gen = torch.Generator().manual_seed(seed)
    probs_BTV = torch.softmax(torch.randn(*shape, vocab, generator=gen) * 2, dim=-1)
    tokens_BT = torch.randint(0, vocab, tuple(shape), generator=gen)
    logp_BT = probs_BTV.gather(-1, tokens_BT[..., None]).squeeze(-1).log()
    return logp_BT, (probs_BTV**2).sum(-1)


def options_for(name, steps_BT, outcome_B=None):
    if name == "otb":
        logp_BT, sum_pi_sq_BT = policy_statistics(steps_BT.shape)
        return {"logp_BT": logp_BT, "sum_pi_sq_BT": sum_pi_sq_BT}
    if name == "gae":
        return {
            "values_BT": torch.randn(steps_BT.shape, generator=torch.Generator().manual_seed(3))
        }
    if name == "pure":
        return {"steps_BT": steps_BT, "outcome_B": outcome_B}
    if name == "grpo_process":
        return {"steps_BT": steps_BT}
    return {}


def run(name, rewards, mask, group, **options):
    return get_advantage_estimator(name)(rewards, mask, group, **options)


# ---------------------------------------------------------------- hand-computed cases


def test_bot_hand_computed():
    # rollout 0: rewards [1, 1, 0], L=3, mean 2/3; rollout 1: rewards [0, 0], L=2, mean 0
    # mu = (2/3 + 0) / 2 = 1/3
    # sigma^2 = 1/2 * [ (1/3)((2/3)^2 + (2/3)^2 + (1/3)^2) + (1/2)((1/3)^2 + (1/3)^2) ]
    #         = 1/2 * [ 1/3 + 1/9 ] = 2/9,  sigma = sqrt(2)/3
    # A(r=1) = (2/3) / (sqrt(2)/3) = sqrt(2);  A(r=0) = (-1/3) / (sqrt(2)/3) = -1/sqrt(2)
    rewards = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 5.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    adv = run("bot", rewards, mask, torch.tensor([3, 3]), eps=0.0)
    s2, h = 2**0.5, 2**-0.5
    torch.testing.assert_close(adv, torch.tensor([[s2, s2, -h], [-h, -h, 0.0]]))


def test_bot_uniform_hand_computed():
    # same tokens, weight 1 each: values [1, 1, 0, 0, 0], mu = 2/5
    # sigma^2 = (2 (3/5)^2 + 3 (2/5)^2) / 5 = (18/25 + 12/25) / 5 = 6/25,  sigma = sqrt(6)/5
    # A(1) = (3/5) / (sqrt(6)/5) = 3/sqrt(6);  A(0) = -2/sqrt(6)
    rewards = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    adv = run("bot_uniform", rewards, mask, torch.tensor([0, 0]), eps=0.0)
    a, b = 3 / 6**0.5, -2 / 6**0.5
    torch.testing.assert_close(adv, torch.tensor([[a, a, b], [b, b, 0.0]]))


def test_outcome_estimators_hand_computed():
    # outcomes R = [1, 0, 0, 1] (constant rows); group 7 = rows 0,1; group 9 = rows 2,3
    # grpo: mean 0.5, population std 0.5 -> A = +-1
    # dr_grpo: A = R - 0.5 = +-0.5;  rloo: A = R - other = +-1
    rewards = torch.tensor([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    mask = torch.ones(4, 2)
    group = torch.tensor([7, 7, 9, 9])
    sign = torch.tensor([1.0, -1.0, -1.0, 1.0])[:, None].expand(4, 2)
    torch.testing.assert_close(run("grpo", rewards, mask, group, eps=0.0), sign)
    torch.testing.assert_close(run("dr_grpo", rewards, mask, group), 0.5 * sign)
    torch.testing.assert_close(run("rloo", rewards, mask, group), sign)
    torch.testing.assert_close(run("grpo", rewards, mask, group, scale="none"), 0.5 * sign)


def test_grpo_batch_scale_hand_computed():
    # group A: R = [2, 0] (mean 1); group B: R = [1, 1] (no signal)
    # batch std over [2, 0, 1, 1]: mean 1, var (1 + 1 + 0 + 0)/4 = 0.5 -> std sqrt(0.5)
    # A = (2 - 1) / sqrt(0.5) = sqrt(2), -sqrt(2), 0, 0
    rewards = torch.tensor([[2.0], [0.0], [1.0], [1.0]])
    adv = run("grpo", rewards, torch.ones(4, 1), torch.tensor([0, 0, 1, 1]), eps=0.0, scale="batch")
    torch.testing.assert_close(adv.flatten(), torch.tensor([2**0.5, -(2**0.5), 0.0, 0.0]))


def test_grpo_process_hand_computed():
    # rollout 0: steps 0 = tokens 0-1 (rewards 1, 1 -> 1), step 1 = token 2 (reward 0)
    # rollout 1: step 0 = token 0 (reward 0), token 1 outside any step
    # step rewards of the group: [1, 0, 0]: mu = 1/3, sigma = sqrt(2)/3
    # normalised: r~ = [sqrt(2), -1/sqrt(2), -1/sqrt(2)]
    # rollout 0: t0,t1 -> r~0 + r~1 = sqrt(2) - 1/sqrt(2) = 1/sqrt(2); t2 -> -1/sqrt(2)
    # rollout 1: t0 -> -1/sqrt(2); t1 (after its last step) -> 0
    rewards = torch.tensor([[1.0, 1.0, 0.0], [0.0, 3.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    steps = torch.tensor([[0, 0, 1], [0, -1, -1]])
    adv = run("grpo_process", rewards, mask, torch.tensor([1, 1]), eps=0.0, steps_BT=steps)
    h = 2**-0.5
    torch.testing.assert_close(adv, torch.tensor([[h, h, -h], [-h, 0.0, 0.0]]))


def test_pure_strict_hand_computed():
    # rollout 0: steps rewards [0.5 (t0), -1 (t1), 1 (t2)], outcome 1
    #   returns: t0 min(0.5,-1,1) = -1, t1 min(-1,1) = -1, t2 min(1) = 1; +1 outcome -> [0, 0, 2]
    # rollout 1: one step reward 0.25 (t0..t1), outcome 0 -> returns [0.25, 0.25]
    # baselines: rollout 0 -> 0.25 (other's first return); rollout 1 -> 0
    # A0 = [0 - 0.25, 0 - 0.25, 2 - 0.25];  A1 = [0.25, 0.25]
    rewards = torch.tensor([[0.5, -1.0, 1.0], [0.25, 0.25, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    steps = torch.tensor([[0, 1, 2], [0, 0, -1]])
    adv = run(
        "pure",
        rewards,
        mask,
        torch.tensor([0, 0]),
        steps_BT=steps,
        outcome_B=torch.tensor([1.0, 0.0]),
        form="strict",
    )
    torch.testing.assert_close(adv, torch.tensor([[-0.25, -0.25, 1.75], [0.25, 0.25, 0.0]]))


def test_pure_soft_hand_computed():
    # rollout 0: step rewards [0, 1] at t0, t1; T = 1: weights softmax([0, -1]) =
    #   [1/(1+e^-1), e^-1/(1+e^-1)] = [w0, w1]; r* = [0, w1]; returns t0: w1, t1: w1
    # rollout 1: one step reward 0 -> returns [0, 0]
    # A0 = w1 - 0 = w1; A1 = 0 - w1 = -w1
    rewards = torch.tensor([[0.0, 1.0], [0.0, 0.0]])
    steps = torch.tensor([[0, 1], [0, 0]])
    adv = run(
        "pure", rewards, torch.ones(2, 2), torch.tensor([0, 0]), steps_BT=steps, temperature=1.0
    )
    e = torch.exp(torch.tensor(-1.0))
    w1 = float(e / (1 + e))
    torch.testing.assert_close(adv, torch.tensor([[w1, w1], [-w1, -w1]]))


def test_otb_hand_computed():
    # two rollouts, pi = 1/2 at every token and sum pi^2 = 1/2: w = 1 - 1 + 1/2 = 1/2, W = [1/2, 1]
    # rewards [1, 0] and [0, 0]: returns G = [1, 0] and [0, 0]
    # B_0 = (1 * 1/2 + 0) / (1/2 + 1/2) = 1/2;  B_1 = 0 / 2 = 0
    half = torch.full((2, 2), 0.5)
    adv = run(
        "otb",
        torch.tensor([[1.0, 0.0], [0.0, 0.0]]),
        torch.ones(2, 2),
        torch.tensor([0, 0]),
        logp_BT=half.log(),
        sum_pi_sq_BT=half,
    )
    torch.testing.assert_close(adv, torch.tensor([[0.5, 0.0], [-0.5, 0.0]]))


def test_otb_weights_paths_by_their_variance_and_zeroes_the_unique_tail():
    # rollout 0 is sure of its tokens (pi = 1, sum pi^2 = 1: w = 0 at t=0, then 1/2): W = [0, .5, 1]
    # rollout 1 (length 2): pi = 1/2, sum pi^2 = 1/2: w = 1/2, W = [.5, 1]
    # rewards: rollout 0 [0, 0, 3] -> G = [3, 3, 3]; rollout 1 [1, 1] -> G = [2, 1]
    # B_0 = (3*0 + 2*.5) / (0 + .5) = 2;  B_1 = (3*.5 + 1*1) / (.5 + 1) = 5/3
    # t = 2: only rollout 0, the unique longest, beyond the second-longest (2): no baseline
    logp = torch.tensor([[0.0, 0.5, 0.5], [0.5, 0.5, 1.0]])
    logp = torch.where(logp > 0, logp.log(), 0.0)
    sq = torch.tensor([[1.0, 0.5, 0.5], [0.5, 0.5, 0.5]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    rewards = torch.tensor([[0.0, 0.0, 3.0], [1.0, 1.0, 0.0]])
    common = {"logp_BT": logp, "sum_pi_sq_BT": sq}
    adv = run("otb", rewards, mask, torch.tensor([4, 4]), **common)
    torch.testing.assert_close(adv, torch.tensor([[1.0, 4 / 3, 3.0], [0.0, -2 / 3, 0.0]]))
    kept = run("otb", rewards, mask, torch.tensor([4, 4]), handle_zero_tail=False, **common)
    # without the zero tail: B_2 = 3 * 1 / 1 = 3 -> A = 0
    assert float(kept[0, 2]) == pytest.approx(0.0, abs=1e-6)
    alone = run(
        "otb", rewards[:1], mask[:1], torch.tensor([0]), logp_BT=logp[:1], sum_pi_sq_BT=sq[:1]
    )
    torch.testing.assert_close(alone, torch.tensor([[3.0, 3.0, 3.0]]))  # no group: A = G


def test_otb_round_off_on_a_confident_prefix_keeps_the_baseline_bounded():
    """w_t = 1 - 2 pi_t + sum pi^2 is >= 0 exactly; float32 gives about -4e-6 on tokens with
    pi ~ 1. Clamped at 0, a shared confident prefix keeps B_t inside the returns' range."""
    logp = torch.zeros(4, 4)  # pi = 1 on the two shared leading tokens
    logp[:, 2:] = math.log(0.5)
    sq = torch.full((4, 4), 0.5)
    sq[:, :2] = 1.0 - torch.tensor([4e-6, -4e-6, 4e-6, 4e-6])[:, None]  # w = -+4e-6
    rewards = torch.zeros(4, 4)
    rewards[:, -1] = torch.tensor([1.0, 0.0, 1.0, 0.0])
    adv = run(
        "otb",
        rewards,
        torch.ones(4, 4),
        torch.zeros(4, dtype=torch.long),
        logp_BT=logp,
        sum_pi_sq_BT=sq,
    )
    assert adv.abs().max() <= 1.0
    torch.testing.assert_close(adv[:, 2:], torch.tensor([[0.5, 0.5], [-0.5, -0.5]] * 2))


def test_otb_needs_the_policy_statistics():
    with pytest.raises(ValueError, match="needs logp_BT"):
        run("otb", torch.ones(2, 2), torch.ones(2, 2), torch.tensor([0, 0]))
    with pytest.raises(ValueError, match=r"sum_pi_sq_BT has shape \(2, 3\)"):
        run(
            "otb",
            torch.ones(2, 2),
            torch.ones(2, 2),
            torch.tensor([0, 0]),
            logp_BT=torch.zeros(2, 2),
            sum_pi_sq_BT=torch.zeros(2, 3),
        )


def test_gae_hand_computed():
    # one rollout, rewards [0, 1], values [0.5, 0.25], gamma 1, lam 1/2 (unwhitened):
    # delta_1 = 1 + 0 - 0.25 = 0.75 -> A_1 = 0.75; delta_0 = 0 + 0.25 - 0.5 = -0.25
    # A_0 = -0.25 + 0.5 * 0.75 = 0.125; returns = A + V = [0.625, 1.0]
    from botgrpo.core.returns import gae

    rewards, values = torch.tensor([[0.0, 1.0]]), torch.tensor([[0.5, 0.25]])
    mask = torch.tensor([[True, True]])
    adv, ret = gae(rewards, values, mask, gamma=1.0, lam=0.5)
    torch.testing.assert_close(adv, torch.tensor([[0.125, 0.75]], dtype=torch.float64))
    torch.testing.assert_close(ret, torch.tensor([[0.625, 1.0]], dtype=torch.float64))
    raw = run("gae", rewards, mask, torch.tensor([0]), values_BT=values, lam=0.5, whiten=False)
    torch.testing.assert_close(raw, torch.tensor([[0.125, 0.75]]))
    with pytest.raises(ValueError, match="needs values_BT"):
        run("gae", rewards, mask, torch.tensor([0]))


def test_reinforce_pp_hand_computed():
    # rewards [[1, 1], [0, 0]], gamma 1: returns [[2, 1], [0, 0]]; mean 3/4
    # unbiased var = ((5/4)^2 + (1/4)^2 + 2 (3/4)^2) / 3 = (25 + 1 + 18) / 48 = 11/12
    adv = run(
        "reinforce_pp",
        torch.tensor([[1.0, 1.0], [0.0, 0.0]]),
        torch.ones(2, 2),
        torch.tensor([0, 1]),
    )
    sd = (11 / 12) ** 0.5
    torch.testing.assert_close(
        adv, torch.tensor([[1.25 / sd, 0.25 / sd], [-0.75 / sd, -0.75 / sd]]), rtol=1e-6, atol=1e-6
    )
    # gamma 1/2 and an observation span (masked) inside: G_2 = 4, G_1 carried, G_0 = 1 + 4/2 = 3
    rewards = torch.tensor([[1.0, 9.0, 4.0]])
    returns = run("reinforce_pp", rewards, torch.tensor([[1, 0, 1]]), torch.tensor([0]), gamma=0.5)
    # kept returns 3 and 4: mean 3.5, var 0.5
    torch.testing.assert_close(returns, torch.tensor([[-0.5, 0.0, 0.5]]) / (0.5 + 1e-8) ** 0.5)
    with pytest.raises(ValueError, match="gamma must lie in"):
        run("reinforce_pp", rewards, torch.ones(1, 3), torch.tensor([0]), gamma=1.5)


# ---------------------------------------------------------------- vectorised == loop


@pytest.mark.parametrize("name", ADVANTAGE_ESTIMATORS)
@pytest.mark.parametrize("seed", range(8))
def test_vectorised_matches_loop(name, seed):
    rewards, mask, group, steps = random_batch(seed)
    outcome = torch.randn(rewards.shape[0], generator=torch.Generator().manual_seed(seed))
    opts = options_for(name, steps, outcome)
    expected = loop_reference(name, rewards, mask, group, **dict(opts))
    got = run(name, rewards, mask, group, **opts)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("form", ["soft", "strict"])
@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_options_match_loop(form, scale):
    rewards, mask, group, steps = random_batch(11)
    torch.testing.assert_close(
        run("grpo", rewards, mask, group, scale=scale).double(),
        loop_reference("grpo", rewards, mask, group, scale=scale),
        rtol=1e-5,
        atol=1e-5,
    )
    opts = {"steps_BT": steps, "form": form, "temperature": 0.3}
    torch.testing.assert_close(
        run("pure", rewards, mask, group, **opts).double(),
        loop_reference("pure", rewards, mask, group, **opts),
        rtol=1e-5,
        atol=1e-5,
    )


# ---------------------------------------------------------------- structural properties


@pytest.mark.parametrize("name", ADVANTAGE_ESTIMATORS)
def test_masked_positions_are_zero_and_irrelevant(name):
    rewards, mask, group, steps = random_batch(3)
    opts = options_for(name, steps)
    adv = run(name, rewards, mask, group, **opts)
    assert (adv[~mask] == 0).all()
    other = torch.where(mask, rewards, torch.randn(rewards.shape) * 1e6)
    other_steps = torch.where(mask, steps, torch.randint(-1, 50, steps.shape))
    opts2 = options_for(name, other_steps)
    torch.testing.assert_close(run(name, other, mask, group, **opts2), adv, rtol=0, atol=0)


@pytest.mark.parametrize("name", ADVANTAGE_ESTIMATORS)
def test_zero_signal_single_rollout_and_empty_rows(name):
    steps = torch.tensor([[0, 0, 1], [0, 0, 1], [0, 0, 0], [0, 1, -1]])
    rewards = torch.tensor([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5], [1.0, 2.0, 3.0], [9.0, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]])
    # group 0: two identical constant rollouts (no signal); group 5: one rollout + one empty row
    adv = run(name, rewards, mask, torch.tensor([0, 0, 5, 5]), **options_for(name, steps))
    if name == "otb":  # identical rollouts: A ~ 0; alone in its group a rollout gets A = G
        torch.testing.assert_close(adv[:2], torch.zeros(2, 3), rtol=0, atol=1e-6)
        torch.testing.assert_close(adv[2:], torch.tensor([[6.0, 5.0, 3.0], [0, 0, 0]]))
        return
    if name in ("reinforce_pp", "gae"):  # one pool for the batch: identical rollouts, same credit
        if name == "gae":  # values differ per row: only the empty row is known
            assert (adv[3] == 0).all()
            return
        assert torch.equal(adv[0], adv[1]) and (adv[3] == 0).all()
        return
    # pure's reward-to-go minus a start-of-sequence baseline is nonzero inside identical
    # rollouts (G_t < G_0 after a step ends), so only its single-rollout group must vanish
    rows = slice(2, 4) if name == "pure" else slice(0, 4)
    assert (adv[rows] == 0).all()


@pytest.mark.parametrize("name", ADVANTAGE_ESTIMATORS)
def test_eps_zero_gives_zeros_not_nan_for_zero_signal_groups(name):
    # group 0 has identical constant rollouts (std 0); with eps = 0 its advantages are 0, not 0/0
    rewards = torch.tensor([[1.0, 1.0], [1.0, 1.0], [0.0, 2.0], [1.0, 3.0]])
    steps = torch.tensor([[0, 0], [0, 0], [0, 1], [0, 1]])
    adv = run(
        name,
        rewards,
        torch.ones(4, 2),
        torch.tensor([0, 0, 1, 1]),
        eps=0.0,
        **options_for(name, steps),
    )
    assert torch.isfinite(adv).all()
    if name not in ("pure", "otb", "reinforce_pp", "gae"):  # their credit is a return
        assert (adv[:2] == 0).all()


def test_bot_equals_grpo_on_per_rollout_constant_rewards():
    for seed in range(10):
        rewards, mask, group, _ = random_batch(seed, per_rollout_constant=True)
        torch.testing.assert_close(
            run("bot", rewards, mask, group),
            run("grpo", rewards, mask, group),
            rtol=1e-5,
            atol=1e-5,
        )


def test_bot_uniform_equals_bot_when_lengths_equal():
    for seed in range(5):
        rewards, mask, group, _ = random_batch(seed, equal_lengths=True)
        torch.testing.assert_close(
            run("bot_uniform", rewards, mask, group),
            run("bot", rewards, mask, group),
            rtol=1e-5,
            atol=1e-5,
        )


# ---------------------------------------------------------------- property-based invariances

seeds = st.integers(min_value=0, max_value=10_000)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, name=st.sampled_from(ADVANTAGE_ESTIMATORS))
def test_permuting_rollouts_permutes_advantages(seed, name):
    rewards, mask, group, steps = random_batch(seed)
    outcome = torch.randn(rewards.shape[0])
    perm = torch.randperm(rewards.shape[0], generator=torch.Generator().manual_seed(seed + 1))
    opts = options_for(name, steps, outcome)
    adv = run(name, rewards, mask, group, **opts)
    adv_p = run(
        name,
        rewards[perm],
        mask[perm],
        group[perm],
        **{k: v[perm] if v is not None else v for k, v in opts.items()},
    )
    torch.testing.assert_close(adv_p, adv[perm], rtol=1e-5, atol=1e-6)


NORMALISED = ("bot", "bot_uniform", "grpo", "grpo_process")
CENTRED = ("bot", "bot_uniform", "grpo", "dr_grpo", "rloo", "grpo_process", "pure")


@settings(max_examples=25, deadline=None)
@given(seed=seeds, name=st.sampled_from(CENTRED), shift=st.floats(-50, 50))
def test_adding_a_constant_per_group_changes_nothing(seed, name, shift):
    rewards, mask, group, steps = random_batch(seed)
    rewards = rewards.double()  # so the shift itself loses no precision (float32 would at ~50)
    shift_B = torch.where(group == group[0], shift, 0.0).double()
    shifted = rewards + shift_B[:, None]
    if name == "pure":  # pure's return is min-form: shift each step, the strict return shifts too
        opts = {"steps_BT": steps, "form": "strict"}
        steps = torch.where(mask, steps.clamp_min(0), -1)  # every token on a step
        opts["steps_BT"] = steps
    else:
        opts = options_for(name, steps)
    torch.testing.assert_close(
        run(name, shifted, mask, group, **opts),
        run(name, rewards, mask, group, **opts),
        rtol=1e-4,
        atol=1e-4,
    )


@settings(max_examples=25, deadline=None)
@given(seed=seeds, name=st.sampled_from(NORMALISED), scale=st.floats(0.01, 100))
def test_scaling_rewards_changes_nothing(seed, name, scale):
    rewards, mask, group, steps = random_batch(seed)
    opts = options_for(name, steps)
    torch.testing.assert_close(
        run(name, rewards * scale, mask, group, eps=0.0, **opts),
        run(name, rewards, mask, group, eps=0.0, **opts),
        rtol=1e-4,
        atol=1e-4,
    )


@settings(max_examples=20, deadline=None)
@given(seed=seeds)
def test_bot_uniform_equals_bot_equal_lengths_property(seed):
    rewards, mask, group, _ = random_batch(seed, equal_lengths=True)
    torch.testing.assert_close(
        run("bot_uniform", rewards, mask, group),
        run("bot", rewards, mask, group),
        rtol=1e-5,
        atol=1e-5,
    )


@settings(max_examples=20, deadline=None)
@given(seed=seeds)
def test_bot_equals_grpo_property(seed):
    rewards, mask, group, _ = random_batch(seed, per_rollout_constant=True)
    torch.testing.assert_close(
        run("bot", rewards, mask, group), run("grpo", rewards, mask, group), rtol=1e-5, atol=1e-5
    )


# ---------------------------------------------------------------- across processes


def _thread_gather(n_parts):
    """An all-gather across ``n_parts`` threads: each call returns every part concatenated."""
    barrier = threading.Barrier(n_parts)
    slots: dict[int, torch.Tensor] = {}
    lock = threading.Lock()

    def make(rank):
        def gather(t):
            with lock:
                slots[rank] = t
            barrier.wait()
            out = torch.cat([slots[r] for r in range(n_parts)])
            barrier.wait()
            return out

        return gather

    return make


def _run_split(name, rewards, mask, group, opts, parts):
    """The estimator on each (rows, width) part in its own thread, gathering across them as
    processes would; the parts' results in order."""
    make = _thread_gather(len(parts))
    results = [None] * len(parts)

    def worker(rank):
        rows, w = parts[rank]
        cut = {k: v[rows, :w] if v is not None and v.dim() == 2 else v for k, v in opts.items()}
        cut = {k: v[rows] if v is not None and v.dim() == 1 else v for k, v in cut.items()}
        results[rank] = run(
            name, rewards[rows, :w], mask[rows, :w], group[rows], gather=make(rank), **cut
        )

    threads = [threading.Thread(target=worker, args=(r,)) for r in range(len(parts))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    return results


@pytest.mark.parametrize("name", ADVANTAGE_ESTIMATORS)
def test_split_across_processes_matches_single_process(name):
    rewards, mask, group, steps = random_batch(5, n_groups=3, k=4)
    outcome = torch.randn(rewards.shape[0])
    opts = options_for(name, steps, outcome)
    full = run(name, rewards, mask, group, **opts)
    half = rewards.shape[0] // 2
    width = rewards.shape[1]
    results = _run_split(
        name, rewards, mask, group, opts, [(slice(0, half), width), (slice(half, None), width)]
    )
    torch.testing.assert_close(torch.cat(results), full, rtol=0, atol=1e-6)


# ---------------------------------------------------------------- bad input


def test_unknown_estimator_lists_valid_names():
    with pytest.raises(ValueError, match="valid names: bot, bot_uniform, grpo"):
        get_advantage_estimator("ppo")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rewards_BT": torch.zeros(2, 3, 1)}, "2-D"),
        ({"mask_BT": torch.ones(2, 4)}, "mask_BT has shape"),
        ({"mask_BT": torch.full((2, 3), 0.5)}, "only 0 and 1"),
        ({"group_B": torch.tensor([0.0, 1.0])}, "integer group ids"),
        ({"group_B": torch.tensor([0, 1, 2])}, "group_B has shape"),
        (
            {"rewards_BT": torch.tensor([[0.0, float("nan"), 0], [0, 0, float("inf")]])},
            r"rows \[0, 1\]",
        ),
        ({"eps": -1.0}, "eps must be"),
        ({"bogus": 1}, "unknown option"),
    ],
)
def test_bad_input_raises(kwargs, match):
    args = {
        "rewards_BT": torch.zeros(2, 3),
        "mask_BT": torch.ones(2, 3),
        "group_B": torch.tensor([0, 1]),
    }
    args.update(kwargs)
    rewards, mask, group = args.pop("rewards_BT"), args.pop("mask_BT"), args.pop("group_B")
    with pytest.raises(ValueError, match=match):
        run("bot", rewards, mask, group, **args)


@pytest.mark.parametrize(
    ("name", "options", "match"),
    [
        ("grpo", {"scale": "global"}, "scale='global' is not one of"),
        ("pure", {}, "needs step structure"),
        (
            "pure",
            {"steps_BT": torch.zeros(2, 3, dtype=torch.long), "temperature": 0.0},
            "temperature must be",
        ),
        ("pure", {"steps_BT": torch.zeros(2, 3, dtype=torch.long), "form": "min"}, "form="),
        (
            "pure",
            {"steps_BT": torch.zeros(2, 3, dtype=torch.long), "outcome_B": torch.zeros(3)},
            "outcome_B has shape",
        ),
        ("grpo_process", {"steps_BT": torch.zeros(2, 3)}, "integer step indices"),
        ("grpo_process", {"steps_BT": torch.full((2, 3), -2)}, ">= -1"),
        ("grpo_process", {"steps_BT": torch.zeros(2, 2, dtype=torch.long)}, "steps_BT has shape"),
    ],
)
def test_bad_options_raise(name, options, match):
    with pytest.raises(ValueError, match=match):
        run(name, torch.zeros(2, 3), torch.ones(2, 3), torch.tensor([0, 0]), **options)


@pytest.mark.parametrize("name", ["otb", "reinforce_pp", "gae"])
def test_split_across_processes_with_different_widths(name):
    # under accelerate each process pads its completions to its own longest one
    rewards, mask, group, steps = random_batch(9, n_groups=2, k=4)
    half, width = rewards.shape[0] // 2, rewards.shape[1]
    mask[half:, width - 3 :] = False  # the second process's completions are 3 tokens shorter
    opts = options_for(name, steps)
    full = run(name, rewards, mask, group, **opts)
    parts = [(slice(0, half), width), (slice(half, None), width - 3)]
    results = _run_split(name, rewards, mask, group, opts, parts)
    torch.testing.assert_close(results[0], full[:half], rtol=0, atol=1e-6)
    torch.testing.assert_close(results[1], full[half:, : width - 3], rtol=0, atol=1e-6)


# ---------------------------------------------------------------- edges of the public API


@pytest.mark.parametrize("name", ADVANTAGE_ESTIMATORS)
def test_rows_of_length_zero_give_an_empty_result(name):
    steps = torch.zeros(3, 0, dtype=torch.long)
    options = options_for(name, steps, outcome_B=torch.zeros(3))
    adv = run(name, torch.zeros(3, 0), torch.zeros(3, 0), torch.tensor([0, 0, 1]), **options)
    assert adv.shape == (3, 0)


@pytest.mark.parametrize("name", ["bot", "bot_uniform", "grpo"])
def test_rewards_beyond_the_floating_point_range_are_refused_not_nan(name):
    rewards = torch.tensor([[3e38, 3e38], [1e38, 0.0]])
    if name == "grpo":
        rewards = torch.tensor([[1e300, 0.0], [-1e300, 0.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"beyond the floating-point range|beyond float32"):
        run(name, rewards, torch.ones(2, 2), torch.tensor([0, 0]))


@pytest.mark.parametrize("name", STEP_ESTIMATORS)
def test_step_ids_of_any_size_read_as_their_order(name):
    rewards = torch.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 1.0]])
    steps = torch.tensor([[0, 0, 1], [0, 1, 1]])
    mask, group = torch.ones(2, 3, dtype=torch.bool), torch.tensor([0, 0])
    small = run(name, rewards, mask, group, steps_BT=steps)
    huge = run(name, rewards, mask, group, steps_BT=torch.where(steps == 1, 2**62, 0))
    assert torch.equal(small, huge)


def test_a_custom_estimator_must_return_the_rewards_shape_and_finite_values():
    from botgrpo.core import register_advantage_estimator

    @register_advantage_estimator("test_row_mean_shape")
    def row_mean(rewards_BT, mask_BT, group_B, *, eps, gather):
        return rewards_BT.sum(1) / mask_BT.sum(1)  # [B], which would broadcast along T

    @register_advantage_estimator("test_nan_result")
    def nan_result(rewards_BT, mask_BT, group_B, *, eps, gather):
        return rewards_BT / 0.0

    square = torch.tensor([[1.0, 2, 3], [10, 20, 30], [5, 5, 5]])
    mask, group = torch.ones(3, 3, dtype=torch.bool), torch.tensor([0, 0, 1])
    with pytest.raises(ValueError, match=r"returned \(3,\), expected .* shape \(3, 3\)"):
        run("test_row_mean_shape", square, mask, group)
    with pytest.raises(ValueError, match="NaN or inf at kept positions of rows"):
        run("test_nan_result", square, mask, group)


def test_group_ids_given_as_strings_are_named():
    with pytest.raises(ValueError, match="group_B holds strings; it must hold numbers"):
        run("grpo", torch.ones(2, 2), torch.ones(2, 2), ["a", "b"])


def test_gae_and_reward_to_go_check_their_inputs():
    from botgrpo.core.returns import gae, reward_to_go

    adv, _ = gae(torch.tensor([[0.0, 1.0]]), torch.tensor([[0.5, 0.5]]), torch.tensor([[1, 1]]))
    assert adv.shape == (1, 2)  # an int mask reads as bool
    assert reward_to_go(torch.tensor([[1.0, 2.0]]), torch.tensor([[1, 0]])).tolist() == [[1, 0]]
    with pytest.raises(ValueError, match="values_BT contains NaN or inf"):
        gae(torch.zeros(1, 2), torch.tensor([[0.0, float("nan")]]), torch.ones(1, 2))
