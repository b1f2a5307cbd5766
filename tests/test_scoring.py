"""Engine-neutral scoring: calling reward functions directly gives the TRL adapter's rewards."""

from __future__ import annotations

import asyncio
import doctest
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import botgrpo.scoring.score
from botgrpo.rewards import TokenReward
from botgrpo.scoring import RewardSpec, ascore_completions, score_completions
from botgrpo.trl.reward_adapter import RewardBatch, adapt_reward_funcs
from botgrpo.trl.token_batch import build_token_batch

IDS = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
TEXTS = ["abc", "de", "fghi"]


def mixed(completion_ids, **columns):
    return [
        TokenReward(outcome=1.0, local=[0.5, -1.0, 0.0], format_bonus=0.2, steps=[0, 0, 1]),
        0.5,
        [1.0, 2.0, 3.0, 6.0],
    ]


def scalar(completions, answer, **columns):
    return [None, float(len(completions[1])), 1.0 / 3.0]


def stepped(completion_ids, **columns):
    rng = np.random.default_rng(0)
    return [TokenReward(outcome=0.1, local=rng.uniform(-1, 1, len(ids))) for ids in completion_ids]


FUNCS = [mixed, scalar, stepped]
WEIGHTS = [1.0, 0.7, 2.0]


def _through_trl_adapters() -> torch.Tensor:
    owner = SimpleNamespace(
        args=SimpleNamespace(w_g=3.0, w_s=0.5, local_bound=1.0), reward_batch=RewardBatch(IDS)
    )
    columns = []
    for adapter in adapt_reward_funcs(FUNCS, owner):
        out = adapter(prompts=["p"] * 3, completions=TEXTS, completion_ids=IDS, answer=["1"] * 3)
        columns.append([torch.nan if x is None else x for x in out])
    # TRL's reward matrix is float32 (torch.zeros(..., device) with the default dtype)
    matrix_BF = torch.tensor(columns, dtype=torch.float32).T
    weights_F = torch.tensor(WEIGHTS)
    names = [f.__name__ for f in FUNCS]
    return build_token_batch(owner.reward_batch, matrix_BF, weights_F, names, 4).rewards_BT


def test_direct_scoring_equals_the_trl_adapter_path():
    spec = RewardSpec(FUNCS, w_g=3.0, w_s=0.5, local_bound=1.0, weights=WEIGHTS)
    tb = score_completions(spec, ["p"] * 3, TEXTS, IDS, {"answer": ["1"] * 3})
    assert torch.equal(tb.rewards_BT, _through_trl_adapters())
    assert tb.steps_BT[0].tolist() == [0, 0, 1, -1]


def test_async_scoring_equals_sync_scoring():
    async def async_scalar(completions, answer, **columns):
        return scalar(completions, answer)

    async_scalar.__name__ = "scalar"
    sync = RewardSpec(FUNCS, w_g=3.0, w_s=0.5, weights=WEIGHTS)
    mixed_kinds = RewardSpec([mixed, async_scalar, stepped], w_g=3.0, w_s=0.5, weights=WEIGHTS)
    expected = score_completions(sync, ["p"] * 3, TEXTS, IDS, {"answer": ["1"] * 3})
    got = asyncio.run(ascore_completions(mixed_kinds, ["p"] * 3, TEXTS, IDS, {"answer": ["1"] * 3}))
    assert torch.equal(got.rewards_BT, expected.rewards_BT)
    with pytest.raises(TypeError, match=r"'scalar' is async; use ascore_completions"):
        score_completions(mixed_kinds, ["p"] * 3, TEXTS, IDS, {"answer": ["1"] * 3})


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"funcs": []}, ValueError, r"at least one reward function"),
        ({"funcs": [mixed, "accuracy"]}, TypeError, r"'accuracy' is not callable"),
        ({"funcs": [mixed], "weights": [1.0, 2.0]}, ValueError, r"2 reward weights for 1"),
    ],
)
def test_bad_specs_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        RewardSpec(**kwargs)


def test_a_failing_function_is_named():
    def broken(**columns):
        raise KeyError("answer")

    with pytest.raises(RuntimeError, match=r"reward function 'broken' raised KeyError"):
        score_completions(RewardSpec([broken]), ["p"], ["a"], [[1]])


def test_doctests():
    result = doctest.testmod(botgrpo.scoring.score)
    assert result.failed == 0 and result.attempted > 0
