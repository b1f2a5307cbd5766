"""Composition rules, the TokenReward type and the output validator."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from botgrpo.rewards.compose import (
    FormatBonusConfig,
    LineSignalConfig,
    RewardWeights,
    StepSignalConfig,
    check_dominance,
    clamp_local,
    decay,
    line_values,
    propagate_errors,
    step_values,
)
from botgrpo.rewards.types import TokenReward
from botgrpo.rewards.validate import validate_token_rewards

# ---------------------------------------------------------------------------------------------
# Decay, propagation, step and line values


def test_decay_matches_eq7():
    # phi(d) = max(0, 1 - d / (w + 1)), w = 3: 1, 0.75, 0.5, 0.25, 0, 0
    assert decay(np.arange(6), 3).tolist() == [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
    assert decay(np.array([-2, 2]), 1).tolist() == [0.0, 0.0]  # w = 1: 1 - 2/2 = 0
    assert decay(np.array([0, 1]), 0).tolist() == [1.0, 0.0]


def test_error_propagation_and_independent():
    assert propagate_errors([1, 1, -1, 1, -1, 0]) == [1, 1, -1, 0, 0, 0]
    assert propagate_errors([1, 0, 1]) == [1, 0, 1]
    assert propagate_errors([1, -1, 1], "independent") == [1, -1, 1]
    with pytest.raises(ValueError, match="propagation must be one of"):
        propagate_errors([1], "context")  # type: ignore[arg-type]


def test_step_values_eq8_without_window():
    # (1/|S|) * e_s with |S| = 4
    values = step_values([1, -1, 0, 1], StepSignalConfig(window=0))
    assert values.tolist() == [0.25, -0.25, 0.0, 0.25]


def test_step_values_window_spreads_errors_only():
    # w = 1: phi(1) = 0.5. Verdicts [1, -1, 0], |S| = 3.
    # step 0: (1 + 0.5 * -1) / 3 = 1/6; step 1: -1/3; step 2: (0 + 0.5 * -1) / 3 = -1/6
    values = step_values([1, -1, 0], StepSignalConfig(window=1))
    assert values == pytest.approx([1 / 6, -1 / 3, -1 / 6])
    # spread_positive: step 0: (1 - 0.5) / 3; step 1: (0.5 - 1) / 3; step 2: (0 - 0.5) / 3
    both = step_values([1, -1, 0], StepSignalConfig(window=1, spread_positive=True))
    assert both == pytest.approx([1 / 6, -1 / 6, -1 / 6])
    assert step_values([]).shape == (0,)


def test_line_values_merge_additively_and_normalise():
    # Lines 1 and 2 flagged, w = 3 over 4 lines:
    # line 1: -1 * 1 + -0.5 * 0.75 = -1.375; line 2: -1 * 0.75 + -0.5 = -1.25
    # line 3: -1 * 0.5 + -0.5 * 0.75 = -0.875; line 4: -1 * 0.25 + -0.5 * 0.5 = -0.5
    values = line_values({1: -1.0, 2: -0.5}, 4)
    assert values.tolist() == [-1.375, -1.25, -0.875, -0.5]
    halved = line_values({1: -1.0, 2: -0.5}, 4, LineSignalConfig(normalize=True))
    assert halved.tolist() == (values / 2).tolist()  # each penalty / |E| = / 2
    # A line past the end (syntax error at end of input) counts as the last line.
    assert line_values({9: -1.0}, 2, LineSignalConfig(window=1)).tolist() == [-0.5, -1.0]
    with pytest.raises(ValueError, match="line 1 must be finite"):
        line_values({1: float("nan")}, 2)


def test_clamp_and_dominance_rule():
    assert clamp_local(np.array([-3.0, 0.2, 2.0]), 1.5).tolist() == [-1.5, 0.2, 1.5]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_dominance(3.0, 0.5, 1.0)
        RewardWeights()  # the paper's 3.0 / 0.5 / B = 1: no warning
    with pytest.warns(UserWarning, match=r"w_g = 1.0 <= w_s \* B = 1.0 \* 1.0"):
        assert not check_dominance(1.0, 1.0, 1.0)
    with pytest.warns(UserWarning, match="w_g >> w_s"):
        RewardWeights(w_g=0.5, w_s=1.0)
    # no rule to check: refused, never answered True or warned about
    for args, says in (
        ((3.0, -0.5, 1.0), "w_s >= 0"),
        ((float("nan"), 0.5, 1.0), "w_g must be finite"),
        ((3.0, 0.5, 0.0), "bound > 0"),
    ):
        with pytest.raises(ValueError, match=says):
            check_dominance(*args)


def test_format_bonus():
    cfg = FormatBonusConfig()
    assert [cfg.bonus(v) for v in ("well_formed", "malformed", "missing")] == [0.2, -1.0, 0.0]
    with pytest.raises(ValueError, match="unknown format verdict"):
        cfg.bonus("ok")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: StepSignalConfig(propagation="context"), "propagation must be one of"),  # type: ignore[arg-type]
        (lambda: StepSignalConfig(window=-1), "window must be an integer >= 0"),
        (lambda: StepSignalConfig(bound=0.0), "bound must be finite and > 0"),
        (lambda: LineSignalConfig(bound=float("inf")), "bound must be finite"),
        (lambda: FormatBonusConfig(malformed=float("nan")), "malformed must be finite"),
        (lambda: RewardWeights(w_s=-1.0), "w_s >= 0"),
    ],
)
def test_configs_are_validated(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# ---------------------------------------------------------------------------------------------
# TokenReward


def test_token_reward_formula():
    tr = TokenReward(outcome=1.0, local=[0.5, -0.5, 0.0], format_bonus=0.2, steps=[0, 0, -1])
    # r_t = 3 * 1 + 0.2 + 0.5 * S_t
    assert tr.outcome_reward(3.0) == pytest.approx(3.2)
    assert tr.token_rewards(3.0, 0.5) == pytest.approx([3.45, 2.95, 3.2])
    assert tr.n_tokens == 3 and tr.steps.dtype == np.int64


def test_token_reward_is_read_only_and_picklable():
    local = np.array([0.1, 0.2])
    tr = TokenReward(0.0, local, info={"verdicts": [1]})
    local[0] = 9.0  # the reward holds its own copy
    assert tr.local[0] == 0.1
    with pytest.raises(ValueError, match="read-only"):
        tr.local[0] = 1.0
    back = pickle.loads(pickle.dumps(tr))
    assert back.local.tolist() == [0.1, 0.2] and back.info == {"verdicts": [1]}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"outcome": float("nan"), "local": [0.0]}, ValueError, "outcome must be finite"),
        ({"outcome": None, "local": [0.0]}, TypeError, "outcome must be a real number"),
        ({"outcome": True, "local": [0.0]}, TypeError, "outcome must be a real number"),
        ({"outcome": 0.0, "local": [0.0, float("inf")]}, ValueError, "token 1 is inf"),
        ({"outcome": 0.0, "local": [[0.0]]}, ValueError, r"must be 1-D \[n_tokens\]"),
        ({"outcome": 0.0, "local": ["a"]}, TypeError, "1-D array of numbers"),
        (
            {"outcome": 0.0, "local": [0.0], "format_bonus": float("-inf")},
            ValueError,
            "format_bonus",
        ),
        ({"outcome": 0.0, "local": [0.0, 0.0], "steps": [0]}, ValueError, "same length as local"),
        ({"outcome": 0.0, "local": [0.0], "steps": [-2]}, ValueError, "must be >= -1"),
        ({"outcome": 0.0, "local": [0.0], "steps": [0.5]}, TypeError, "must hold integers"),
        ({"outcome": 0.0, "local": [0.0], "info": [1]}, TypeError, "info must be a mapping"),
    ],
)
def test_token_reward_rejects_bad_values(kwargs, error, message):
    with pytest.raises(error, match=message):
        TokenReward(**kwargs)


def test_empty_token_reward():
    tr = TokenReward(0.0, [], steps=[])
    assert tr.n_tokens == 0 and tr.token_rewards(3.0, 0.5).shape == (0,)


# ---------------------------------------------------------------------------------------------
# validate_token_rewards


IDS = [[1, 2, 3], [4, 5]]


def test_validator_accepts_rewards_numbers_and_none():
    tr = TokenReward(1.0, [0.0, 0.0, 0.0])
    assert validate_token_rewards("f", [tr, None], IDS) == [tr, None]
    assert validate_token_rewards("f", [1, np.float32(0.5)], IDS) == [1.0, 0.5]
    assert validate_token_rewards("f", np.array([0.0, 1.0]), IDS) == [0.0, 1.0]


@pytest.mark.parametrize(
    ("outputs", "error", "message"),
    [
        ([1.0], ValueError, r"reward function 'f' returned 1 rewards for 2 completions"),
        (
            [TokenReward(0.0, [0.0, 0.0]), None],
            ValueError,
            r"'f', completion 0: TokenReward has 2 token values but the completion has 3 tokens",
        ),
        ([1.0, float("nan")], ValueError, r"'f', completion 1: reward is nan"),
        ([float("inf"), 1.0], ValueError, r"'f', completion 0: reward is inf"),
        ([1.0, "1"], TypeError, r"'f', completion 1: got str"),
        ([True, 1.0], TypeError, r"'f', completion 0: got bool"),
        (None, TypeError, r"'f' must return a list"),
        ("ab", TypeError, r"'f' must return a list"),
    ],
)
def test_validator_names_function_and_completion(outputs, error, message):
    with pytest.raises(error, match=message):
        validate_token_rewards("f", outputs, IDS)


# ---------------------------------------------------------------------------------------------
# Configs from plain mappings (YAML / JSON / CLI)


def test_config_from_mapping_builds_nested_configs():
    from botgrpo.rewards.configs import config_from_mapping
    from botgrpo.rewards.recipes.math import MathRewardConfig
    from botgrpo.rewards.recipes.python import PythonRewardConfig

    cfg = config_from_mapping(
        MathRewardConfig, {"steps": {"window": 0, "propagation": "independent"}, "name": "m"}
    )
    assert (cfg.steps.window, cfg.steps.propagation, cfg.name) == (0, "independent", "m")
    assert config_from_mapping(MathRewardConfig, None) == MathRewardConfig()
    assert config_from_mapping(MathRewardConfig, cfg) is cfg
    py = config_from_mapping(PythonRewardConfig, {"languages": ["py"], "lint": {"error": -0.2}})
    assert py.languages == ("py",) and py.lint.error == -0.2
    with pytest.raises(ValueError, match=r"MathRewardConfig: unknown option\(s\) \['windw'\]"):
        config_from_mapping(MathRewardConfig, {"windw": 3})
    with pytest.raises(ValueError, match="window must be an integer >= 0"):
        config_from_mapping(MathRewardConfig, {"steps": {"window": -1}})


def test_token_rewards_that_overflow_are_refused():
    reward = TokenReward(outcome=1.0, local=np.array([0.5, -0.5]))
    assert reward.token_rewards(3.0, 0.5).tolist() == [3.25, 2.75]
    with pytest.raises(ValueError, match="overflow float64"):
        reward.token_rewards(1.7e308, 1e308)
