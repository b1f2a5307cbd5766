"""Reward adapters and token batches: how reward functions' answers become [B, T] token rewards,
and what bad answers do."""

from __future__ import annotations

import asyncio
import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from botgrpo.core import get_advantage_estimator
from botgrpo.rewards.types import TokenReward
from botgrpo.tasks.arithmetic import make_arithmetic_dataset
from botgrpo.trl import BoTGRPOTrainer
from botgrpo.trl.reward_adapter import (
    AsyncRewardAdapter,
    RewardAdapter,
    RewardBatch,
    adapt_reward_funcs,
    split_entries,
)
from botgrpo.trl.token_batch import build_token_batch, token_advantages

pytestmark = pytest.mark.usefixtures("torch_single_thread")

IDS = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]  # three completions of 3, 2 and 4 tokens


def _owner(**args):
    defaults = {"w_g": 3.0, "w_s": 0.5, "local_bound": 1.0}
    return SimpleNamespace(
        args=SimpleNamespace(**{**defaults, **args}), reward_batch=RewardBatch(IDS)
    )


def _call(func, owner=None, **kwargs):
    owner = owner or _owner()
    adapter = adapt_reward_funcs([func], owner)[0]
    texts = ["a" * len(ids) for ids in IDS]
    return adapter(prompts=["p"] * 3, completions=texts, completion_ids=IDS, **kwargs), owner


def test_split_of_each_entry_kind():
    def mixed(completion_ids, **kwargs):
        return [
            TokenReward(outcome=1.0, local=[0.5, -1.0, 0.0], format_bonus=0.2, steps=[0, 0, 1]),
            0.5,  # a scalar is an outcome
            [1.0, 2.0, 3.0, 6.0],  # per-token floats
        ]

    outcomes, owner = _call(mixed)
    # 3 * 1 + 0.2;  3 * 0.5;  mean(1, 2, 3, 6) = 3
    assert outcomes == pytest.approx([3.2, 1.5, 3.0])
    local = owner.reward_batch.local[0]
    assert local[0].tolist() == [0.25, -0.5, 0.0]  # w_s * S
    assert local[1] is None
    assert local[2].tolist() == [-2.0, -1.0, 0.0, 3.0]  # x - mean: outcome + local == x
    assert owner.reward_batch.steps[0][0].tolist() == [0, 0, 1]


def test_none_passes_through_as_trl_not_applicable():
    outcomes, owner = _call(lambda completions, **kw: [None, 1.0, None])
    assert outcomes == [None, 3.0, None]
    assert owner.reward_batch.local == {}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            [TokenReward(outcome=1.0, local=[0.0, 0.0])] * 3,
            r"'bad' returned 2 token rewards for completion 0 .* has 3 tokens",
        ),
        ([1.0, 2.0], r"'bad' returned 2 entries for 3 completions"),
        ([1.0, math.nan, 0.0], r"'bad' returned nan for completion 1 "),
        (
            [1.0, [0.0, math.inf], 0.0],
            r"'bad' returned a non-finite token reward \(inf\) at token 1 of completion 1",
        ),
        ([1.0, 2.0, "x"], r"'bad' returned str for completion 2"),
        ([1.0, 2.0, [[1.0]]], r"'bad' returned list for completion 2"),
        (None, r"'bad' returned NoneType; expected a list"),
        ([1.0, True, 0.0], r"'bad' returned a bool for completion 1"),
        (
            [1.0, 1.0, TokenReward(outcome=0.0, local=[0.0, 0.0, 2.0, 0.0])],
            r"'bad' returned local signal 2.0 at token 2 of completion 2 .* local_bound=1.0",
        ),
    ],
)
def test_bad_answers_name_function_and_completion(answer, message):
    def bad(completions, **kwargs):
        return answer

    with pytest.raises((ValueError, TypeError), match=message):
        _call(bad)


def test_exception_inside_function_is_located_to_one_completion():
    def bad(completions, completion_ids, **kwargs):
        # the reward toolkit's own check fires on the third completion
        return [
            TokenReward(outcome=1.0, local=[math.nan if len(c) == 4 else 0.0] * len(c))
            for c in completions
        ]

    with pytest.raises(
        RuntimeError,
        match=r"'bad' raised ValueError on completion 2 of this process's batch \(global index 2\)",
    ):
        _call(bad)


