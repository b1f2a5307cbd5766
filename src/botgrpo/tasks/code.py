"""Token rewards of the code tasks: the line recipes, each distinct code checked once per call.

``react`` (:mod:`.components`) and ``python`` (:mod:`.functions`) train with the paper's
recipe 2 (Eqs. 6-7): a global G from the toolchain and line penalties decayed over w = 3 lines
into S_t. The reward functions here

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

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from botgrpo.rewards.calling import dataset_column, resolve_tokenizer, tokenize_completions
from botgrpo.rewards.types import TokenReward
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


def _examples(prompts, columns: Mapping[str, Any], n: int, name: str) -> list[Example]:
    answers = dataset_column(columns, "answer", n, name)
    metas = dataset_column(columns, "meta", n, name)
    prompt_list = list(prompts) if prompts is not None else [""] * n
    return [Example.from_row(p, a, m) for p, a, m in zip(prompt_list, answers, metas, strict=True)]


def _log(columns: Mapping[str, Any], scores, n_distinct: int, times: dict[str, float]) -> None:
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


def make_react_task_reward(task, tokenizer: Any, config=None) -> Callable[..., list[TokenReward]]:
    """The React recipe's token reward (``config``: a
    :class:`~botgrpo.rewards.recipes.react.ReactRewardConfig` or a mapping of its options)
    whose G also gets ``task.solved_weight`` for a solved component; renders are bounded by
    ``task.render_timeout_s``, as in the task's evaluation."""
    from botgrpo.rewards.configs import config_from_mapping
    from botgrpo.rewards.recipes.react import ReactRewardConfig, check_components
    from botgrpo.rewards.recipes.react.recipe import extract_react_block, score_react_completion
    from botgrpo.tasks.components import score_check

    cfg = config_from_mapping(ReactRewardConfig, config)
    tok = resolve_tokenizer(tokenizer)
    name = f"{task.name}_line_reward"

    def reward(prompts=None, completions: Sequence[Any] = (), completion_ids=None, **columns):
        t0 = time.perf_counter()
        tokens = tokenize_completions(tok, completions, completion_ids, name)
        examples = _examples(prompts, columns, len(tokens), name)
        blocks = [extract_react_block(t.text, cfg.languages) for t in tokens]
        blocks = [b if b is not None and b.code.strip() else None for b in blocks]
        codes = sorted({b.code for b in blocks if b is not None})
        t1 = time.perf_counter()
        ran = check_components(codes, render=cfg.render, timeout_s=task.render_timeout_s)
        checks = dict(zip(codes, ran, strict=True))
        t2 = time.perf_counter()
        out, scores = [], []
        for t, ex, block in zip(tokens, examples, blocks, strict=True):
            check = checks.get(block.code) if block is not None else None
            score = score_check(ex, t.text, block, check)
            base = score_react_completion(t, cfg, check=check, block=block)
            bonus = task.solved_weight * score.outcome
            info = {**base.info, "solved": score.solved, **score.metrics}
            out.append(TokenReward(outcome=base.outcome + bonus, local=base.local, info=info))
            scores.append(score)
        times = {"extract": t1 - t0, "check": t2 - t1, "score": time.perf_counter() - t2}
        _log(columns, scores, len(codes), times)
        return out

    reward.__name__ = reward.__qualname__ = name
    reward.local_bound = cfg.lines.bound  # type: ignore[attr-defined]
    return reward


def python_checks(task, examples: Sequence[Example], completions: Sequence[str]):
    """(block, analysis, tests) per completion: each distinct code analysed once, each distinct
    (code, tests) pair run once in the sandbox (None for code that does not parse)."""
    from botgrpo.rewards.code_blocks import PYTHON_LANGUAGES, extract_code_block
    from botgrpo.rewards.recipes.python import TestOutcome
    from botgrpo.rewards.sandbox import run_python_tests_many
    from botgrpo.rewards.verifiers.python_diagnostics import analyse_python

    blocks = [extract_code_block(c, PYTHON_LANGUAGES) for c in completions]
    analyses = {b.code: analyse_python(b.code) for b in blocks if b is not None}
    pairs = sorted(
        {
            (b.code, ex.meta["test"])
            for b, ex in zip(blocks, examples, strict=True)
            if b is not None and not analyses[b.code].empty and analyses[b.code].syntax is None
        }
    )
    results = run_python_tests_many(
        [code for code, _ in pairs],
        [test for _, test in pairs],
        timeout_s=task.test_timeout_s,
    )
    tests = {
        pair: TestOutcome(r.passed, r.total, tuple(r.failing_lines))
        for pair, r in zip(pairs, results, strict=True)
    }
    out = []
    for block, ex in zip(blocks, examples, strict=True):
        if block is None:
            out.append((None, None, None))
            continue
        out.append((block, analyses[block.code], tests.get((block.code, ex.meta["test"]))))
    return out


def make_python_task_reward(task, tokenizer: Any, config=None) -> Callable[..., list[TokenReward]]:
    """The Python recipe's token reward (``config``: a
    :class:`~botgrpo.rewards.recipes.python.PythonRewardConfig` or a mapping of its options):
    G = syntax or lint terms + the share of the task's tests passed."""
    from botgrpo.rewards.configs import config_from_mapping
    from botgrpo.rewards.recipes.python import PythonRewardConfig, score_python_completion
    from botgrpo.tasks.functions import score_python_check

    cfg = config_from_mapping(PythonRewardConfig, config)
    tok = resolve_tokenizer(tokenizer)
    name = f"{task.name}_line_reward"

    def reward(prompts=None, completions: Sequence[Any] = (), completion_ids=None, **columns):
        t0 = time.perf_counter()
        tokens = tokenize_completions(tok, completions, completion_ids, name)
        examples = _examples(prompts, columns, len(tokens), name)
        t1 = time.perf_counter()
        parts = python_checks(task, examples, [t.text for t in tokens])
        t2 = time.perf_counter()
        out, scores = [], []
        for t, (block, analysis, tests) in zip(tokens, parts, strict=True):
            score = score_python_check(t.text, block, analysis, tests)
            base = score_python_completion(t, cfg, tests=tests, block=block, analysis=analysis)
            info = {**base.info, "solved": score.solved, **score.metrics}
            out.append(TokenReward(outcome=base.outcome, local=base.local, info=info))
            scores.append(score)
        distinct = len({b.code for b, _, _ in parts if b is not None})
        times = {"extract": t1 - t0, "check": t2 - t1, "score": time.perf_counter() - t2}
        _log(columns, scores, distinct, times)
        return out

    reward.__name__ = reward.__qualname__ = name
    reward.local_bound = cfg.lines.bound  # type: ignore[attr-defined]
    return reward
