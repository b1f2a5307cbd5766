#!/usr/bin/env bash
# The prepared GPU check (docs/results/gpu.md): the bot estimator at B = 512, T = 8192 against
# the floor on the GPU, and BoTGRPOTrainer(preset="bot") against trl.GRPOTrainer on a random
# model of Qwen2.5-0.5B's shape with TRL's own generation; then the real model's GPU recipe
# (recipes/smollm2_chain_gpu.yaml, every weight trained) for a few steps on a model of
# SmolLM2-135M's shape (its tokenizer and config carried; random weights, as the converted
# weights exceed what travels to the GPU machine). About 6 minutes on one H200; every stage has
# its own time limit so the whole stays under 9 minutes.
#
#   bash scripts/gpu_check.sh --prepare   # here, once: wheels of what the GPU image lacks -> .whl/
#   bash scripts/gpu_check.sh             # on the GPU machine, with .whl/ carried along
#   bash scripts/gpu_check.sh --dry-run   # here: the same stages on the CPU, shrunk (no wheels)
#   STAGES="estimator real_recipe" bash scripts/gpu_check.sh   # some stages only
#
# Results go to stdout and to $OUT (or /tmp/gpu_check): gpu_check.log, one file per stage.
set -uo pipefail
cd "$(dirname "$0")/.."

# The GPU image has torch and transformers but not these (pure-Python wheels for CPython 3.12).
WHEELS=(
  trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 pyflakes==4.1.0
  math-verify==0.9.0 latex2sympy2_extended==1.11.0 antlr4-python3-runtime==4.13.2
)

if [[ "${1:-}" == "--prepare" ]]; then
  PY=${PYTHON:-.venv/bin/python}
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "${WHEELS[@]}" || exit 1
  # the real model's shape: config and tokenizer (4 MB) from `make real-model`'s conversion
  real=$("$PY" -c "from botgrpo.models import real_model_path as p; print(p('real:smollm2-135m-instruct'))") || exit 1
  mkdir -p .whl/smollm2-shape
  cp "$real"/{config.json,generation_config.json,tokenizer.json,tokenizer_config.json,chat_template.jinja} .whl/smollm2-shape/
  ls -l .whl .whl/smollm2-shape
  exit 0
fi

DRY=0
[[ "${1:-}" == "--dry-run" ]] && DRY=1
OUT_DIR=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT_DIR"
LOG="$OUT_DIR/gpu_check.log"
exec > >(tee "$LOG") 2>&1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY=${PYTHON:-python3}
DEVICE=cuda
ESTIMATOR_ARGS=(--lengths 4096 8192 --repeats 50)
TRAINER_ARGS=(--steps 8 --rounds 1 --batch 64 --completion-length 128)
if ((DRY)); then  # plumbing only: CPU, a one-layer narrow model, short completions
  PY=${PYTHON:-.venv/bin/python}
  DEVICE=cpu
  ESTIMATOR_ARGS=(--lengths 1024 --repeats 5 --threads 1)
  TRAINER_ARGS=(--steps 4 --rounds 1 --batch 16 --completion-length 8 --layers 1 --hidden 64)
fi
declare -A STATUS
STAGES=${STAGES:-estimator trainer real_recipe}
want() { [[ " $STAGES " == *" $1 "* ]]; }

stage() {  # stage NAME SECONDS COMMAND...: run with a time limit, record ok / failed / timed out
  local name=$1 limit=$2
  shift 2
  echo "=== $name (limit ${limit} s): $*"
  timeout "$limit" "$@" 2>&1 | tee "$OUT_DIR/$name.txt"
  local rc=${PIPESTATUS[0]}
  case $rc in
    0) STATUS[$name]="ok" ;;
    124) STATUS[$name]="TIMED OUT after ${limit} s" ;;
    *) STATUS[$name]="FAILED (exit $rc)" ;;
  esac
  echo "=== $name: ${STATUS[$name]}"
}

echo "gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

if ((DRY)); then
  echo "dry run: no wheels installed, the checkout's environment is used"
  export PYTHONPATH="$PWD/src:${PYTHONPATH:-}"
elif ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:$PWD/src:${PYTHONPATH:-}"
else
  echo "no .whl/ here: run 'bash scripts/gpu_check.sh --prepare' and carry .whl"
  export PYTHONPATH="$PWD/src:${PYTHONPATH:-}"
fi
"$PY" - <<'PY'
import importlib
import importlib.metadata
for name in ("torch", "transformers", "trl", "datasets", "accelerate", "pyarrow", "math_verify"):
    try:
        importlib.import_module(name)
        print(f"{name} {importlib.metadata.version(name.replace('_', '-'))}")
    except Exception as err:  # report and go on: a missing one fails its stage below
        print(f"{name}: NOT IMPORTABLE ({type(err).__name__}: {err})")
import torch
print("cuda:", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
PY

want estimator && stage estimator 120 "$PY" benchmarks/bench_advantages.py --device "$DEVICE" --no-loop \
  "${ESTIMATOR_ARGS[@]}"
want trainer && stage trainer 420 "$PY" benchmarks/bench_trainer_overhead.py --device "$DEVICE" \
  --shape qwen2.5-0.5b "${TRAINER_ARGS[@]}"

SHAPE=.whl/smollm2-shape
((DRY)) && SHAPE=$("$PY" -c "from botgrpo.models import real_model_path as p; print(p('real:smollm2-135m-instruct'))")
if ! want real_recipe; then
  :
elif [[ -f "$SHAPE/config.json" ]]; then
  "$PY" - "$SHAPE" /tmp/smollm2-random <<'PY'
import shutil, sys
from transformers import AutoConfig, AutoModelForCausalLM
shape, out = sys.argv[1], sys.argv[2]
AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(shape)).save_pretrained(out)
for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"):
    shutil.copy(f"{shape}/{name}", out)
PY
  RECIPE_ARGS=(--max_steps 5 --logging_steps 1)
  ((DRY)) && RECIPE_ARGS=(--max_steps 1 --logging_steps 1 --use_cpu true --per_device_train_batch_size 4
    --num_generations 2 --max_completion_length 8 --task_size 8)
  stage real_recipe 240 "$PY" -m botgrpo.cli train --config recipes/smollm2_chain_gpu.yaml \
    --model_name_or_path /tmp/smollm2-random --output_dir /tmp/smollm2-gpu-recipe "${RECIPE_ARGS[@]}"
else
  echo "no $SHAPE: run 'bash scripts/gpu_check.sh --prepare' after make real-model"
fi

echo
echo "=== summary ($(date -u +%H:%M:%SZ))"
for name in estimator trainer real_recipe; do echo "$name: ${STATUS[$name]:-not run}"; done
echo "NOT RUN: TRL's vLLM generation (use_vllm=True). vLLM is not in the GPU image and its wheel"
echo "  is too large to carry; the trainer's vLLM path is TRL's own and stays documented, not timed."
echo "NOT RUN: several GPUs (one chip is lent): the gathers across processes are covered by the CPU"
echo "  distributed test (tests/test_trl_distributed.py), not timed on GPUs."
