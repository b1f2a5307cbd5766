"""Recipe 2 of BoT-GRPO (arXiv 2610.09804, Eqs. 6-7) carried from React to Python.

    r_t = w_g * G + w_s * clamp_B( sum_{l in E} p_l * phi(d(t, l)) ),  phi(d) = max(0, 1 - d/(w+1))

Per completion:

1. Extract the code block (:mod:`botgrpo.rewards.code_blocks`); none -> G = ``no_code_score``.
2. Global outcome G, a sum of
   - syntax: the code does not compile -> ``syntax_error_score`` (and no lint, no tests);
   - lint: pyflakes diagnostics at fatal -0.5 / error -0.1 / warning -0.02 each, the sum
     bounded below by ``lint_floor`` (severity mapping in
     :mod:`botgrpo.rewards.verifiers.python_diagnostics`);
   - tests: ``tests_weight`` * the fraction of unit-test cases passed (HumanEval-style
     ``check(candidate)`` or top-level asserts), run in the sandbox
     (:mod:`botgrpo.rewards.sandbox`), never in this process;
   - judge (optional): ``judge_weight`` * score / 10 from a code judge.
3. Line penalties p_l, merged additively per line of the code: the syntax-error line
   (``syntax_line_penalty``), each diagnostic's line (its severity weight), the innermost
   solution line of each failing test's traceback (``traceback_line_penalty``), and the
   judge's worst lines (impact in {-1, -2, -3} * ``judge_line_scale``).
4. S_t: line penalties decayed over w lines (Eq. 7), spread over the tokens of each code line
   (mean rule for a token on two lines), clamped to [-B, B]; prose and fences get 0.

A completion whose test cell is None runs no tests (no test term), as when ``run_tests`` is off.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from botgrpo.rewards.calling import (
    call_verdict_source,
    dataset_column,
    message_text,
    resolve_tokenizer,
    tokenize_completions,
)
from botgrpo.rewards.code_blocks import PYTHON_LANGUAGES, CodeBlock, extract_code_block
from botgrpo.rewards.compose import LineSignalConfig, clamp_local, line_values
from botgrpo.rewards.configs import check_config_types, config_from_mapping
from botgrpo.rewards.judges.options import as_judge
from botgrpo.rewards.noise import apply_line_moves, line_moves
from botgrpo.rewards.sandbox.config import check_timeout
from botgrpo.rewards.spans import TokenizedText, spread_span_scores, validate_spans
from botgrpo.rewards.types import TokenReward
from botgrpo.rewards.verifiers.python_diagnostics import (
    Diagnostic,
    PythonAnalysis,
    SeverityWeights,
    analyse_python,
)

__all__ = [
    "CodeJudgement",
    "PythonRewardConfig",
    "TestOutcome",
    "make_python_code_reward",
    "score_python_completion",
]


def _finite(owner: str, **values: float) -> None:
    for name, value in values.items():
        if not math.isfinite(value):
            raise ValueError(f"{owner}.{name} must be finite, got {value}")


@dataclass(frozen=True)
class PythonRewardConfig:
    """Options of the Python code reward (recipe 2)."""

    languages: tuple[str, ...] = PYTHON_LANGUAGES
    """Fence language tags taken as Python."""
    no_code_score: float = -1.0
    """G when the response has no code block."""
    syntax_error_score: float = -1.0
    """G when the code does not compile (the paper's "large negative penalty")."""
    lint: SeverityWeights = field(default_factory=SeverityWeights)
    """Score per lint diagnostic by severity (global term and line penalty alike)."""
    lint_floor: float = -1.0
    """The summed lint score is bounded below by this."""
    run_tests: bool = True
    """Run the dataset's unit tests in the sandbox (needs ``test_column``)."""
    tests_weight: float = 1.0
    """G gains tests_weight * (passed cases / cases)."""
    test_column: str = "test"
    """Dataset column with the test program (or list of test snippets) per row."""
    entry_point_column: str | None = "entry_point"
    """Dataset column naming the function bound to ``candidate``; None if not needed."""
    test_timeout_s: float = 5.0
    """Wall-clock limit of one sandboxed test run."""
    test_memory_mb: int = 512
    """Memory limit of one sandboxed test run."""
    test_workers: int | None = None
    """Sandboxes run at once (default: the sandbox's limit, the CPU count)."""
    judge_weight: float = 1.0
    """G gains judge_weight * score / 10 when a code judge is given."""
    syntax_line_penalty: float = -1.0
    """Penalty on the line of a syntax error (compiler diagnostic: -1 per flagged line)."""
    traceback_line_penalty: float = -0.5
    """Penalty on the innermost solution line of each failing test's traceback."""
    judge_line_scale: float = 0.1
    """A judge's line impact (-1, -2 or -3) times this is its line penalty (paper: /10)."""
    lines: LineSignalConfig = field(default_factory=LineSignalConfig)
    """Decay window, optional 1/|E| normalisation and bound B of the line signal, and the
    random-line control (``noise``)."""
    name: str = "python_code_reward"
    """``__name__`` of the reward function (TRL logs rewards by it)."""

    def __post_init__(self) -> None:
        check_config_types(self)
        _finite(
            "PythonRewardConfig",
            no_code_score=self.no_code_score,
            syntax_error_score=self.syntax_error_score,
            lint_floor=self.lint_floor,
            tests_weight=self.tests_weight,
            judge_weight=self.judge_weight,
            syntax_line_penalty=self.syntax_line_penalty,
            traceback_line_penalty=self.traceback_line_penalty,
            judge_line_scale=self.judge_line_scale,
        )
        if self.lint_floor > 0:
            raise ValueError("PythonRewardConfig.lint_floor must be <= 0")
        check_timeout("PythonRewardConfig.test_timeout_s", self.test_timeout_s)
        if not self.test_memory_mb > 0:
            raise ValueError("PythonRewardConfig.test_memory_mb must be > 0")
        if self.test_workers is not None and self.test_workers < 1:
            raise ValueError("PythonRewardConfig.test_workers must be >= 1 or None")
        if not self.languages or not self.name or (self.run_tests and not self.test_column):
            raise ValueError("PythonRewardConfig: languages, name and test_column must be set")


@dataclass(frozen=True)
class TestOutcome:
    """What the recipe needs from one sandboxed test run."""

    __test__ = False  # not a pytest test class

    passed: int
    """Test cases passed."""
    total: int
    """Test cases run (or planned)."""
    failing_lines: tuple[int, ...] = ()
    """Lines of the code (1-based) where failing cases raised."""

    @property
    def fraction(self) -> float:
        """passed / total (0 when there is no case)."""
        return self.passed / self.total if self.total else 0.0


@dataclass(frozen=True)
class CodeJudgement:
    """What the recipe needs from a code judge: score 0-10 (None: failed) and worst lines."""

    score: float | None
    """Quality score in [0, 10], or None when the judge gave none (counts as 0)."""
    lines: Mapping[int, int] = field(default_factory=dict)
    """Up to three flagged lines (1-based in the code) -> impact in {-1, -2, -3}."""


def _line_penalties(
    code: CodeBlock,
    syntax: Diagnostic | None,
    diagnostics: Sequence[Diagnostic],
    tests: TestOutcome | None,
    judge: CodeJudgement | None,
    cfg: PythonRewardConfig,
) -> dict[int, float]:
    n_lines = max(code.n_lines, 1)
    penalties: dict[int, float] = {}

    def add(line: int, value: float) -> None:
        at = min(max(int(line), 1), n_lines)
        penalties[at] = penalties.get(at, 0.0) + value

    if syntax is not None:
        add(syntax.line, cfg.syntax_line_penalty)
    for d in diagnostics:
        add(d.line, cfg.lint.weight(d.severity))
    for line in tests.failing_lines if tests is not None else ():
        add(line, cfg.traceback_line_penalty)
    for line, impact in judge.lines.items() if judge is not None else ():
        add(line, cfg.judge_line_scale * float(impact))
    return penalties


def score_python_completion(
    tokens: TokenizedText,
    config: PythonRewardConfig,
    *,
    tests: TestOutcome | None = None,
    judge: CodeJudgement | None = None,
    block: CodeBlock | None = None,
    analysis: PythonAnalysis | None = None,
) -> TokenReward:
    """The token reward of one response, given its test outcome and judgement (if any).

    ``block`` defaults to :func:`extract_code_block` of the response text and ``analysis``
    to :func:`analyse_python` of its code. Code without any statement (blank or only
    comments) counts as no code.
    """
    cfg = config
    block = block if block is not None else extract_code_block(tokens.text, cfg.languages)
    zeros = np.zeros(len(tokens.ids), dtype=np.float64)
    judge_term = 0.0 if judge is None else cfg.judge_weight * (judge.score or 0.0) / 10.0
    if block is not None and analysis is None:
        analysis = analyse_python(block.source)
    if block is None or analysis is None or analysis.empty:
        info = {"code": None, "judge_score": None if judge is None else judge.score}
        return TokenReward(outcome=cfg.no_code_score + judge_term, local=zeros, info=info)
    syntax, diagnostics = analysis.syntax, analysis.diagnostics
    if syntax is not None:
        outcome = cfg.syntax_error_score
        tests = None  # broken code: the tests are not run and do not count
    else:
        lint = sum(cfg.lint.weight(d.severity) for d in diagnostics)
        outcome = max(cfg.lint_floor, lint)
        if tests is not None:
            outcome += cfg.tests_weight * tests.fraction
    checked = _line_penalties(block, syntax, diagnostics, tests, judge, cfg)
    moves = line_moves(checked, block.n_lines, cfg.lines.noise, key=block.code)
    penalties = apply_line_moves(checked, moves) if cfg.lines.noise else checked
    values = line_values(penalties, block.n_lines, cfg.lines)
    spans = validate_spans(block.line_spans(tokens.text), len(tokens.text), what="line span")
    local = clamp_local(spread_span_scores(tokens.offsets_T2, spans, values), cfg.lines.bound)
    info = {
        "code_span": (block.start, block.end),
        "syntax_error": None if syntax is None else (syntax.line, syntax.message),
        "diagnostics": [(d.line, d.severity, d.kind) for d in diagnostics],
        "tests": None if tests is None else (tests.passed, tests.total),
        "judge_score": None if judge is None else judge.score,
        "line_penalties": dict(sorted(penalties.items())),
    }
    if cfg.lines.noise:
        info["checked_line_penalties"] = dict(sorted(checked.items()))
        info["line_moves"] = moves
    return TokenReward(outcome=outcome + judge_term, local=local, info=info)


def _check_test_rows(tests: Sequence[Any], points: Sequence[Any], name: str) -> None:
    """Every row's tests checked before any completion runs, whether its completion compiles
    or not (a bad row would otherwise end training only when its completion happens to
    compile): ValueError naming the completion's index and the problem."""
    from botgrpo.rewards.sandbox import count_test_cases

    for i, (row, point) in enumerate(zip(tests, points, strict=True)):
        if row is None:
            continue
        try:
            count_test_cases(row, point)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: the tests of completion {i}: {exc}") from None


def _run_tests(
    codes: list[str], tests: list[Any], entry_points: list[str | None], cfg: PythonRewardConfig
) -> list[TestOutcome]:
    from botgrpo.rewards.sandbox import run_python_tests_many

    results = run_python_tests_many(
        codes,
        tests,
        entry_points,
        max_workers=cfg.test_workers,
        timeout_s=cfg.test_timeout_s,
        memory_mb=cfg.test_memory_mb,
    )
    return [TestOutcome(r.passed, r.total, tuple(r.failing_lines)) for r in results]


def _as_judgement(result: Any, source: Any, index: int, n_lines: int) -> CodeJudgement:
    """A judge's answer as a :class:`CodeJudgement`, checked: a score in [0, 10] (any real
    number type) or None, and flagged lines of the judged code (1 to ``n_lines``) with impacts
    -1, -2 or -3. A line outside the code (a judge counting from 0, or past the end) is an
    error: moved to the nearest line it would penalise a line the judge never named."""
    name = getattr(source, "__name__", type(source).__name__)
    if isinstance(result, CodeJudgement):
        score, lines = result.score, result.lines
    elif isinstance(result, Mapping):
        score, lines = result.get("score"), result.get("lines", {})
    elif isinstance(result, tuple) and len(result) == 2:
        score, lines = result
    else:
        score, lines = getattr(result, "score", None), getattr(result, "lines", {})
    where = f"code judge {name!r} on completion {index}"
    real = isinstance(score, numbers.Real) and not isinstance(score, bool)
    if score is not None and not (real and 0 <= score <= 10):
        raise ValueError(f"{where} returned score {score!r}; expected a number in [0, 10] or None")
    # a judge's JSON answer keys its lines with strings: "3" is line 3
    lines = {
        int(k) if isinstance(k, str) and k.strip().isdigit() else k: v
        for k, v in dict(lines or {}).items()
    }
    for line, impact in lines.items():
        if impact not in (-1, -2, -3) or isinstance(impact, bool):
            raise ValueError(
                f"{where} flagged line {line} with impact {impact!r}; use -1, -2 or -3"
            )
        whole = isinstance(line, numbers.Integral) and not isinstance(line, bool)
        if not whole or not 1 <= line <= n_lines:
            raise ValueError(
                f"{where} flagged line {line!r}, outside the code's lines 1-{n_lines}; number "
                "the lines of the judged code from 1"
            )
    return CodeJudgement(None if score is None else float(score), lines)


def _judge_all(
    source: Any, tasks: list[str], blocks: list[CodeBlock], indices: list[int]
) -> list[CodeJudgement]:
    codes = [b.source for b in blocks]
    results = call_verdict_source(source, "judge_code", tasks, codes, "code judge")
    return [
        _as_judgement(r, source, i, max(b.n_lines, 1))
        for r, i, b in zip(results, indices, blocks, strict=True)
    ]


def make_python_code_reward(
    tokenizer: Any,
    config: PythonRewardConfig | Mapping[str, Any] | None = None,
    *,
    code_judge: Callable[[str, str], Any] | Any | None = None,
) -> Callable[..., list[TokenReward]]:
    """A TRL reward function returning one :class:`TokenReward` per completion (recipe 2).

    Args:
        tokenizer: the policy's tokenizer (or processor).
        config: options (or a mapping of them); ``run_tests=True`` (default) reads
            ``config.test_column`` (and ``config.entry_point_column``) from the dataset and
            runs the tests in the sandbox.
        code_judge: optional ``(task, code) -> result`` with ``.score`` (0-10 or None) and
            ``.lines`` ({line: impact}); a dict or a ``(score, lines)`` tuple also works; an
            object with ``judge_many(tasks, codes)`` judges the batch at once; or a mapping
            of :class:`~botgrpo.rewards.judges.JudgeConfig` options for an LLM
            :class:`~botgrpo.rewards.judges.CodeJudge` (so YAML can name one).

    >>> from botgrpo.tiny import build_char_tokenizer
    >>> tok = build_char_tokenizer()
    >>> reward = make_python_code_reward(tok, PythonRewardConfig(run_tests=False))
    >>> text = "Code:\\n```python\\nimport os\\nx = 1\\n```\\n"
    >>> [tr] = reward(prompts=["Set x."], completions=[text], completion_ids=[tok(text).input_ids])
    >>> tr.outcome   # one lint warning (unused import): -0.02
    -0.02
    >>> # line 1 "import os\\n" gets -0.02; line 2 "x = 1\\n" gets -0.02 * phi(1) = -0.015
    >>> [round(float(tr.local[k]), 6) for k in (16, 26, 0)]
    [-0.02, -0.015, 0.0]
    """
    cfg = config_from_mapping(PythonRewardConfig, config)
    tok = resolve_tokenizer(tokenizer)
    name = cfg.name
    code_judge = as_judge(code_judge, "code", "code_judge")

    def reward(
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[TokenReward]:
        tokens = tokenize_completions(tok, completions, completion_ids, name)
        n = len(tokens)
        blocks = [extract_code_block(t.text, cfg.languages) for t in tokens]
        analyses = [None if b is None else analyse_python(b.source) for b in blocks]
        outcomes: dict[int, TestOutcome] = {}
        if cfg.run_tests:
            tests = dataset_column(kwargs, cfg.test_column, n, name)
            points = (
                dataset_column(kwargs, cfg.entry_point_column, n, name)
                if cfg.entry_point_column
                else [None] * n
            )
            _check_test_rows(tests, points, name)
            compiles = [a is not None and a.syntax is None and not a.empty for a in analyses]
            todo = [i for i in range(n) if compiles[i] and tests[i] is not None]
            if todo:
                codes = [blocks[i].source for i in todo]  # type: ignore[union-attr]
                ran = _run_tests(codes, [tests[i] for i in todo], [points[i] for i in todo], cfg)
                outcomes.update(zip(todo, ran, strict=True))
        judged: dict[int, CodeJudgement] = {}
        if code_judge is not None:
            prompt_list = list(prompts) if prompts is not None else [""] * n
            todo = [i for i in range(n) if analyses[i] is not None and not analyses[i].empty]
            if todo:
                tasks = [message_text(prompt_list[i], role="user") for i in todo]
                judging = [blocks[i] for i in todo]
                judged.update(
                    zip(todo, _judge_all(code_judge, tasks, judging, todo), strict=True)  # type: ignore[arg-type]
                )
        return [
            score_python_completion(
                tokens[i],
                cfg,
                tests=outcomes.get(i),
                judge=judged.get(i),
                block=blocks[i],
                analysis=analyses[i],
            )
            for i in range(n)
        ]

    reward.__name__ = reward.__qualname__ = name
    reward.local_bound = cfg.lines.bound  # type: ignore[attr-defined]
    return reward
