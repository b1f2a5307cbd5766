"""botgrpo's agent loop worker inside verl's real machinery: a local Ray instance, verl's
TransferQueue, verl's own postprocessing, then the trainer's advantage step on what it stored."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest
import torch
import verl

from botgrpo.core import get_advantage_estimator
from botgrpo.scoring import RewardSpec, score_completions
from botgrpo.tasks.arithmetic import make_arithmetic_token_reward

PROMPTS = ["2+3=", "4+4="]
RESPONSES = ["5", "5 ok", "x", "8", "80", "8 8"]  # three rollouts per prompt


@pytest.fixture(scope="module")
def verl_config(tiny_model_dir):
    from hydra import compose, initialize_config_dir

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(
            config_name="ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={tiny_model_dir}",
                "actor_rollout_ref.rollout.name=vllm",
                "actor_rollout_ref.rollout.n=3",
                "algorithm.adv_estimator=bot",
                "+algorithm.botgrpo.eps=1e-6",
                "+botgrpo.reward_funcs=[arithmetic_token_reward]",
                "+botgrpo.w_g=3.0",
                "+botgrpo.w_s=0.5",
                "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
            ],
        )


@pytest.fixture(scope="module")
def transfer_queue(verl_config):
    import ray
    import transfer_queue as tq
    from omegaconf import OmegaConf

    ray.init(num_cpus=4, include_dashboard=False)
    tq.init(OmegaConf.create({"backend": verl_config.transfer_queue.backend}))
    yield tq
    tq.close()
    ray.shutdown()


def _row(prompt: str, answer: str, uid: str, session: int) -> dict:
    return {
        "raw_prompt": [{"role": "user", "content": prompt}],
        "data_source": "botgrpo/arithmetic",
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {"split": "train", "index": 0, "answer": answer},
        "index": 0,
        "uid": uid,
        "session_id": session,
        "global_steps": 1,
    }


def test_worker_writes_token_rows_and_the_trainer_step_reads_them(verl_config, transfer_queue):
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    from botgrpo.verl.agent_loop import BoTAgentLoopManager, BoTAgentLoopWorkerImpl

    tq = transfer_queue
    BoTAgentLoopManager(verl_config, llm_client=None)  # the start check, in this process
    worker = BoTAgentLoopWorkerImpl(verl_config, None)
    tok = worker.tokenizer
    keys, rows = [], []
    for i, text in enumerate(RESPONSES):
        prompt = PROMPTS[i // 3]
        answer = str(sum(int(x) for x in prompt[:-1].split("+")))
        ids = [*tok(text).input_ids, tok.eos_token_id]
        output = AgentLoopOutput(
            prompt_ids=tok(prompt).input_ids,
            response_ids=ids,
            response_mask=[1] * len(ids),
            metrics=AgentLoopMetrics(),
        )
        row = _row(prompt, answer, f"uid{i // 3}", i % 3)
        asyncio.run(worker._agent_loop_postprocess(output, False, **row))
        keys.append(f"uid{i // 3}_{i % 3}_0")
        rows.append((prompt, text, ids, answer))

    # what the engine-neutral scoring (= the TRL path, see test_reward_hook) gives
    spec = RewardSpec([make_arithmetic_token_reward(tok)], w_g=3.0, w_s=0.5)
    tb = score_completions(
        spec,
        [[{"role": "user", "content": p}] for p, *_ in rows],
        [[{"role": "assistant", "content": t}] for _, t, *_ in rows],
        [ids for _, _, ids, _ in rows],
        {"answer": [a for *_, a in rows]},
    )

    # the trainer's advantage step, as PPOTrainer._compute_advantage reads the TransferQueue
    fields = ["uid", "response_mask", "rm_scores"]
    stored = tq.kv_batch_get(keys=keys, partition_id="train", select_fields=fields)
    data = DataProto(batch=stored.to_padded_tensor())
    data.batch["token_level_scores"] = data.batch["rm_scores"]
    data.non_tensor_batch["uid"] = np.array(data.batch.pop("uid").tolist(), dtype=object)
    data.batch["token_level_rewards"] = data.batch["token_level_scores"]
    width = data.batch["rm_scores"].shape[1]
    assert torch.equal(data.batch["rm_scores"], tb.rewards_BT[:, :width].float())
    assert data.batch["rm_scores"].unique().numel() > 3, "rows must vary token by token"

    data = compute_advantage_for_multi_trajectories(
        data,
        batch_keys=keys,
        adv_estimator=verl_config.algorithm.adv_estimator,
        config=verl_config.algorithm,
    )
    group_B = torch.tensor([0, 0, 0, 1, 1, 1])
    expected = get_advantage_estimator("bot")(
        tb.rewards_BT[:, :width].float(), tb.mask_BT[:, :width], group_B
    )
    assert torch.equal(data.batch["advantages"], expected)
    assert data.batch["advantages"].abs().sum() > 0
