"""botgrpo's estimators as verl calls them equal botgrpo.core (and the loop reference)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
import torch
import verl  # noqa: F401  (loads the plugin)
from omegaconf import OmegaConf
from tests.core_reference import bag_loop
from verl.trainer.ppo.core_algos import get_adv_estimator_fn
from verl.trainer.ppo.ray_trainer import compute_advantage

from botgrpo.core import get_advantage_estimator
from botgrpo.verl import estimators


@pytest.fixture(autouse=True)
def _token_rewards_written(monkeypatch):
    """As in a run with BoTAgentLoopManager (it marks the TaskRunner process)."""
    monkeypatch.setitem(estimators._HOOK_ACTIVE, "value", True)


def _batch(seed: int, groups: int = 5, k: int = 4, width: int = 23):
    """Random token rewards, ragged right-padded masks (some rows empty), uids shuffled."""
    gen = torch.Generator().manual_seed(seed)
    b = groups * k
    rewards_BT = torch.randn(b, width, generator=gen) * 2 + torch.randint(
        0, 3, (b, 1), generator=gen
    )
    lengths_B = torch.randint(0, width + 1, (b,), generator=gen)
    mask_BT = (torch.arange(width)[None, :] < lengths_B[:, None]).float()
    uids = np.array(
        [str(uuid.UUID(int=g + 1)) for g in range(groups) for _ in range(k)], dtype=object
    )
    perm = torch.randperm(b, generator=gen)
    return rewards_BT[perm], mask_BT[perm], uids[perm.numpy()]


def _dense(uids) -> torch.Tensor:
    first = {}
    return torch.tensor([first.setdefault(u, len(first)) for u in uids])


@pytest.mark.parametrize("name", ["bot", "bot_uniform"])
@pytest.mark.parametrize("seed", range(4))
def test_registered_estimator_equals_core(name, seed):
    rewards_BT, mask_BT, uids = _batch(seed)
    config = OmegaConf.create({"adv_estimator": name, "botgrpo": {"eps": 1e-4}})
    adv_BT, ret_BT = get_adv_estimator_fn(name)(
        token_level_rewards=rewards_BT, response_mask=mask_BT, config=config, index=uids
    )
    expected = get_advantage_estimator(name)(rewards_BT, mask_BT, _dense(uids), eps=1e-4)
    assert adv_BT.dtype == torch.float32 and adv_BT.shape == rewards_BT.shape
    assert torch.equal(adv_BT, expected) and torch.equal(ret_BT, adv_BT)
    reference = bag_loop(rewards_BT, mask_BT.bool(), _dense(uids), 1e-4, name == "bot_uniform")
    torch.testing.assert_close(adv_BT.double(), reference, rtol=1e-5, atol=1e-5)


def test_group_ids_follow_uids_not_row_order():
    rewards_BT, mask_BT, uids = _batch(7)
    config = OmegaConf.create({"adv_estimator": "bot"})
    fn = get_adv_estimator_fn("bot")
    adv = fn(token_level_rewards=rewards_BT, response_mask=mask_BT, config=config, index=uids)[0]
    perm = torch.randperm(len(uids), generator=torch.Generator().manual_seed(1))
    adv_perm = fn(
        token_level_rewards=rewards_BT[perm],
        response_mask=mask_BT[perm],
        config=config,
        index=uids[perm.numpy()],
    )[0]
    torch.testing.assert_close(adv_perm, adv[perm], rtol=0, atol=1e-6)


def test_verl_compute_advantage_routes_to_botgrpo():
    """verl's own compute_advantage (what the V1 trainer calls) reaches the registered function."""
    from verl import DataProto

    rewards_BT, mask_BT, uids = _batch(3)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards_BT, "response_mask": mask_BT},
        non_tensors={"uid": uids},
    )
    config = OmegaConf.create({"adv_estimator": "bot", "botgrpo": {"eps": 1e-6}})
    out = compute_advantage(data, adv_estimator="bot", config=config)
    expected = get_advantage_estimator("bot")(rewards_BT, mask_BT, _dense(uids))
    assert torch.equal(out.batch["advantages"], expected)


def test_estimator_options_reach_core():
    rewards_BT, mask_BT, uids = _batch(2)
    config = OmegaConf.create({"botgrpo": {"options": {"steps_BT": None}}})
    with pytest.raises(ValueError, match=r"unknown option\(s\) steps_BT for 'bot'"):
        get_adv_estimator_fn("bot")(
            token_level_rewards=rewards_BT, response_mask=mask_BT, config=config, index=uids
        )


def test_without_the_token_reward_hook_the_estimator_refuses(monkeypatch):
    monkeypatch.setitem(estimators._HOOK_ACTIVE, "value", False)
    rewards_BT, mask_BT, uids = _batch(0)
    fn = get_adv_estimator_fn("bot")
    with pytest.raises(
        RuntimeError,
        match=r"\+actor_rollout_ref\.rollout\.agent\.agent_loop_manager_class=botgrpo\.verl",
    ):
        fn(token_level_rewards=rewards_BT, response_mask=mask_BT, config=None, index=uids)
    # a user's own per-token agent loop opts out explicitly
    config = OmegaConf.create({"botgrpo": {"require_token_rewards": False}})
    fn(token_level_rewards=rewards_BT, response_mask=mask_BT, config=config, index=uids)


@pytest.mark.parametrize("name", ["pure", "grpo_process"])
def test_step_estimators_explain_what_verl_lacks(name):
    rewards_BT, mask_BT, uids = _batch(0)
    with pytest.raises(ValueError, match=r"reads step structure .* use bot or bot_uniform"):
        get_adv_estimator_fn(name)(
            token_level_rewards=rewards_BT, response_mask=mask_BT, config=None, index=uids
        )


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"eps": -1.0}, r"eps must be a finite number >= 0"),
        ({"options": [1]}, r"options must be a mapping"),
    ],
)
def test_bad_options_are_named(section, message):
    rewards_BT, mask_BT, uids = _batch(0)
    config = OmegaConf.create({"botgrpo": section})
    with pytest.raises(ValueError, match=message):
        get_adv_estimator_fn("bot")(
            token_level_rewards=rewards_BT, response_mask=mask_BT, config=config, index=uids
        )


def test_missing_uids_are_named():
    rewards_BT, mask_BT, _ = _batch(0)
    with pytest.raises(ValueError, match=r"needs group ids"):
        get_adv_estimator_fn("bot")(token_level_rewards=rewards_BT, response_mask=mask_BT)


def test_group_ids_read_a_tensor_of_uids_by_value():
    from botgrpo.verl.estimators import group_ids_from_index

    assert group_ids_from_index(torch.tensor([0, 0, 1, 1])).tolist() == [0, 0, 1, 1]
    assert group_ids_from_index(np.array([3, 3, 7], dtype=np.int64)).tolist() == [0, 0, 1]
