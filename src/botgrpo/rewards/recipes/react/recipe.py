"""The React code reward of BoT-GRPO (arXiv 2610.09804, Sec. 3.1, Eqs. 6-7, App. D).

    r_t = G + clamp_B( sum_{l in E} p_l * phi(d(t, l)) ),   phi(d) = max(0, 1 - d/(w+1)),  w = 3

Per completion:

1. Extract the code block (a fence tagged jsx/tsx/js/ts/react, else the first untagged one,
   else the whole response when it parses as TSX and holds JSX); none -> G = ``no_code_score``.
2. Check it with the real toolchain (:func:`~botgrpo.rewards.recipes.react.checks.check_components`).
3. Global G, a sum of
   - compile failure -> ``compile_failure_score`` (nothing else counts but the judges);
   - lint: ESLint messages at fatal -0.5 / error -0.1 / warning -0.02 each (unknown-import
     warnings included), the sum bounded below by ``lint_floor``;
   - render failure (runtime error, timeout) -> ``render_failure_score``;
   - blank page -> ``blank_score`` (the reward hack the paper saw: ~74% "compile" with blank
     pages under compiler + linter alone); not a React component -> ``not_component_score``;
   - code judge: ``judge_weight`` * score / 10 (a missing or unparseable score counts 0);
   - screenshot judge: ``screenshot_weight`` * score / 10; ``screenshot_failure_score`` when the
     code cannot be transformed, 0 when there is no usable screenshot.
4. Line penalties p_l (1-based lines of the code, added up per line): ``compile_line_penalty``
   per compile error line, the severity weight per ESLint line, ``render_line_penalty`` on the
   line a runtime error was thrown from, the code judge's worst lines (impact -1..-3 times
   ``judge_line_scale``). Decay over w lines, spread onto the tokens of each line through the
   response's character offsets, clamp to [-B, B]; prose and fences get 0. With
   ``lines.noise`` (a control), the penalties are first moved or dropped
   (:mod:`botgrpo.rewards.noise`).

``line_penalties=False`` is the GRPO baseline: the same G, no local signal.
"""

from __future__ import annotations

import atexit
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from botgrpo.rewards.calling import (
    call_verdict_source,
    message_text,
    resolve_tokenizer,
    tokenize_completions,
)
from botgrpo.rewards.code_blocks import CodeBlock, extract_code_block, fenced_blocks
from botgrpo.rewards.compose import LineSignalConfig, clamp_local, line_values
from botgrpo.rewards.configs import check_config_types, config_from_mapping
from botgrpo.rewards.judges.options import as_judge
from botgrpo.rewards.noise import apply_line_moves, line_moves
from botgrpo.rewards.recipes.python import CodeJudgement, _as_judgement
from botgrpo.rewards.recipes.react.checks import (
    ReactCheck,
    check_components,
    default_pool,
    screenshot_components,
)
from botgrpo.rewards.recipes.react.worker import WorkerPool
from botgrpo.rewards.sandbox.config import check_timeout
from botgrpo.rewards.spans import TokenizedText, spread_span_scores, validate_spans
from botgrpo.rewards.text import JS_BREAK, count_lines
from botgrpo.rewards.types import TokenReward
from botgrpo.rewards.verifiers import SeverityWeights

__all__ = [
    "REACT_LANGUAGES",
    "ReactRewardConfig",
    "extract_react_block",
    "make_react_code_reward",
    "score_react_completion",
]

REACT_LANGUAGES: tuple[str, ...] = ("jsx", "tsx", "javascript", "js", "typescript", "ts", "react")


