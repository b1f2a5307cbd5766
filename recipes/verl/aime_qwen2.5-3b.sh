#!/usr/bin/env bash
# The BoT-GRPO paper's AIME setup (arXiv 2610.09804, Sec. 4, recipe 1) on verl, the shell form
# verl users run. The same run as recipes/aime_qwen2.5-3b.yaml (TRL): Qwen2.5-3B-Instruct,
# K = 8 rollouts per prompt, 8 prompts per step (64 generations per optimizer step),
# r_t = w_g * 1[answer correct] + w_s * step signal + b_format with w_g = 3.0, w_s = 0.5, B = 1,
# error propagation (math_step_reward's default), AIME 1983-2024 with a seeded 80/20 split,
# GRPO's loss otherwise (clip 0.2, KL loss 0.04 with the k3 estimator, per-sequence token mean).
#
# Needs a GPU environment with verl's rollout (vLLM) and the model hub; see docs/verl.md:
#   bash recipes/verl/aime_qwen2.5-3b.sh [extra Hydra overrides]
set -euo pipefail
PYTHON=${PYTHON:-python}
DATA=${DATA:-$HOME/data/aime_1983_2024}
GPUS=${GPUS:-1}

if [ ! -f "$DATA/train.parquet" ]; then
  "$PYTHON" -m botgrpo.verl.data hf "$DATA" --dataset di-zhang-fdu/AIME_1983_2024 \
    --question-column Question --answer-column Answer --eval-fraction 0.2 --seed 0 \
    --template "Solve the problem step by step. Write each step as <step i> ... </step i> (i = 1, 2, ...) and the final answer as <final> ... </final>.

Problem: {Question}"
fi

"$PYTHON" -m verl.trainer.main_ppo \
  algorithm.adv_estimator=bot \
  +algorithm.botgrpo.eps=1e-6 \
  algorithm.use_kl_in_reward=false \
  +actor_rollout_ref.rollout.agent.agent_loop_manager_class=botgrpo.verl.agent_loop.BoTAgentLoopManager \
  +botgrpo.reward_funcs='[math_step_reward]' \
  +botgrpo.w_g=3.0 +botgrpo.w_s=0.5 +botgrpo.local_bound=1.0 \
  data.train_files="$DATA/train.parquet" \
  data.val_files="$DATA/test.parquet" \
  data.train_batch_size=8 \
  data.max_prompt_length=512 \
  data.max_response_length=1024 \
  actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct \
  actor_rollout_ref.model.enable_gradient_checkpointing=true \
  actor_rollout_ref.actor.optim.lr=1e-6 \
  actor_rollout_ref.actor.ppo_mini_batch_size=8 \
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \
  actor_rollout_ref.actor.ppo_epochs=1 \
  actor_rollout_ref.actor.clip_ratio=0.2 \
  actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean \
  actor_rollout_ref.actor.use_kl_loss=true \
  actor_rollout_ref.actor.kl_loss_coef=0.04 \
  actor_rollout_ref.actor.kl_loss_type=low_var_kl \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.temperature=1.0 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.5 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 \
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16 \
  trainer.n_gpus_per_node="$GPUS" \
  trainer.nnodes=1 \
  trainer.total_training_steps=200 \
  trainer.test_freq=25 \
  trainer.save_freq=50 \
  trainer.logger='[console,tensorboard]' \
  trainer.project_name=botgrpo \
  trainer.experiment_name=aime-qwen2.5-3b-bot \
  "$@"
