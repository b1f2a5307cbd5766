"""BoTGRPOConfig: presets set TRL's knobs per the papers, explicit options win with a warning,
bad names list the valid ones. Also runs the doctests of the trainer-side modules."""

from __future__ import annotations

import doctest
import importlib
import warnings

import pytest

from botgrpo.core import ADVANTAGE_ESTIMATORS
from botgrpo.trl import PRESETS, BoTGRPOConfig
from botgrpo.trl.presets import PRESET_KNOBS, TRL_DEFAULTS

CPU = {"output_dir": "unused", "use_cpu": True, "bf16": False, "report_to": "none"}


def _config(**kwargs) -> BoTGRPOConfig:
    return BoTGRPOConfig(**CPU, **kwargs)


# What each paper says, as the config must read (docs/trainer/presets.md has the sources).
PAPER = {
    "grpo": {
        "advantage_estimator": "grpo",
        "loss_type": "grpo",
        "epsilon": 0.2,
        "beta": 0.04,
        "scale_rewards": "group",
    },
    "dr_grpo": {
        "advantage_estimator": "dr_grpo",
        "loss_type": "dr_grpo",
        "scale_rewards": "none",
        "beta": 0.0,
    },
    "dapo": {
        "loss_type": "dapo",
        "epsilon": 0.2,
        "epsilon_high": 0.28,
        "dynamic_sampling": True,
        "beta": 0.0,
    },
    "gspo": {
        "importance_sampling_level": "sequence",
        "epsilon": 3e-4,
        "epsilon_high": 4e-4,
        "loss_type": "grpo",
        "beta": 0.0,
    },
    "pure": {"advantage_estimator": "pure", "loss_type": "grpo", "beta": 0.001},
    "bot": {"advantage_estimator": "bot", "loss_type": "grpo", "epsilon": 0.2, "beta": 0.04},
    "bot_uniform": {"advantage_estimator": "bot_uniform", "loss_type": "grpo"},
    "reinforce_pp": {"advantage_estimator": "reinforce_pp", "loss_type": "dapo", "epsilon": 0.2},
    "otb": {"advantage_estimator": "otb", "loss_type": "dapo", "epsilon": 0.2, "beta": 0.0},
    "ppo": {"advantage_estimator": "gae", "loss_type": "dapo", "epsilon": 0.2},
}


@pytest.mark.parametrize("preset", list(PRESETS))
def test_preset_sets_the_papers_knobs(preset):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a preset alone never warns
        config = _config(preset=preset)
    for knob, value in PAPER[preset].items():
        assert getattr(config, knob) == value, knob
    row = PRESETS[preset]
    assert all(getattr(config, knob) == getattr(row, knob) for knob in PRESET_KNOBS)


def test_every_registered_estimator_is_accepted():
    for name in ADVANTAGE_ESTIMATORS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert _config(advantage_estimator=name).advantage_estimator == name


def test_default_is_bot_and_no_preset_means_trl_defaults():
    assert _config().preset == "bot" and _config().advantage_estimator == "bot"
    plain = _config(preset=None)
    assert all(getattr(plain, k) == v for k, v in TRL_DEFAULTS.items())
    assert _config(preset="none").preset is None


@pytest.mark.parametrize(("preset", "estimator"), [("bot", None), (None, "bot"), ("pure", None)])
def test_scale_rewards_for_an_estimator_that_ignores_it_is_said_to_have_no_effect(
    preset, estimator
):
    """A TRL user's scale_rewards="none" does not reach the bag estimator: no warning may say
    that it wins."""
    kwargs = {"advantage_estimator": estimator} if estimator else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _config(preset=preset, scale_rewards="none", **kwargs)
    texts = [str(w.message) for w in caught]
    assert any("scale_rewards='none' has no effect" in t for t in texts), texts
    assert not any("'none' wins" in t for t in texts), texts


def test_explicit_option_wins_and_the_warning_says_so():
    with pytest.warns(
        UserWarning,
        match=r"preset 'dapo' sets beta=0.0 but beta=0.01 was given explicitly; the explicit value 0.01 wins",
    ):
        config = _config(preset="dapo", beta=0.01)
    assert config.beta == 0.01 and config.epsilon_high == 0.28
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert _config(preset="dapo", beta=0.0).beta == 0.0  # agreeing with the preset: silent
    with pytest.warns(UserWarning, match="scale_rewards"):
        assert _config(preset="grpo", scale_rewards=False).scale_rewards == "none"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"preset": "trpo"},
            "unknown preset 'trpo'; valid presets: grpo, dr_grpo, dapo, gspo, pure, bot, reinforce_pp, otb, ppo, bot_uniform",
        ),
        (
            {"preset": None, "advantage_estimator": "vanilla"},
            "unknown advantage estimator 'vanilla'; valid names: bot, ",
        ),
        (
            {
                "preset": None,
                "advantage_estimator": "pure",
                "advantage_options": {"scale": "group"},
            },
            r"advantage_options \['scale'\] are not options of estimator 'pure'; it accepts: steps_BT, outcome_B, form, temperature",
        ),
        ({"advantage_options": "{not json"}, "advantage_options must be a JSON object"),
        (
            {"preset": "otb", "advantage_options": {"sum_pi_sq_BT": [[0.5]]}},
            r"advantage_options \['sum_pi_sq_BT'\] are per-batch tensors, not settings",
        ),
        (
            {"preset": "otb", "dynamic_sampling": True},
            "dynamic_sampling does not combine with advantage estimator 'otb'",
        ),
        ({"w_g": 0.0}, "w_g must be a finite number > 0"),
        ({"w_s": -1.0}, "w_s must be a finite number >= 0"),
        ({"local_bound": 0.0}, "local_bound must be > 0"),
        ({"dynamic_sampling_max_rounds": 0}, "dynamic_sampling_max_rounds must be >= 1"),
        (
            {"multi_objective_aggregation": "normalize_then_sum"},
            "supports multi_objective_aggregation='sum_then_normalize' only",
        ),
    ],
)
def test_bad_options_are_clear_errors(kwargs, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=message):
            _config(**kwargs)


def test_local_signal_that_could_dominate_warns():
    with pytest.warns(UserWarning, match=r"w_s \* local_bound = 4 >= w_g = 3"):
        _config(w_s=2.0, local_bound=2.0)


def test_each_option_is_documented_once_in_the_class_docstring():
    doc = BoTGRPOConfig.__doc__
    for name in (
        "preset",
        "advantage_estimator",
        "w_g",
        "w_s",
        "local_bound",
        "dynamic_sampling",
        *PRESET_KNOBS,
    ):
        assert doc.count(f"        {name}: ") == 1, name


@pytest.mark.parametrize(
    "module",
    [
        "botgrpo.tiny",
        "botgrpo.trl",
        "botgrpo.trl.presets",
        "botgrpo.tasks.arithmetic",
        "botgrpo.trl.dynamic_sampling",
    ],
)
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