@dataclass(frozen=True)
class ReactRewardConfig:
    """Options of the React code reward; defaults are the paper's numbers where it gives them."""

    languages: tuple[str, ...] = REACT_LANGUAGES
    """Fence language tags taken as React code."""
    no_code_score: float = -1.0
    """G when the response has no code block."""
    compile_failure_score: float = -1.0
    """G when the code does not compile (the paper's "large negative penalty"; its value is
    not given there)."""
    render_failure_score: float = -1.0
    """Added to G when the component throws or times out while rendering."""
    blank_score: float = -0.5
    """Added to G when the page renders blank (0 turns the check off)."""
    not_component_score: float = -0.3
    """Added to G when the answer is not a React component (the paper: -0.3)."""
    lint: SeverityWeights = field(default_factory=SeverityWeights)
    """Score per ESLint message by severity (global term and line penalty alike)."""
    lint_floor: float = -1.0
    """The summed lint score is bounded below by this."""
    render: bool = True
    """Render each component in jsdom (off: compile + lint only; no render or blank term)."""
    render_timeout_s: float = 2.0
    """Time limit of one render; longer counts as a render failure."""
    workers: int | None = None
    """Node workers of this reward function's own pool; None shares the process-wide pool
    (one worker per CPU core). Set it when several training processes share a machine."""
    judge_weight: float = 1.0
    """G gains judge_weight * score / 10 when a code judge is given."""
    screenshot_weight: float = 1.0
    """G gains screenshot_weight * score / 10 when a screenshot judge is given."""
    screenshot_failure_score: float = -0.3
    """Screenshot term when the code cannot be extracted or transformed (the paper: -0.3)."""
    line_penalties: bool = True
    """Local line signal on (BoT-GRPO); False gives the GRPO baseline (same G, no S_t)."""
    compile_line_penalty: float = -1.0
    """Penalty on each line with a compile error (the paper: -1 per flagged line)."""
    render_line_penalty: float = -1.0
    """Penalty on the line a runtime error was thrown from."""
    judge_line_scale: float = 0.1
    """A judge's line impact (-1, -2 or -3) times this is its line penalty (paper: /10)."""
    lines: LineSignalConfig = field(default_factory=LineSignalConfig)
    """Decay window w (3), optional 1/|E| normalisation and bound B of the line signal, and
    the random-line control (``noise``)."""
    name: str = "react_code_reward"
    """``__name__`` of the reward function (TRL logs rewards by it)."""

    def __post_init__(self) -> None:
        check_config_types(self)
        for key in (
            "no_code_score",
            "compile_failure_score",
            "render_failure_score",
            "blank_score",
            "not_component_score",
            "lint_floor",
            "judge_weight",
            "screenshot_weight",
            "screenshot_failure_score",
            "compile_line_penalty",
            "render_line_penalty",
            "judge_line_scale",
        ):
            if not math.isfinite(getattr(self, key)):
                raise ValueError(
                    f"ReactRewardConfig.{key} must be finite, got {getattr(self, key)}"
                )
        if self.lint_floor > 0:
            raise ValueError("ReactRewardConfig.lint_floor must be <= 0")
        check_timeout("ReactRewardConfig.render_timeout_s", self.render_timeout_s)
        if self.workers is not None and (not isinstance(self.workers, int) or self.workers < 1):
            raise ValueError(
                f"ReactRewardConfig.workers must be an int >= 1 or None, got {self.workers!r}"
            )
        if not self.languages or not self.name:
            raise ValueError("ReactRewardConfig: languages and name must be set")


def _looks_like_react(text: str) -> bool:
    return ("<" in text and ("return" in text or "=>" in text)) and (
        "export" in text or "function" in text or "import" in text
    )


def extract_react_block(
    text: str, languages: tuple[str, ...] = REACT_LANGUAGES
) -> CodeBlock | None:
    """The response's React code block, or None.

    A fenced block tagged with one of ``languages``, else the first untagged fenced block that
    looks like a component (JSX plus a function or an export; an untagged ``npm install`` block
    before it is not the code), else the first untagged one
    (:func:`botgrpo.rewards.code_blocks.extract_code_block`), else, with no fence at all, the
    whole response when it looks like a component.

    >>> extract_react_block("Here:\\n```jsx\\nconst A = () => <p/>;\\n```\\n").code
    'const A = () => <p/>;\\n'
    """
    block = extract_code_block(text, languages)
    if block is not None and block.language is None:
        untagged = [b for b in fenced_blocks(text) if b.language is None]
        block = next((b for b in untagged if _looks_like_react(b.code)), block)
    if block is not None:
        return block
    if "```" not in text and "~~~" not in text and text.strip() and _looks_like_react(text):
        return CodeBlock(text, 0, len(text), None, fenced=False, closed=True)
    return None


def _global(check: ReactCheck, cfg: ReactRewardConfig) -> tuple[float, dict[str, float]]:
    parts: dict[str, float] = {}
    if not check.compiled:
        parts["compile"] = cfg.compile_failure_score
        return cfg.compile_failure_score, parts
    lint = sum(
        cfg.lint.weight(d.severity)
        for d in check.diagnostics
        if d.source == "lint" or d.rule == "unknown-import"
    )
    parts["lint"] = max(cfg.lint_floor, lint)
    if check.rendered is False and check.is_component:
        parts["render"] = cfg.render_failure_score
    if check.blank is True:
        parts["blank"] = cfg.blank_score
    if not check.is_component:
        parts["not_component"] = cfg.not_component_score
    return sum(parts.values()), parts


