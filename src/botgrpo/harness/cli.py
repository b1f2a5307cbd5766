"""`botgrpo compare` and `botgrpo demo` (flags generated from CompareConfig)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from botgrpo.harness.config import CompareConfig, add_dataclass_arguments, config_from_args
from botgrpo.usage import UsageError, check_task_spec

#: The demo: the default task, grpo vs bot, a budget of about ten minutes on two cores.
DEMO_DEFAULTS = {
    "name": "demo",
    "methods": ("grpo", "bot"),
    "seeds": 1,
    "steps": 60,
    "eval_every": 10,
    "eval_problems": 500,
    "pass_samples": 0,
}


def _parse(
    argv: Sequence[str], prog: str, description: str, defaults: dict | None
) -> CompareConfig:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_dataclass_arguments(parser, CompareConfig, defaults)
    try:
        cfg = config_from_args(CompareConfig, parser.parse_args(list(argv)))
    except ValueError as err:
        raise UsageError(str(err)) from err
    check_task_spec(cfg.task)  # before the warm start: a bad task fails in a second
    return cfg


def compare_main(argv: Sequence[str]) -> int:
    """``botgrpo compare [--flags]``: run a comparison, print the summary."""
    from botgrpo.harness.compare import compare

    cfg = _parse(
        argv,
        "botgrpo compare",
        "Methods x seeds on one task from one warm start; writes metrics.jsonl, "
        "curves.png and summary.md under OUT_DIR/NAME.",
        None,
    )
    summary = compare(cfg)
    print(f"summary: {summary}\nplot:    {summary.parent / 'curves.png'}")
    return 0


def demo_main(argv: Sequence[str]) -> int:
    """``botgrpo demo``: `compare` with grpo and bot on the default task at a small budget."""
    from botgrpo.harness.compare import compare

    cfg = _parse(
        argv,
        "botgrpo demo",
        "GRPO vs BoT-GRPO on the built-in chain-arithmetic task with a tiny offline "
        "model: warm start, RL, held-out evaluation, plot and summary, about ten "
        "minutes on two CPU cores. Any compare option can be changed.",
        DEMO_DEFAULTS,
    )
    print(
        f"botgrpo demo: {', '.join(cfg.methods)} on {cfg.task}, {cfg.seeds} seeds x "
        f"{cfg.steps} steps (a small sample: run `botgrpo compare` with 5+ seeds for evidence)"
    )
    summary = compare(cfg)
    print(f"summary: {summary}\nplot:    {summary.parent / 'curves.png'}")
    return 0
