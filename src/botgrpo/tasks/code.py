"""What the code tasks share: their comparison defaults, dataset columns and TRL logs.

``react`` (:mod:`.components`) and ``python`` (:mod:`.functions`) train with the paper's
recipe 2 (Eqs. 6-7): a global G from the toolchain and line penalties decayed over w = 3 lines
into S_t. Their reward functions (``make_react_task_reward`` in :mod:`.components`,
``make_python_task_reward`` in :mod:`.functions`), built on the helpers here,

- check each distinct code once per call (a converged policy writes many identical
  completions) in the worker pools across the cores (React: one Node worker per core; Python:
  one sandboxed process per core);
- take G from the recipe (React: compile, lint, render, blank terms; Python: syntax, lint, the
  share of tests passed) and, for React, add ``solved_weight`` when the page shows what the
  prompt asked for (read from the rendered text);
- log, under TRL, ``task/solved``, ``task/compiled``, ``task/clean``, the share of distinct
  codes (``reward/distinct``) and the seconds of each stage (``time/extract_s``,
  ``time/check_s``, ``time/score_s``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botgrpo.rewards.calling import dataset_column, message_text
from botgrpo.tasks.base import Example

#: What `botgrpo compare` leads with and evaluates on a code task (flags given still win): the
#: paper's compile rate, on fewer held-out problems than the default (each is rendered or run).
COMPARE_DEFAULTS = {"metric": "sampled_compiled", "eval_problems": 300, "pass_problems": 300}
#: What `botgrpo demo --task python` runs: 30 steps, 150 problems every 5, sampled completions
#: only (the warm starts compile greedily from the start; the compile rate is the sampled one),
#: about 9 minutes on 2 cores; react's steps are 2.5x longer, so its demo runs fewer:
#: ``REACT_DEMO_DEFAULTS``.
DEMO_DEFAULTS = {
    "metric": "sampled_compiled",
    "steps": 30,
    "eval_every": 5,
    "eval_problems": 150,
    "pass_problems": 150,
    "pass_samples": 1,
    "greedy": False,
}
#: What `botgrpo demo --task react` runs: 20 steps, 100 problems every 5 (about 10 minutes).
REACT_DEMO_DEFAULTS = {**DEMO_DEFAULTS, "steps": 20, "eval_problems": 100, "pass_problems": 100}


def code_examples(prompts, columns: Mapping[str, Any], n: int, name: str) -> list[Example]:
    answers = dataset_column(columns, "answer", n, name)
    metas = dataset_column(columns, "meta", n, name)
    prompt_list = [message_text(p, "user") for p in prompts or [""] * n]  # chat: the user turn
    return [Example.from_row(p, a, m) for p, a, m in zip(prompt_list, answers, metas, strict=True)]


def log_code_scores(
    columns: Mapping[str, Any], scores, n_distinct: int, times: dict[str, float]
) -> None:
    log_metric = columns.get("log_metric")
    if not callable(log_metric) or not scores:
        return
    n = len(scores)
    log_metric("task/solved", sum(s.solved for s in scores) / n)
    for key in ("compiled", "clean"):
        log_metric(f"task/{key}", sum(s.metrics.get(key, 0.0) for s in scores) / n)
    log_metric("reward/distinct", n_distinct / n)
    for stage, seconds in times.items():
        log_metric(f"time/{stage}_s", seconds)
