"""The code regime's fallback level, the highest every run holds, is one every run crosses by the
crossing rule of the statistics (two evaluations in a row at or above it), and no higher."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from botgrpo.harness.stats import held_crossing

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(
        "code_regime", ROOT / "benchmarks" / "code_regime.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_run_holds_the_level_and_one_misses_anything_higher():
    script = load_script()
    steps = [0, 5, 10, 15, 20]
    runs = [
        [0.04, 0.30, 0.66, 0.70, 0.71],  # its peak is held
        [0.04, 0.10, 0.20, 0.60, 0.75],  # 0.75 only at the last evaluation: holds 0.60
        [0.04, 0.80, 0.30, 0.64, 0.64],  # a one-evaluation blip at 0.80
    ]
    assert [script.held_level(v) for v in runs] == [0.70, 0.60, 0.64]
    level = min(script.held_level(v) for v in runs)
    assert all(held_crossing(steps, v, level) is not None for v in runs)
    assert held_crossing(steps, runs[1], level + 0.001) is None
