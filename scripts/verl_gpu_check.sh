#!/usr/bin/env bash
# A few real verl PPO steps with BoT-GRPO (adv_estimator=bot, per-token rewards from botgrpo's
# token reward hook) on a tiny local model: no download, one GPU, a couple of minutes.
#
#   bash scripts/verl_gpu_check.sh                 # needs a GPU environment (below)
#   DEVICE=cpu bash scripts/verl_gpu_check.sh      # verl 0.9.1 has no CPU path: fails (docs/verl.md)
#
# GPU environment (verl's rollout needs vLLM, whose wheels pin torch 2.11, so not .venv-verl):
#   python3.11 -m venv .venv-verl-gpu
#   .venv-verl-gpu/bin/pip install 'verl[vllm]==0.9.1'     # torch 2.11 + vLLM 0.24 (CUDA)
#   .venv-verl-gpu/bin/pip install -e '.[verl]'
#   PYTHON=.venv-verl-gpu/bin/python bash scripts/verl_gpu_check.sh
# Success: STEPS training steps logged with actor/pg_loss and critic/advantages/* (bot), then
# the script greps the log for them and exits 0.
#
# Environment: PYTHON (default .venv-verl/bin/python, which must have vLLM for verl's rollout),
# WORK (scratch folder, default a fresh temporary one), STEPS (default 3), DEVICE (cuda or cpu),
# RAY_CPUS (logical CPUs Ray may schedule; default 16, so the ~10 actors fit on a small machine).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv-verl/bin/python}
WORK=${WORK:-$(mktemp -d)}
STEPS=${STEPS:-3}
DEVICE=${DEVICE:-cuda}
RAY_CPUS=${RAY_CPUS:-16}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false

"$PYTHON" -m botgrpo.verl.data arithmetic "$WORK/data" --size 64
# head dim 64: vLLM's attention kernels take a few head sizes only
"$PYTHON" -c "from botgrpo.tiny import TinyModelSpec, build_tiny_model; build_tiny_model('$WORK/model', spec=TinyModelSpec(hidden=128, heads=2, kv_heads=1, intermediate=256))"

"$PYTHON" -m verl.trainer.main_ppo \
  algorithm.adv_estimator=bot \
  algorithm.use_kl_in_reward=false \
  data.train_files="$WORK/data/train.parquet" \
  data.val_files="$WORK/data/test.parquet" \
  data.train_batch_size=8 \
  data.max_prompt_length=32 \
  data.max_response_length=16 \
  actor_rollout_ref.model.path="$WORK/model" \
  actor_rollout_ref.model.use_remove_padding=false \
  actor_rollout_ref.actor.optim.lr=1e-3 \
  actor_rollout_ref.actor.ppo_mini_batch_size=8 \
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \
  actor_rollout_ref.actor.use_kl_loss=false \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.n=4 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.3 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
  actor_rollout_ref.rollout.agent.num_workers=1 \
  +actor_rollout_ref.rollout.agent.agent_loop_manager_class=botgrpo.verl.agent_loop.BoTAgentLoopManager \
  +botgrpo.reward_funcs='[arithmetic_token_reward]' \
  +botgrpo.w_g=3.0 +botgrpo.w_s=0.5 +botgrpo.local_bound=1.0 \
  reward.num_workers=1 \
  transfer_queue.backend.SimpleStorage.num_data_storage_units=1 \
  ray_kwargs.ray_init.num_cpus="$RAY_CPUS" ${EXTRA_OVERRIDES:-} \
  trainer.device="$DEVICE" \
  trainer.n_gpus_per_node=1 \
  trainer.nnodes=1 \
  trainer.total_training_steps="$STEPS" \
  trainer.val_before_train=false \
  trainer.test_freq=-1 \
  trainer.save_freq=-1 \
  trainer.logger='[console]' \
  trainer.project_name=botgrpo-verl-check \
  trainer.experiment_name=tiny-bot \
  trainer.default_local_dir="$WORK/ckpt" \
  hydra.run.dir="$WORK/hydra" \
  2>&1 | tee "$WORK/train.log"
echo "log: $WORK/train.log"
grep -q "critic/advantages/max" "$WORK/train.log" && grep -q "actor/pg_loss" "$WORK/train.log" \
  || { echo "no training step was logged" >&2; exit 1; }
echo "verl + botgrpo: $STEPS steps with adv_estimator=bot and per-token rewards"
