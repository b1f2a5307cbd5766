"""LLM judges over any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, OpenAI, ...).

Two judges, as in BoT-GRPO (arXiv 2610.09804), which used Claude Sonnet 4 for both:

1. :class:`StepJudge` (recipe 1, math, Eq. 8): one verdict per solution step, +1 correct,
   -1 incorrect, 0 uncertain. Raw verdicts are returned; error propagation (later steps -> 0
   after the first incorrect one) belongs to the reward composition.
2. :class:`CodeJudge` (recipe 2, code, Eqs. 6-7): a 0-10 score and up to three offending lines
   with impact -1..-3, line numbers relative to the code block.

Failure policy: a judge never raises into training for a failed request or answer. A timeout,
connection error, HTTP error or unparseable answer gives the neutral result (verdicts all 0;
score 0 and no line penalties) with ``ok`` False, counted in :class:`JudgeMetrics`. Answers that
parsed are cached on disk when ``JudgeConfig.cache_dir`` is set; failures are not.

>>> judge = StepJudge(JudgeConfig(base_url="http://localhost:8000/v1", model="judge"))
>>> judge.judge_steps("What is 2 + 2?", [])  # no steps: nothing to ask
StepVerdicts(verdicts=(), ok=True, error=None, raw=None, reasons={}, missing=(), dropped=0, problems=(), cached=False)
>>> judge.metrics.requests
0
>>> judge.close()
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Self, TypeVar

from botgrpo.rewards.judges.cache import JudgeCache, cache_key
from botgrpo.rewards.judges.client import JudgeClient, JudgeMetrics, Messages
from botgrpo.rewards.judges.config import JudgeConfig
from botgrpo.rewards.judges.parsing import parse_code_answer, parse_step_answer
from botgrpo.rewards.judges.prompts import code_messages, step_messages
from botgrpo.rewards.judges.results import CodeVerdict, StepVerdicts
from botgrpo.rewards.text import count_lines

__all__ = ["CodeJudge", "StepJudge"]

logger = logging.getLogger(__name__)

R = TypeVar("R", StepVerdicts, CodeVerdict)


class _Judge:
    """Shared machinery: client, cache, metrics, the ask-parse-cache cycle and batching."""

    def __init__(self, config: JudgeConfig | None = None, *, client: JudgeClient | None = None):
        """Judge with ``config`` (default: :meth:`JudgeConfig.from_env`), or share ``client``.

        Judges sharing a client share its concurrency bound and its metrics.
        """
        if client is not None and config is not None and config != client.config:
            raise ValueError(
                f"{type(self).__name__}: config differs from client.config; pass one of them."
            )
        self._owns_client = client is None
        if client is None:
            client = JudgeClient(config if config is not None else JudgeConfig.from_env())
        self.client = client
        self.config = client.config
        self.metrics: JudgeMetrics = client.metrics
        self.cache = JudgeCache(self.config.cache_dir) if self.config.cache_dir else None

    def close(self) -> None:
        """Close the HTTP connection pool, when this judge made it: a client passed in belongs
        to its caller and to the other judges sharing it, who close it."""
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _judge(
        self, messages: Messages, parse: Callable[[str], R], neutral: Callable[[str], R]
    ) -> R:
        """Ask (or read the cache), parse, cache a parsed answer; neutral on any failure."""
        try:
            result = self._ask(messages, parse, neutral)
        except Exception as exc:  # a judge must never take training down
            logger.exception("judge failed unexpectedly")
            self.metrics.add("internal_errors")
            result = neutral(f"internal error: {type(exc).__name__}: {exc}")
        self.metrics.add("judgements")
        if not result.ok:
            self.metrics.add("failures")
            logger.debug("neutral judgement: %s", result.error)
        self.metrics.add("dropped_entries", result.dropped)
        return result

    def _ask(self, messages: Messages, parse: Callable[[str], R], neutral: Callable[[str], R]) -> R:
        """The cache-or-request cycle behind :meth:`_judge`."""
        payload = self.client.payload(messages)
        key = cache_key(payload)
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            result = parse(cached)
            if result.ok:
                self.metrics.add("cache_hits")
                return dataclasses.replace(result, cached=True)
        reply = self.client.send(payload)
        if reply.text is None:
            return neutral(reply.error or "no answer")
        result = parse(reply.text)
        if not result.ok:
            self.metrics.add("parse_failures")
        elif self.cache is not None and not self.cache.put(key, reply.text, model=payload["model"]):
            self.metrics.add("cache_write_errors")
        return result

    def _map(self, fn: Callable[..., R], *columns: Sequence[Any]) -> list[R]:
        """``[fn(*row) for row in zip(*columns)]`` with at most ``max_concurrency`` at once."""
        n_rows = {len(column) for column in columns}
        if len(n_rows) > 1:
            lengths = ", ".join(str(len(c)) for c in columns)
            raise ValueError(
                f"{type(self).__name__}.judge_many: the input lists differ in length ({lengths}); "
                "pass one entry per item in each."
            )
        if not columns or not columns[0]:
            return []
        workers = min(self.config.max_concurrency, len(columns[0]))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
            return list(pool.map(fn, *columns))


class StepJudge(_Judge):
    """Judges each step of a math solution: +1 correct, -1 incorrect, 0 uncertain (Eq. 8).

    ``StepJudge(config).judge_steps(problem, steps) -> StepVerdicts``; ``judge_many`` judges a
    batch with at most ``config.max_concurrency`` requests in flight.
    """

    def judge_steps(self, problem: str, steps: Sequence[str]) -> StepVerdicts:
        """Verdicts for ``steps`` (the solution's step texts, in order) of ``problem``.

        No steps means nothing to judge: an empty, ``ok`` result without a request.
        """
        _check_text("StepJudge.judge_steps", "problem", problem)
        _check_steps(steps)
        if not steps:
            return StepVerdicts(verdicts=())
        n_steps = len(steps)
        return self._judge(
            step_messages(problem, steps),
            parse=lambda text: parse_step_answer(text, n_steps),
            neutral=lambda error: StepVerdicts.neutral(n_steps, error),
        )

    def judge_many(
        self, problems: Sequence[str], steps: Sequence[Sequence[str]]
    ) -> list[StepVerdicts]:
        """:meth:`judge_steps` for each ``(problems[i], steps[i])``, results in input order."""
        return self._map(self.judge_steps, problems, steps)


class CodeJudge(_Judge):
    """Scores code 0-10 and flags up to three lines with impact -1..-3 (Eqs. 6-7).

    ``CodeJudge(config).judge_code(task, code) -> CodeVerdict``; ``judge_many`` judges a batch
    with at most ``config.max_concurrency`` requests in flight.
    """

    def judge_code(self, task: str, code: str) -> CodeVerdict:
        """Score and worst lines of ``code`` (the extracted code block) written for ``task``.

        Flagged line numbers are 1-based within ``code``; mapping them back to positions in
        the full response is the caller's job.
        """
        _check_text("CodeJudge.judge_code", "task", task)
        _check_text("CodeJudge.judge_code", "code", code)
        n_lines = count_lines(code)
        return self._judge(
            code_messages(task, code),
            parse=lambda text: parse_code_answer(text, n_lines),
            neutral=CodeVerdict.neutral,
        )

    def judge_many(self, tasks: Sequence[str], codes: Sequence[str]) -> list[CodeVerdict]:
        """:meth:`judge_code` for each ``(tasks[i], codes[i])``, results in input order."""
        return self._map(self.judge_code, tasks, codes)


def _check_text(where: str, name: str, value: object) -> None:
    """Raise a TypeError naming the argument unless ``value`` is a string."""
    if not isinstance(value, str):
        raise TypeError(f"{where}: {name} must be a str (got {type(value).__name__}).")


def _check_steps(steps: object) -> None:
    """Raise a TypeError unless ``steps`` is a sequence of step strings."""
    if isinstance(steps, str) or not isinstance(steps, Sequence):
        raise TypeError(
            "StepJudge.judge_steps: steps must be a list of step texts "
            f"(got {type(steps).__name__}); split the solution into its steps first."
        )
    bad = [i for i, step in enumerate(steps) if not isinstance(step, str)]
    if bad:
        raise TypeError(
            f"StepJudge.judge_steps: steps[{bad[0]}] is a {type(steps[bad[0]]).__name__}, "
            "not a str; pass each step's text."
        )
