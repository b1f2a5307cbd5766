"""Fixtures of the verl integration tests (run in .venv-verl by ``make test-verl``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
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
