"""Policy losses, aggregation and KL: hand-computed values, analytic gradients, bad input."""

from __future__ import annotations

import math

import pytest
import torch

from botgrpo.core import (
    AGGREGATION_MODES,
    POLICY_LOSSES,
    aggregate_loss,
    get_policy_loss,
    kl_penalty,
)


def test_registered_names():
    assert POLICY_LOSSES == ["ppo_clip", "gspo", "gspo_token"]
    assert AGGREGATION_MODES == ("seq-mean-token-mean", "token-mean", "seq-mean-token-sum-norm")
    with pytest.raises(ValueError, match="valid names: ppo_clip, gspo, gspo_token"):
        get_policy_loss("ppo")


def test_aggregation_hand_computed():
    loss = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 99.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    # seq-mean-token-mean: mean(6/3, 4/1) = 3
    assert aggregate_loss(loss, mask, "seq-mean-token-mean").item() == pytest.approx(3.0)
    # token-mean: (1 + 2 + 3 + 4) / 4 = 2.5
    assert aggregate_loss(loss, mask, "token-mean").item() == pytest.approx(2.5)
    # seq-mean-token-sum-norm: 10 / (2 * 3) = 5/3; with max_len 5: 10 / 10 = 1
    assert aggregate_loss(loss, mask, "seq-mean-token-sum-norm").item() == pytest.approx(5 / 3)
    assert aggregate_loss(loss, mask, "seq-mean-token-sum-norm", max_len=5).item() == 1.0
    # an empty row does not count in seq-mean-token-mean: mean(6/3) = 2
    mask2 = torch.tensor([[1, 1, 1], [0, 0, 0]])
    assert aggregate_loss(loss, mask2, "seq-mean-token-mean").item() == pytest.approx(2.0)


def test_ppo_clip_hand_computed():
    # token 0: ratio e^0.5 = 1.6487 > 1.2 with A = +1: clipped -> -1.2
    # token 1: ratio e^-0.5 = 0.6065 < 0.8 with A = +1: unclipped min -> -0.6065
    # token 2: ratio 1, A = -2 -> 2;  loss (token-mean) = (-1.2 - 0.6065 + 2) / 3
    logp = torch.tensor([[0.5, -0.5, 0.0]])
    old = torch.zeros(1, 3)
    adv = torch.tensor([[1.0, 1.0, -2.0]])
    loss, m = get_policy_loss("ppo_clip")(
        logp, old, adv, torch.ones(1, 3), aggregation="token-mean"
    )
    expected = (-1.2 - math.exp(-0.5) + 2.0) / 3
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert m["clip_frac_high"] == pytest.approx(1 / 3)
    assert m["clip_frac_low"] == 0.0
    assert m["ratio_max"] == pytest.approx(math.exp(0.5))
    assert m["ratio_min"] == pytest.approx(math.exp(-0.5))


def test_clip_higher_changes_the_upper_bound():
    # ratio e^0.2 = 1.2214 with A = 1: clipped at 1.2 by default, inside DAPO's 1.28
    # ratio e^0.3 = 1.3499: clipped at 1.28 by clip-higher
    loss_fn = get_policy_loss("ppo_clip")
    one, zero = torch.ones(1, 1), torch.zeros(1, 1)
    assert loss_fn(torch.full((1, 1), 0.2), zero, one, one)[0].item() == pytest.approx(-1.2)
    high = loss_fn(torch.full((1, 1), 0.2), zero, one, one, eps_high=0.28)[0]
    assert high.item() == pytest.approx(-math.exp(0.2))
    high = loss_fn(torch.full((1, 1), 0.3), zero, one, one, eps_high=0.28)[0]
    assert high.item() == pytest.approx(-1.28)


def test_gspo_sequence_ratio_hand_computed():
    # sequence 0: log-ratios [0.0002, 0.0004] -> mean 0.0003 -> s = e^0.0003 = 1.0003 (inside 4e-4)
    # A = 1: loss_0 = -1.0003; sequence 1: mean log-ratio 0.001 -> s = 1.001 > 1.0004 -> -1.0004
    # seq-mean-token-mean: (-1.00030005 - 1.0004) / 2
    logp = torch.tensor([[0.0002, 0.0004], [0.001, 0.001]])
    loss, m = get_policy_loss("gspo")(logp, torch.zeros(2, 2), torch.ones(2, 2), torch.ones(2, 2))
    assert loss.item() == pytest.approx((-math.exp(0.0003) - 1.0004) / 2, rel=1e-7)
    assert m["clip_frac_high"] == pytest.approx(0.5)


def _analytic_ppo_grad(logp, old, adv, mask, el, eh, agg_weights):
    """d loss / d logp_t = -A rho w_t when the unclipped branch is active, else 0."""
    ratio = torch.exp(logp - old)
    unclipped = ratio * adv <= torch.clamp(ratio, 1 - el, 1 + eh) * adv
    return torch.where(unclipped & mask.bool(), -adv * ratio, 0.0) * agg_weights


@pytest.mark.parametrize("aggregation", AGGREGATION_MODES)
def test_ppo_clip_gradient_matches_analytic(aggregation):
    gen = torch.Generator().manual_seed(0)
    logp = (torch.randn(3, 5, generator=gen) * 0.3).double().requires_grad_()
    old = torch.zeros(3, 5, dtype=torch.float64)
    adv = torch.randn(3, 5, generator=gen).double()
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]]).double()
    loss, _ = get_policy_loss("ppo_clip")(logp, old, adv, mask, aggregation=aggregation)
    loss.backward()
    lengths = mask.sum(1, keepdim=True)
    weights = {
        "seq-mean-token-mean": mask / lengths / 3,
        "token-mean": mask / mask.sum(),
        "seq-mean-token-sum-norm": mask / (3 * 5),
    }[aggregation]
    expected = _analytic_ppo_grad(logp.detach(), old, adv, mask, 0.2, 0.2, weights)
    torch.testing.assert_close(logp.grad, expected)