def _line_penalties(
    check: ReactCheck, judge: CodeJudgement | None, n_lines: int, cfg: ReactRewardConfig
) -> dict[int, float]:
    penalties: dict[int, float] = {}

    def add(line: int, value: float) -> None:
        at = min(max(int(line), 1), max(n_lines, 1))
        penalties[at] = penalties.get(at, 0.0) + value

    for d in check.diagnostics:
        if d.line is None:
            continue
        if d.source == "compile":
            add(d.line, cfg.compile_line_penalty)
        elif d.source == "render" and d.severity == "fatal":
            add(d.line, cfg.render_line_penalty)
        else:
            add(d.line, cfg.lint.weight(d.severity))
    for line, impact in judge.lines.items() if judge is not None else ():
        add(line, cfg.judge_line_scale * float(impact))
    return penalties


def score_react_completion(
    tokens: TokenizedText,
    config: ReactRewardConfig,
    *,
    check: ReactCheck | None,
    block: CodeBlock | None,
    judge: CodeJudgement | None = None,
    screenshot_score: float | None = None,
) -> TokenReward:
    """The token reward of one response from its block, its check and its judgements.

    ``check`` is None exactly when ``block`` is None (no code). ``screenshot_score`` is the
    screenshot judge's 0-10 score (None: no judge, or no usable screenshot).
    """
    cfg = config
    zeros = np.zeros(len(tokens.ids), dtype=np.float64)
    judge_term = 0.0 if judge is None else cfg.judge_weight * (judge.score or 0.0) / 10.0
    shot_term = 0.0 if screenshot_score is None else cfg.screenshot_weight * screenshot_score / 10.0
    if block is None or check is None:
        info = {"code": None, "judge_score": None if judge is None else judge.score}
        return TokenReward(
            outcome=cfg.no_code_score + judge_term + shot_term, local=zeros, info=info
        )
    outcome, parts = _global(check, cfg)
    n_lines = count_lines(block.code, JS_BREAK)  # Babel and ESLint end lines at U+2028 too
    checked = _line_penalties(check, judge, n_lines, cfg) if cfg.line_penalties else {}
    moves = line_moves(checked, n_lines, cfg.lines.noise, key=block.code)
    penalties = apply_line_moves(checked, moves) if cfg.lines.noise else checked
    values = line_values(penalties, n_lines, cfg.lines)
    spans = block.line_spans(tokens.text, JS_BREAK)
    spans = validate_spans(spans, len(tokens.text), what="line span")
    local = clamp_local(spread_span_scores(tokens.offsets_T2, spans, values), cfg.lines.bound)
    info = {
        "code_span": (block.start, block.end),
        "compiled": check.compiled,
        "rendered": check.rendered,
        "blank": check.blank,
        "is_component": check.is_component,
        "global_parts": parts,
        "diagnostics": [(d.line, d.source, d.severity, d.rule) for d in check.diagnostics],
        "judge_score": None if judge is None else judge.score,
        "screenshot_score": screenshot_score,
        "line_penalties": dict(sorted(penalties.items())),
    }
    if cfg.lines.noise:
        info["checked_line_penalties"] = dict(sorted(checked.items()))
        info["line_moves"] = moves
    return TokenReward(outcome=outcome + judge_term + shot_term, local=local, info=info)


def _screenshot_scores(
    judge: Any, tasks: list[str], codes: list[str], pool: WorkerPool
) -> list[float | None]:
    shots = screenshot_components(codes, pool=pool)
    todo = [i for i, s in enumerate(shots) if s.png is not None]
    scores: list[float | None] = [None] * len(codes)
    if not todo:
        return scores
    pngs = [shots[i].png for i in todo]
    results = call_verdict_source(
        judge, "judge_screenshot", [tasks[i] for i in todo], pngs, "screenshot judge"
    )
    for i, result in zip(todo, results, strict=True):
        score = getattr(result, "score", result)
        number = (
            isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)
        )
        scores[i] = min(max(float(score), 0.0), 10.0) if number else 0.0  # clipped (App. D)
    return scores


