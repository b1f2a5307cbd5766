"""The entry point: verl loads botgrpo's estimators in any process that imports verl, and the
trainer-start check names the fix when it did not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest
from omegaconf import OmegaConf

PROBE = (
    "import json, verl\n"
    "from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY as R\n"
    "print(json.dumps({k: v.__module__ for k, v in R.items()}))\n"
)


def _registry_in_fresh_process(**env: str) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_entry_point_is_declared():
    (ep,) = [ep for ep in entry_points(group="verl.plugins") if ep.name == "botgrpo"]
    assert ep.value == "botgrpo.verl.plugin"


def test_import_verl_alone_registers_botgrpo_estimators():
    registry = _registry_in_fresh_process(VERL_USE_EXTERNAL_PLUGINS="auto")
    for name in ("bot", "bot_uniform", "pure", "grpo_process"):
        assert registry[name] == "botgrpo.verl.estimators"
    assert registry["grpo"].startswith("verl.")  # verl's own stay verl's


def test_plugins_disabled_means_not_registered():
    registry = _registry_in_fresh_process(VERL_USE_EXTERNAL_PLUGINS="none")
    assert "bot" not in registry and "grpo" in registry


def _config(**overrides):
    base = {
        "trainer": {"use_v1": True},
        "actor_rollout_ref": {"rollout": {"n": 8}},
        "algorithm": {"adv_estimator": "bot"},
        "botgrpo": {"reward_funcs": ["arithmetic_token_reward"], "w_g": 3.0, "w_s": 0.5},
    }
    for key, value in overrides.items():
        *path, name = key.split("__")
        section = base
        for part in path:
            section = section[part]
        section[name] = value
    return OmegaConf.create(base)


def test_trainer_start_check_accepts_a_good_run():
    import verl  # noqa: F401  (loads the plugin)

    from botgrpo.verl.agent_loop import check_trainer_config

    check_trainer_config(_config())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"algorithm__adv_estimator": "grpo"}, r"adv_estimator='grpo' reads one score per rollout"),
        ({"trainer__use_v1": False}, r"set trainer\.use_v1=true"),
        ({"botgrpo__reward_funcs": []}, r"botgrpo\.reward_funcs is empty"),
        ({"botgrpo__w_gg": 1.0}, r"unknown key\(s\) w_gg"),
        (
            {"algorithm__botgrpo": {"epsilon": 1}},
            r"algorithm\.botgrpo has unknown key\(s\) epsilon",
        ),
        ({"actor_rollout_ref__rollout__n": 1}, r"rollout\.n is 1: .* set actor_rollout_ref"),
        (
            {"algorithm__botgrpo": {"options": {"eps": 1.0}}},
            r"options has unknown option\(s\) eps for 'bot' \(eps is algorithm\.botgrpo\.eps\)",
        ),
        ({"algorithm__botgrpo": {"options": {"foo": 1}}}, r"accepts none: leave options out"),
        (
            {"algorithm__botgrpo": {"require_token_rewards": "false"}},
            r"require_token_rewards must be true or false, got 'false'",
        ),
        (
            {"botgrpo__reward_funcs": ["math_step_rewrd"]},
            r"unknown reward function 'math_step_rewrd'",
        ),
        ({"botgrpo__reward_funcs": ["no_such_module:f"]}, r"cannot import 'no_such_module:f'"),
        ({"botgrpo__reward_funcs": {"a": 1}}, r"reward_funcs must be a list of names"),
        ({"botgrpo__reward_weights": [float("nan")]}, r"reward_weights must be finite numbers"),
        ({"botgrpo__reward_weights": ["abc"]}, r"reward_weights must be finite numbers"),
        ({"botgrpo__reward_weights": [1.0, 2.0]}, r"one weight per reward function \(1\)"),
        ({"botgrpo__w_g": float("inf")}, r"w_g and w_s must be finite"),
        (
            {"botgrpo__reward_func_kwargs": {"math_step_reward": {}}},
            r"reward_func_kwargs names math_step_reward, not in reward_funcs",
        ),
    ],
)
def test_trainer_start_check_names_the_fix(overrides, message):
    import verl  # noqa: F401

    from botgrpo.verl.agent_loop import check_trainer_config

    with pytest.raises((ValueError, RuntimeError), match=message):
        check_trainer_config(_config(**overrides))


def test_trainer_start_check_reports_a_plugin_that_did_not_load(monkeypatch):
    import verl  # noqa: F401
    from verl.trainer.ppo import core_algos

    from botgrpo.verl import plugin
    from botgrpo.verl.agent_loop import check_trainer_config

    monkeypatch.delitem(core_algos.ADV_ESTIMATOR_REGISTRY, "bot")
    monkeypatch.setattr(plugin, "LOAD_ERROR", RuntimeError("found verl 0.8.0"))
    with pytest.raises(
        RuntimeError, match=r"plugin did not load .*found verl 0\.8\.0.*pip install"
    ):
        check_trainer_config(_config())


def test_unsupported_verl_version_is_recorded_not_raised(monkeypatch):
    import verl

    from botgrpo.verl import plugin

    monkeypatch.setattr(verl, "__version__", "0.8.0")
    monkeypatch.setattr(plugin, "REGISTERED", {})
    monkeypatch.setattr(plugin, "LOAD_ERROR", None)
    plugin._load()  # what verl's loader runs: must not raise
    assert "found verl 0.8.0" in str(plugin.LOAD_ERROR)


def test_the_botgrpo_section_defaults_to_the_trl_configs_weights():
    """A verl run that names only its reward functions gets the paper's weights, as TRL does."""
    import dataclasses

    from botgrpo.trl.config import BoTGRPOConfig
    from botgrpo.verl.config import VerlRewardConfig

    trl = {f.name: f.default for f in dataclasses.fields(BoTGRPOConfig)}
    verl = VerlRewardConfig.from_mapping({"reward_funcs": ["math_step_reward"]})
    for name in ("w_g", "w_s", "local_bound"):
        assert getattr(verl, name) == trl[name], name
    assert (verl.w_g, verl.w_s, verl.local_bound) == (3.0, 0.5, 1.0)
