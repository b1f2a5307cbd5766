"""Masked positions cannot matter: NaN, inf or huge values under the mask change neither a loss,
nor its gradient, nor an advantage; a NaN at a kept position raises naming its tensor; the bag
estimators are scale-invariant up to float limits; an empty batch aggregates to 0."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from botgrpo.core import (
    AGGREGATION_MODES,
    POLICY_LOSSES,
    aggregate_loss,
    get_advantage_estimator,
    get_policy_loss,
)

GARBAGE = (math.nan, math.inf, -math.inf, 1e30, -1e30, 88.0)


@st.composite
def masked_batch(draw):
    """(seed, B, T, mask, garbage value) with at least one kept and one masked position."""
    b, t = draw(st.integers(1, 5)), draw(st.integers(2, 7))
    cells = draw(st.lists(st.booleans(), min_size=b * t, max_size=b * t))
    mask = torch.tensor(cells).reshape(b, t)
    mask[0, 0], mask[-1, -1] = True, False
    return draw(st.integers(0, 10_000)), mask, draw(st.sampled_from(GARBAGE))


def _loss_and_grad(name, logp, old, adv, ref, mask, aggregation):
    leaf = logp.clone().requires_grad_(True)
    loss, metrics = get_policy_loss(name)(
        leaf, old, adv, mask, aggregation=aggregation, ref_logp_BT=ref, beta=0.05
    )
    loss.backward()
    return loss.detach(), leaf.grad, metrics


@pytest.mark.parametrize("aggregation", AGGREGATION_MODES)
@pytest.mark.parametrize("name", POLICY_LOSSES)
@settings(max_examples=40, deadline=None)
@given(batch=masked_batch())
def test_garbage_under_the_mask_changes_no_loss_and_no_gradient(name, aggregation, batch):
    seed, mask, junk = batch
    gen = torch.Generator().manual_seed(seed)
    shape = mask.shape
    logp = -torch.rand(shape, generator=gen) * 3
    old = logp + 0.1 * torch.randn(shape, generator=gen)
    adv = torch.randn(shape, generator=gen)
    ref = logp + 0.1 * torch.randn(shape, generator=gen)

    def spoil(x):
        return torch.where(mask, x, torch.full_like(x, junk))

    clean = _loss_and_grad(name, logp, old, adv, ref, mask, aggregation)
    dirty = _loss_and_grad(name, spoil(logp), spoil(old), spoil(adv), spoil(ref), mask, aggregation)
    assert torch.isfinite(dirty[0]) and torch.isfinite(dirty[1]).all()
    torch.testing.assert_close(dirty[0], clean[0], rtol=0, atol=0)
    torch.testing.assert_close(dirty[1], clean[1], rtol=0, atol=0)
    assert (dirty[1][~mask] == 0).all()
    assert dirty[2] == clean[2]


@pytest.mark.parametrize("tensor", ["logp_BT", "old_logp_BT", "adv_BT", "ref_logp_BT"])
@pytest.mark.parametrize("name", POLICY_LOSSES)
def test_a_nan_at_a_kept_position_names_its_tensor(name, tensor):
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)
    values = {k: torch.zeros(2, 3) for k in ("logp_BT", "old_logp_BT", "adv_BT", "ref_logp_BT")}
    values[tensor][1, 0] = math.nan
    with pytest.raises(ValueError, match=rf"{tensor} contains NaN or inf .* rows \[1\]"):
        get_policy_loss(name)(
            values["logp_BT"],
            values["old_logp_BT"],
            values["adv_BT"],
            mask,
            ref_logp_BT=values["ref_logp_BT"],
            beta=0.1,
        )


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
@settings(max_examples=40, deadline=None)
@given(batch=masked_batch())
def test_aggregation_ignores_garbage_under_the_mask(mode, batch):
    seed, mask, junk = batch
    loss = torch.randn(mask.shape, generator=torch.Generator().manual_seed(seed))
    leaf = torch.where(mask, loss, torch.full_like(loss, junk)).requires_grad_(True)
    out = aggregate_loss(leaf, mask, mode)
    out.backward()
    assert out == aggregate_loss(loss, mask, mode)
    assert torch.isfinite(leaf.grad).all() and (leaf.grad[~mask] == 0).all()


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (0, 0)])
def test_an_empty_batch_aggregates_to_zero_in_every_mode(mode, shape):
    loss = torch.zeros(shape, requires_grad=True)
    out = aggregate_loss(loss, torch.zeros(shape), mode)
    assert out.item() == 0.0 and out.requires_grad
    out.backward()


def test_an_all_masked_batch_aggregates_to_zero_in_every_mode():
    for mode in AGGREGATION_MODES:
        assert aggregate_loss(torch.ones(2, 3), torch.zeros(2, 3), mode).item() == 0.0


@pytest.mark.parametrize("name", ["bot", "bot_uniform", "grpo", "dr_grpo", "rloo"])
@settings(max_examples=40, deadline=None)
@given(batch=masked_batch())
def test_estimators_ignore_garbage_under_the_mask(name, batch):
    seed, mask, junk = batch
    gen = torch.Generator().manual_seed(seed)
    rewards = torch.randn(mask.shape, generator=gen)
    group = torch.arange(mask.shape[0]) // 2
    dirty = torch.where(mask, rewards, torch.full_like(rewards, junk))
    estimator = get_advantage_estimator(name)
    torch.testing.assert_close(
        estimator(dirty, mask, group), estimator(rewards, mask, group), rtol=0, atol=0
    )


@pytest.mark.parametrize("name", ["bot", "bot_uniform", "grpo"])
@pytest.mark.parametrize("scale", [1e-20, 1e-6, 1e6, 1e19, 1e25, 1e30])
def test_the_normalised_estimators_are_scale_invariant(name, scale):
    gen = torch.Generator().manual_seed(0)
    rewards = torch.randn(8, 6, generator=gen, dtype=torch.float64).float()
    mask = torch.rand(8, 6, generator=gen) > 0.3
    mask[:, 0] = True
    group = torch.arange(8) // 4
    estimator = get_advantage_estimator(name)
    base = estimator(rewards, mask, group, eps=0.0)
    scaled = estimator(rewards * scale, mask, group, eps=0.0)
    assert base.abs().max() > 0.1, "the groups carry signal"
    torch.testing.assert_close(scaled, base, rtol=1e-4, atol=1e-5)
