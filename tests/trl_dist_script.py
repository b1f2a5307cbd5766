"""Train BoT-GRPO for 2 steps on a fixed, deterministic batch; write what happened as JSON.

Run by tests/test_trl_distributed.py as one process and under ``torchrun --nproc_per_node 2``
(CPU, gloo).

- mode ``exact``: the global batch is the same in both runs (12 completions: 3 prompts x 4
  generations); with 2 processes each holds 6 rows, so the middle prompt's group is split across
  the processes. Writes every row's advantages and the logged loss.
- mode ``otb``: as ``exact`` with preset otb (group statistics of returns across the processes,
  and each process's own pass for the sampling policy's probabilities).
- mode ``otb-old-pass``: as ``otb`` with two iterations per generation (4 optimizer steps, 2
  rounds) and truncations masked, so the probabilities come from TRL's old-policy pass and each
  process scores its masked truncations again (padded to the same count on every process).
- mode ``dapo``: dynamic sampling with refills (only prompts with an odd first operand carry
  signal); writes, per process and step, the prompts of the batch the loss saw.

    python -m tests.trl_dist_script MODEL_DIR OUT_JSON [exact|otb|otb-old-pass|dapo]
"""

from __future__ import annotations

import gc
import json
import os
import sys
import warnings

from transformers import AutoTokenizer

from botgrpo.tasks.arithmetic import make_arithmetic_dataset
from botgrpo.trl import BoTGRPOConfig
from botgrpo.trl.teardown import end_training
from tests.trl_helpers import (
    RecordingTrainer,
    digit_share,
    make_fixed_rollout,
    make_stepped_reward,
    odd_prompts_only,
)

GLOBAL_BATCH = 12
NUM_GENERATIONS = 4
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", "1"))
COMMON = {
    "use_cpu": True,
    "ddp_backend": "gloo" if WORLD_SIZE > 1 else None,
    "bf16": False,
    "activation_checkpointing": False,
    "num_generations": NUM_GENERATIONS,
    "max_completion_length": 8,
    "max_steps": 2,
    "learning_rate": 1e-2,
    "logging_steps": 1,
    "save_strategy": "no",
    "report_to": "none",
    "seed": 0,
}


def main(model_dir: str, out_path: str, mode: str) -> None:
    warnings.simplefilter("ignore")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rollout = make_fixed_rollout(tokenizer, 8, NUM_GENERATIONS)
    if mode in ("exact", "otb", "otb-old-pass"):
        old_pass = (
            {"num_iterations": 2, "mask_truncated_completions": True, "max_steps": 4}
            if mode == "otb-old-pass"
            else {}
        )
        config = BoTGRPOConfig(
            output_dir=f"{out_path}.run",
            preset="bot" if mode == "exact" else "otb",
            loss_type="dapo",  # token-mean: a nonzero on-policy loss, unlike seq-mean-token-mean
            per_device_train_batch_size=GLOBAL_BATCH // WORLD_SIZE,
            **{**COMMON, **old_pass},
        )
        rewards = [make_stepped_reward(tokenizer), digit_share]
    else:
        config = BoTGRPOConfig(
            output_dir=f"{out_path}.run",
            preset="dapo",
            per_device_train_batch_size=8,
            dynamic_sampling_max_rounds=6,
            **COMMON,
        )
        rewards = [odd_prompts_only]
    trainer = RecordingTrainer(
        model=model_dir,
        reward_funcs=rewards,
        args=config,
        train_dataset=make_arithmetic_dataset(64),
        processing_class=tokenizer,
        rollout_func=rollout,
    )
    trainer.train()
    rows = _exact_rows(trainer) if mode != "dapo" else _loss_batches(trainer, tokenizer)
    acc = trainer.accelerator
    all_rows = acc.gather_for_metrics(rows, use_gather_object=True)
    if acc.is_main_process:
        logs = [h for h in trainer.state.log_history if "loss" in h]
        with open(out_path, "w") as f:
            json.dump({"world_size": acc.num_processes, "rows": all_rows, "logs": logs}, f)
    # main's return drops the trainer and gc.collect() below frees the process group while
    # Python is alive (botgrpo.trl.teardown says why)
    end_training(trainer)


def _exact_rows(trainer) -> list[dict]:
    rows = []
    for step, (output, _) in enumerate(trainer.rounds):
        b = output["advantages"].shape[0]
        for i in range(b):
            n = int(output["completion_mask"][i].sum())
            rows.append(
                {
                    "step": step,
                    "row": trainer.accelerator.process_index * b + i,
                    "completion": output["completion_ids"][i][:n].tolist(),
                    "advantages": output["advantages"][i][:n].tolist(),
                }
            )
    return rows


def _loss_batches(trainer, tokenizer) -> list[dict]:
    batches = []
    for step, inputs in enumerate(trainer.loss_inputs):
        prompts = [
            tokenizer.decode(ids[mask.bool()].tolist())
            for ids, mask in zip(inputs["prompt_ids"], inputs["prompt_mask"], strict=True)
        ]
        batches.append(
            {
                "process": trainer.accelerator.process_index,
                "step": step,
                "prompts": prompts,
                "signal_rows": int(inputs["advantages"].ne(0).any(1).sum()),
                "num_items_in_batch": int(inputs["num_items_in_batch"]),
            }
        )
    return batches


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "exact")
    gc.collect()