def make_react_code_reward(
    tokenizer: Any,
    config: ReactRewardConfig | Mapping[str, Any] | None = None,
    *,
    code_judge: Callable[[str, str], Any] | Any | None = None,
    screenshot_judge: Callable[[str, bytes], Any] | Any | None = None,
) -> Callable[..., list[TokenReward]]:
    """A TRL reward function returning one :class:`TokenReward` per completion.

    Args:
        tokenizer: the policy's tokenizer (or processor).
        config: options (or a mapping of them).
        code_judge: as in :func:`botgrpo.rewards.recipes.python.make_python_code_reward`
            (e.g. :class:`botgrpo.rewards.judges.CodeJudge`, or a mapping of its
            :class:`~botgrpo.rewards.judges.JudgeConfig` options, so YAML can name one).
        screenshot_judge: optional ``(task, png_bytes) -> score`` (or a result with ``.score``),
            clipped to [0, 10]; no number counts 0; or an object with ``judge_screenshot`` /
            ``judge_many`` such as :class:`botgrpo.rewards.judges.ScreenshotJudge`; or a
            mapping of JudgeConfig options for one (a vision model's endpoint).
    """
    cfg = config_from_mapping(ReactRewardConfig, config)
    tok = resolve_tokenizer(tokenizer)
    code_judge = as_judge(code_judge, "code", "code_judge")
    screenshot_judge = as_judge(screenshot_judge, "screenshot", "screenshot_judge")
    name = cfg.name
    own_pool: list[WorkerPool] = []

    def pool() -> WorkerPool:
        if cfg.workers is None:
            return default_pool()
        if not own_pool:
            own_pool.append(WorkerPool(cfg.workers))
            atexit.register(own_pool[0].close)
        return own_pool[0]

    def reward(
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[TokenReward]:
        tokens = tokenize_completions(tok, completions, completion_ids, name)
        n = len(tokens)
        blocks = [extract_react_block(t.text, cfg.languages) for t in tokens]
        blocks = [b if b is not None and b.code.strip() else None for b in blocks]
        todo = [i for i in range(n) if blocks[i] is not None]
        codes = [blocks[i].source for i in todo]  # type: ignore[union-attr]
        checks: dict[int, ReactCheck] = {}
        if todo:
            ran = check_components(
                codes, render=cfg.render, timeout_s=cfg.render_timeout_s, pool=pool()
            )
            checks.update(zip(todo, ran, strict=True))
        prompt_list = list(prompts) if prompts is not None else [""] * n
        tasks = [message_text(prompt_list[i], role="user") for i in todo]
        judged: dict[int, CodeJudgement] = {}
        if code_judge is not None and todo:
            results = call_verdict_source(code_judge, "judge_code", tasks, codes, "code judge")
            judged.update(
                {
                    i: _as_judgement(r, code_judge, i, max(blocks[i].n_lines, 1))  # type: ignore[union-attr]
                    for i, r in zip(todo, results, strict=True)
                }
            )
        shots: dict[int, float | None] = {}
        if screenshot_judge is not None:
            compiled = [k for k, i in enumerate(todo) if checks[i].compiled]
            scores = _screenshot_scores(
                screenshot_judge, [tasks[k] for k in compiled], [codes[k] for k in compiled], pool()
            )
            shots = {todo[k]: s for k, s in zip(compiled, scores, strict=True)}
        with_shots = screenshot_judge is not None
        return [
            _score(
                tokens[i], blocks[i], checks.get(i), judged.get(i), with_shots, shots.get(i), cfg
            )
            for i in range(n)
        ]

    reward.__name__ = reward.__qualname__ = name
    reward.local_bound = cfg.lines.bound  # type: ignore[attr-defined]
    return reward


def _score(
    tokens: TokenizedText,
    block: CodeBlock | None,
    check: ReactCheck | None,
    judge: CodeJudgement | None,
    with_shots: bool,
    shot: float | None,
    cfg: ReactRewardConfig,
) -> TokenReward:
    """score_react_completion plus the screenshot term: the failure score when the code is
    missing or does not transform, 0 without a usable screenshot, else weight * score / 10."""
    if not with_shots or (check is not None and check.compiled):
        return score_react_completion(
            tokens, cfg, check=check, block=block, judge=judge, screenshot_score=shot
        )
    result = score_react_completion(tokens, cfg, check=check, block=block, judge=judge)
    term = cfg.screenshot_failure_score
    info = {**result.info, "screenshot_term": term}
    return TokenReward(outcome=result.outcome + term, local=result.local, info=info)
