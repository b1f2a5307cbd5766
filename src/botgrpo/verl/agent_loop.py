"""verl's agent loop worker and manager with botgrpo's per-token reward hook.

Set ``+actor_rollout_ref.rollout.agent.agent_loop_manager_class=
botgrpo.verl.agent_loop.BoTAgentLoopManager`` (verl loads it by qualified name). The manager is
built in the Ray TaskRunner, where verl also computes advantages, so it checks the run there
before any rollout (:func:`check_trainer_config`), then starts :data:`BoTAgentLoopWorker` actors:
verl's TransferQueue agent loop workers whose postprocessing scores every rollout with
:class:`~botgrpo.verl.reward_hook.TokenRewardHook` and writes its per-token ``rm_scores`` row.
"""

from __future__ import annotations

from typing import Any

import ray
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ

from botgrpo.verl.config import VerlRewardConfig
from botgrpo.verl.estimators import TOKEN_ESTIMATORS, mark_token_rewards_active, read_options
from botgrpo.verl.reward_hook import TokenRewardHook

_PLUGIN_FIX = (
    "install botgrpo with its verl extra in the environment of every Ray worker "
    "(pip install 'botgrpo[verl]') and leave VERL_USE_EXTERNAL_PLUGINS unset, 'auto', or a list "
    "that includes 'botgrpo'"
)


def check_trainer_config(config: Any) -> None:
    """Fail at trainer start, naming the fix, on a run the hook cannot serve.

    Checks: verl's V1 trainer is used; the estimator reads per-token rewards (verl's own
    estimators would read the row's sum as one score); botgrpo's plugin registered it in this
    process (verl hides plugin failures at DEBUG level); its options are the core estimator's;
    each prompt gets K >= 2 rollouts (``rollout.n``, 1 in verl's defaults); the ``botgrpo``
    section is valid and its reward functions import.
    """
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY

    if not config.trainer.get("use_v1", True):
        raise ValueError(
            "BoTAgentLoopManager serves verl's V1 trainer (TransferQueue agent loop): set "
            "trainer.use_v1=true"
        )
    name = str(config.algorithm.adv_estimator)
    if name not in TOKEN_ESTIMATORS:
        raise ValueError(
            f"BoTAgentLoopManager writes per-token rewards, but algorithm.adv_estimator={name!r} "
            f"reads one score per rollout; set algorithm.adv_estimator to one of "
            f"{', '.join(TOKEN_ESTIMATORS)}"
        )
    from botgrpo.verl import plugin

    registered = ADV_ESTIMATOR_REGISTRY.get(name)
    if registered is None or registered is not plugin.REGISTERED.get(name):
        cause = f" (it failed with: {plugin.LOAD_ERROR})" if plugin.LOAD_ERROR else ""
        raise RuntimeError(
            f"advantage estimator {name!r} is not botgrpo's in verl's registry: botgrpo's verl "
            f"plugin did not load in this process{cause}; {_PLUGIN_FIX}"
        )
    read_options(config.algorithm, name)
    n = config.actor_rollout_ref.rollout.get("n", 1)
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(
            f"actor_rollout_ref.rollout.n is {n!r}: BoT-GRPO pools the K rollouts of a prompt "
            "and compares each token with the bag, so one rollout per prompt gives every "
            "advantage 0; set actor_rollout_ref.rollout.n to K >= 2 (the paper: 8)"
        )
    VerlRewardConfig.from_trainer_config(config).check_functions()


class BoTAgentLoopWorkerImpl(AgentLoopWorkerTQ.__ray_actor_class__):
    """verl's TransferQueue agent loop worker; every rollout is scored by the token reward hook."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.token_reward_hook = TokenRewardHook.from_trainer_config(self.config, self.tokenizer)

    async def _agent_loop_postprocess(self, output, validate, **kwargs) -> None:
        """Score the output (replacing any score the agent loop set), then verl's own
        postprocessing writes it to the TransferQueue. A loop returning several outputs per
        rollout is refused (each would enter the group's bag as a rollout of its own)."""
        outputs = output if isinstance(output, list) else [output]
        if len(outputs) > 1:
            raise ValueError(
                f"the agent loop returned {len(outputs)} outputs for one rollout; BoT-GRPO's bag "
                "counts each output of a group as a rollout, so the earlier ones would skew its "
                "mean and std: return one output per rollout (verl's built-in loops do)"
            )
        if outputs:
            final = await self.token_reward_hook.score(outputs[-1], kwargs, validate)
            outputs = [*outputs[:-1], final]
        return await super()._agent_loop_postprocess(outputs, validate, **kwargs)


#: The Ray actor class the manager starts.
BoTAgentLoopWorker = ray.remote(BoTAgentLoopWorkerImpl)


class BoTAgentLoopManager(AgentLoopManagerTQ):
    """verl's TransferQueue agent loop manager with botgrpo's workers; checks the run first."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        check_trainer_config(config)
        super().__init__(config, *args, **kwargs)
        self.agent_loop_workers_class = BoTAgentLoopWorker
        mark_token_rewards_active()