def test_gspo_gradients_match_analytic():
    # gspo: loss = mean_i -s_i A_i (unclipped, tiny log-ratios), s_i = exp(mean_t lr_t)
    # d/dlogp_t = -A_i s_i / L_i / B;  gspo_token with per-token A: d/dlogp_t = -A_t s_i / L_i / B
    logp = torch.tensor([[1e-5, -1e-5, 2e-5], [0.0, 1e-5, 0.0]], dtype=torch.float64)
    old = torch.zeros_like(logp)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], dtype=torch.float64)
    adv = torch.tensor([[0.5, 0.5, 0.5], [-1.0, -1.0, -1.0]], dtype=torch.float64)
    lengths = mask.sum(1, keepdim=True)
    s = torch.exp(((logp - old) * mask).sum(1, keepdim=True) / lengths)
    for name, a in (("gspo", adv), ("gspo_token", adv * torch.tensor([[1.0, 2.0, 3.0]]))):
        x = logp.clone().requires_grad_()
        loss, _ = get_policy_loss(name)(x, old, a, mask)
        loss.backward()
        a_used = (a * mask).sum(1, keepdim=True) / lengths if name == "gspo" else a
        expected = -a_used * s / lengths / 2 * mask
        torch.testing.assert_close(x.grad, expected)


def test_kl_estimators_hand_computed():
    logp, ref = torch.tensor([[0.0]]), torch.tensor([[math.log(2.0)]])
    # log r = log 2: k1 = -log 2, k2 = 0.5 log^2 2, k3 = (2 - 1) - log 2
    assert kl_penalty(logp, ref, "k1").item() == pytest.approx(-math.log(2))
    assert kl_penalty(logp, ref, "k2").item() == pytest.approx(0.5 * math.log(2) ** 2)
    assert kl_penalty(logp, ref, "k3").item() == pytest.approx(1 - math.log(2))
    with pytest.raises(ValueError, match="valid names: k1, k2, k3"):
        kl_penalty(logp, ref, "k4")


def test_kl_term_enters_the_loss():
    # adv 0 -> surrogate 0; k3 with log r = log 2 is 1 - log 2; beta 0.5 -> 0.5 (1 - log 2)
    logp = torch.zeros(1, 1)
    loss, m = get_policy_loss("ppo_clip")(
        logp,
        logp,
        torch.zeros(1, 1),
        torch.ones(1, 1),
        ref_logp_BT=torch.full((1, 1), math.log(2.0)),
        beta=0.5,
    )
    assert loss.item() == pytest.approx(0.5 * (1 - math.log(2)))
    assert m["kl"] == pytest.approx(1 - math.log(2))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"old_logp_BT": torch.zeros(2, 2)}, "old_logp_BT has shape"),
        ({"mask_BT": torch.full((2, 3), 2.0)}, "only 0 and 1"),
        ({"eps_low": -0.1}, "eps_low must be"),
        ({"beta": 0.1}, "needs ref_logp_BT"),
        ({"aggregation": "sum"}, "unknown aggregation mode"),
        ({"max_len": 0}, "max_len must be"),
    ],
)
def test_loss_bad_input(kwargs, match):
    args = {
        "logp_BT": torch.zeros(2, 3),
        "old_logp_BT": torch.zeros(2, 3),
        "adv_BT": torch.zeros(2, 3),
        "mask_BT": torch.ones(2, 3),
    }
    for key in list(args):
        if key in kwargs:
            args[key] = kwargs.pop(key)
    with pytest.raises(ValueError, match=match):
        get_policy_loss("ppo_clip")(*args.values(), **kwargs)


def test_core_package_doctest():
    import doctest

    import botgrpo.core
    import botgrpo.core.returns

    assert doctest.testmod(botgrpo.core).failed == 0
    assert doctest.testmod(botgrpo.core.returns).failed == 0


@pytest.mark.parametrize("name", POLICY_LOSSES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_an_overflowing_ratio_gives_a_finite_loss_and_no_nan_gradient(name, dtype):
    """log rho of 94.5 (or 11.8 in fp16) overflows exp: clamped, as verl does."""
    gap = 95.0 if dtype == torch.float32 else 12.0
    mask = torch.ones(1, 3, dtype=torch.bool)
    for adv in (torch.tensor([[1.0, 0.5, 0.5]]), torch.zeros(1, 3), -torch.ones(1, 3)):
        logp = torch.tensor([[-0.5, -0.1, -0.2]], dtype=dtype, requires_grad=True)
        old = torch.tensor([[-0.5 - gap, -0.1, -0.2]], dtype=dtype)
        loss, metrics = get_policy_loss(name)(logp, old, adv.to(dtype), mask)
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(logp.grad).all(), (adv, logp.grad)
        assert math.isfinite(metrics["ratio_max"])


def test_old_logprobs_are_detached_on_policy():
    """old_logp_BT = logp_BT (on-policy, not detached by the caller): the gradient is the
    policy gradient, -A / n per token, not 0."""
    logp = torch.tensor([[-0.5, -0.1, -0.2]], requires_grad=True)
    loss, _ = get_policy_loss("ppo_clip")(
        logp, logp, torch.tensor([[1.0, -1.0, 0.5]]), torch.ones(1, 3, dtype=torch.bool)
    )
    loss.backward()
    assert logp.grad[0].tolist() == pytest.approx([-1 / 3, 1 / 3, -0.5 / 3])
