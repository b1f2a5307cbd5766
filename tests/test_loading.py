"""Models load on the calling thread, so a Ctrl-C during loading cannot leave a worker thread
the interpreter waits for at exit (botgrpo.loading)."""

from __future__ import annotations

import os

from transformers import AutoModelForCausalLM

from botgrpo.loading import SYNC_LOAD_VARIABLE, from_pretrained, loading_on_this_thread
from botgrpo.tiny import TinyModelSpec, build_tiny_model

SPEC = TinyModelSpec(hidden=16, layers=1, heads=2, kv_heads=1, intermediate=32, max_positions=32)


def test_a_model_loads_without_starting_a_thread(tmp_path, started_threads, monkeypatch):
    monkeypatch.delenv(SYNC_LOAD_VARIABLE, raising=False)
    path = build_tiny_model(tmp_path / "tiny", spec=SPEC)
    started_threads.clear()
    model = from_pretrained(AutoModelForCausalLM, path)
    assert model.config.hidden_size == 16
    assert [n for n in started_threads if "ThreadPoolExecutor" in n] == []
    assert SYNC_LOAD_VARIABLE not in os.environ  # restored after the load


def test_plain_loading_would_start_workers(tmp_path, started_threads, monkeypatch):
    """The control: transformers' own loading reads on a thread pool, which the helper avoids
    (if a transformers release stops doing so, this fails and the helper can go)."""
    monkeypatch.delenv(SYNC_LOAD_VARIABLE, raising=False)
    path = build_tiny_model(tmp_path / "tiny", spec=SPEC)
    started_threads.clear()
    AutoModelForCausalLM.from_pretrained(path)
    assert [n for n in started_threads if "ThreadPoolExecutor" in n]


def test_a_users_setting_is_left_alone(monkeypatch):
    monkeypatch.setenv(SYNC_LOAD_VARIABLE, "0")
    with loading_on_this_thread():
        assert os.environ[SYNC_LOAD_VARIABLE] == "0"
    assert os.environ[SYNC_LOAD_VARIABLE] == "0"


def test_nested_blocks_restore_the_environment_once_all_have_left(monkeypatch):
    monkeypatch.delenv(SYNC_LOAD_VARIABLE, raising=False)
    with loading_on_this_thread():
        with loading_on_this_thread():
            assert os.environ[SYNC_LOAD_VARIABLE] == "1"
        assert os.environ[SYNC_LOAD_VARIABLE] == "1"
    assert SYNC_LOAD_VARIABLE not in os.environ