def test_exception_on_the_whole_batch_only():
    def bad(completions, **kwargs):
        if len(completions) > 1:
            raise KeyError("needs a batch of one")
        return [1.0]

    with pytest.raises(
        RuntimeError,
        match=r"'bad' raised KeyError on this process's batch of 3 completions \(on no single",
    ):
        _call(bad)


def test_a_functions_own_bound_overrides_the_config():
    def wide(completions, **kwargs):
        return [None, None, TokenReward(outcome=0.0, local=[2.0, 0, 0, 0])]

    wide.local_bound = 2.0  # as the built-in recipes declare their bound
    _, owner = _call(wide)  # the config's local_bound is 1.0
    assert owner.reward_batch.local[0][2][0] == 1.0  # w_s * 2.0
    wide.local_bound = 1.5
    with pytest.raises(ValueError, match=r"local_bound=1\.5"):
        _call(wide)


def test_local_bound_inf_disables_the_check():
    _, owner = _call(
        lambda completions, **kw: [None, None, TokenReward(outcome=0.0, local=[5.0, 0, 0, 0])],
        owner=_owner(local_bound=math.inf),
    )
    assert owner.reward_batch.local[0][2][0] == 2.5


def test_async_functions_are_adapted_and_awaited():
    async def scorer(completions, **kwargs):
        return [TokenReward(outcome=1.0, local=[0.0] * len(ids)) for ids in IDS]

    owner = _owner()
    (adapter,) = adapt_reward_funcs([scorer], owner)
    assert isinstance(adapter, AsyncRewardAdapter) and adapter.__name__ == "scorer"
    out = asyncio.run(adapter(prompts=["p"] * 3, completions=["a"] * 3, completion_ids=IDS))
    assert out == [3.0, 3.0, 3.0]


def test_async_failures_are_located_too():
    async def scorer(completions, **kwargs):
        if any(len(c) == 2 for c in completions):
            raise ZeroDivisionError("boom")
        return [1.0] * len(completions)

    (adapter,) = adapt_reward_funcs([scorer], _owner())
    call = adapter(prompts=["p"] * 3, completions=["aaa", "aa", "aaaa"], completion_ids=IDS)
    with pytest.raises(RuntimeError, match=r"'scorer' raised ZeroDivisionError on completion 1 "):
        asyncio.run(call)


def test_reward_models_and_names_pass_through():
    model = torch.nn.Linear(1, 1)
    adapted = adapt_reward_funcs(["some/reward-model", model, len], _owner())
    assert adapted[0] == "some/reward-model" and adapted[1] is model
    assert isinstance(adapted[2], RewardAdapter) and adapted[2].__name__ == "len"


def test_token_batch_aligns_with_right_padded_completions():
    batch = RewardBatch(IDS)
    split_entries(
        "f",
        [TokenReward(outcome=1.0, local=[1, 0, -1]), None, [1.0, 1.0, 1.0, 5.0]],
        batch,
        0,
        2.0,
        0.5,
        1.0,
    )
    split_entries(
        "g",
        [TokenReward(outcome=0.0, local=[1, 1, 1], steps=[0, 0, 1]), None, None],
        batch,
        1,
        2.0,
        0.5,
        1.0,
    )
    rewards_per_func = torch.tensor([[2.0, 0.0], [math.nan, math.nan], [2.0, math.nan]])
    tb = build_token_batch(batch, rewards_per_func, torch.tensor([1.0, 2.0]), ["f", "g"], width=5)
    assert tb.outcome_B.tolist() == [2.0, 0.0, 2.0]
    assert tb.mask_BT.int().tolist() == [[1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 0]]
    # row 0: f's 0.5 * [1, 0, -1] with weight 1 plus g's 0.5 * [1, 1, 1] with weight 2
    assert tb.local_BT[0].tolist() == [1.5, 1.0, 0.5, 0.0, 0.0]
    assert tb.local_BT[2].tolist() == [-1.0, -1.0, -1.0, 3.0, 0.0]
    assert tb.rewards_BT[2].tolist() == [1.0, 1.0, 1.0, 5.0, 0.0]
    assert tb.steps_BT.tolist() == [[0, 0, 1, -1, -1], [-1] * 5, [-1] * 5]


