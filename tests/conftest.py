"""Shared pytest fixtures: a tiny offline model and CPU-friendly trainer configs."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# CI draws the same property-test examples on every run (a failure there is reproducible); local
# runs keep exploring new ones.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama-architecture model with a character tokenizer (built once)."""
    from botgrpo.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir: Path):
    """The tiny model's character-level tokenizer."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture
def started_threads(monkeypatch) -> list[str]:
    """The names of the threads started while the test runs (``threading.Thread.start``
    records each name, then starts the thread as usual)."""
    import threading

    names: list[str] = []
    start = threading.Thread.start

    def recording_start(thread: threading.Thread) -> None:
        names.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", recording_start)
    return names


@pytest.fixture
def torch_single_thread():
    """Run a test with one torch thread (tiny models gain nothing from more, and several threads
    on busy cores slow them down many times over); restores the previous setting."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def cpu_config(tmp_path: Path) -> Callable[..., object]:
    """Factory of small CPU ``BoTGRPOConfig``s (2 prompts x 4 generations, 8 new tokens)."""
    from botgrpo.trl import BoTGRPOConfig

    def make(**overrides: object) -> BoTGRPOConfig:
        options: dict[str, object] = {
            "output_dir": str(tmp_path / "out"),
            "use_cpu": True,
            "bf16": False,
            "activation_checkpointing": False,
            "per_device_train_batch_size": 8,
            "num_generations": 4,
            "max_completion_length": 8,
            "max_steps": 2,
            "learning_rate": 1e-2,
            "logging_steps": 1,
            "save_strategy": "no",
            "report_to": "none",
            "seed": 0,
            "dataloader_num_workers": 0,
        }
        options.update(overrides)
        return BoTGRPOConfig(**options)

    return make