def test_conflicting_steps_are_an_error():
    batch = RewardBatch(IDS[:1])
    split_entries(
        "f", [TokenReward(outcome=0.0, local=[0, 0, 0], steps=[0, 0, 0])], batch, 0, 1.0, 1.0, 1.0
    )
    split_entries(
        "g", [TokenReward(outcome=0.0, local=[0, 0, 0], steps=[0, 1, 1])], batch, 1, 1.0, 1.0, 1.0
    )
    with pytest.raises(
        ValueError, match="'f' and 'g' give different step indices for completion 0"
    ):
        build_token_batch(batch, torch.zeros(1, 2), torch.ones(2), ["f", "g"], width=3)


def _two_group_batch():
    ids = [[1, 2], [1, 2, 3], [4], [4, 5, 6]]
    batch = RewardBatch(ids)
    locals_ = [[1.0, -1.0], [0.0, 0.0, 1.0], [-1.0], [1.0, 1.0, 1.0]]
    entries = [
        TokenReward(outcome=o, local=loc, steps=[0] * len(loc))
        for o, loc in zip([1, 0, 1, 1], locals_, strict=True)
    ]
    outcomes = split_entries("f", entries, batch, 0, 2.0, 0.5, 1.0)
    tb = build_token_batch(batch, torch.tensor(outcomes)[:, None], torch.ones(1), ["f"], width=3)
    return tb, torch.tensor([0, 0, 1, 1])


def test_outcome_estimators_see_only_the_outcome():
    tb, group = _two_group_batch()
    adv = token_advantages("grpo", tb, group, eps=1e-6)
    # group 0: outcomes 2 and 0 -> (2 - 1) / (1 + eps) = +1 / -1 on every token; group 1: equal
    # outcomes -> 0, although the local signals differ
    assert adv[0, :2].tolist() == pytest.approx([1.0, 1.0], abs=1e-5)
    assert adv[1].tolist() == pytest.approx([-1.0] * 3, abs=1e-5)
    assert not adv[2:].any()


def test_bot_sees_token_rewards_and_pure_sees_steps_plus_outcome():
    tb, group = _two_group_batch()
    bot = token_advantages("bot", tb, group, eps=1e-6)
    expected = get_advantage_estimator("bot")(
        tb.outcome_B[:, None] + tb.local_BT, tb.mask_BT, group
    )
    torch.testing.assert_close(bot, expected)
    assert bot[2:].any(), "equal outcomes, different local signals: BoT still has signal"
    pure = token_advantages("pure", tb, group, eps=1e-6)
    expected = get_advantage_estimator("pure")(
        tb.local_BT, tb.mask_BT, group, steps_BT=tb.steps_BT, outcome_B=tb.outcome_B
    )
    torch.testing.assert_close(pure, expected)


def test_trainer_surfaces_bad_token_rewards(tiny_model_dir, tiny_tokenizer, cpu_config):
    def short_by_one(completion_ids, **kwargs):
        return [
            TokenReward(outcome=0.0, local=np.zeros(max(len(ids) - 1, 0))) for ids in completion_ids
        ]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = BoTGRPOTrainer(
            model=str(tiny_model_dir),
            reward_funcs=[short_by_one],
            args=cpu_config(max_steps=1),
            train_dataset=make_arithmetic_dataset(16),
            processing_class=tiny_tokenizer,
        )
    with pytest.raises(
        ValueError, match=r"'short_by_one' returned \d+ token rewards for completion 0 "
    ):
        trainer.train()


def test_trainer_rejects_a_plain_grpo_config(tiny_model_dir):
    from trl import GRPOConfig

    config = GRPOConfig(output_dir="unused", use_cpu=True, bf16=False, report_to="none")
    with pytest.raises(
        TypeError, match=r"needs a botgrpo\.trl\.BoTGRPOConfig, got trl\.GRPOConfig"
    ):
        BoTGRPOTrainer(model=str(tiny_model_dir), reward_funcs=[len], args=config)
