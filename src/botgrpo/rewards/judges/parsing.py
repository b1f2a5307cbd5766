"""Lenient parsers of the judges' answers, with validation; they never raise.

Step answers: a JSON value (``{"verdicts": [...]}``, ``{"1": "correct", ...}``, a list of
verdicts or of ``{"step": i, "verdict": v}`` objects) in the whole answer, a fenced block or
embedded in prose; otherwise lines such as ``Step 3: incorrect - reason``. Case, markdown
emphasis, bullets and code fences are ignored.

Code answers: JSON ``{"score": 7, "lines": [{"line": 12, "impact": -2, "reason": "..."}]}``,
otherwise ``SCORE: 7`` (also ``7/10``) and ``LINE 12: -2 (reason)`` lines.

Text up to a reasoning model's closing ``</think>`` tag is ignored. Validation: steps outside 1..n and repeated steps are dropped (the last verdict of a step
wins); steps without a verdict become 0. The score is clamped to [0, 10] (the last ``SCORE``
line wins); line entries with an impact outside {-1, -2, -3}, a line outside the code, a
repeated line, or beyond the third kept line are dropped. No verdict at all, or no score, is a
parse failure and gives the neutral result.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from botgrpo.rewards.judges.results import (
    IMPACTS,
    MAX_FLAGGED_LINES,
    SCORE_RANGE,
    CodeVerdict,
    StepVerdicts,
)

_VERDICT_WORDS = {
    **dict.fromkeys(["correct", "right", "valid", "true", "yes", "pass", "ok", "+1", "1"], 1),
    **dict.fromkeys(["incorrect", "wrong", "invalid", "false", "no", "fail", "error", "-1"], -1),
    **dict.fromkeys(["uncertain", "unsure", "unknown", "unclear", "undetermined", "0"], 0),
}
_STEP_LIST_KEYS = ("verdicts", "steps", "judgements", "judgments", "results", "evaluations")
_STEP_NUMBER_KEYS = ("step", "step_number", "index", "number", "id")
_VERDICT_KEYS = ("verdict", "judgement", "judgment", "label", "result", "status", "evaluation")
_REASON_KEYS = ("reason", "explanation", "comment", "justification", "rationale")
_SCORE_KEYS = ("score", "rating", "overall_score")
_LINE_LIST_KEYS = ("lines", "worst_lines", "issues", "offending_lines", "line_penalties")
_LINE_NUMBER_KEYS = ("line", "line_number", "lineno", "number")
_IMPACT_KEYS = ("impact", "penalty", "severity")

_FENCE = re.compile(r"```[\w+-]*[^\n]*\n(.*?)```", re.S)
_LEAD = r"^[ \t>#*_`\-•+|]*"  # bullets, quotes, headings, emphasis, table cells before an entry
_EMPH = r"[ \t*_`]*"  # spaces and emphasis, never a line break
_STEP_LINE = re.compile(
    _LEAD + r"(step)?" + _EMPH + r"(\d+)"
    + r"((?:" + _EMPH + r"(?:[:.)=(–—|]|-(?!\d)|is\b|verdict\b)" + _EMPH + r")*)(.*)$",
    re.I | re.M,
)  # fmt: skip
_VERDICT_TOKEN = re.compile(
    r"[\s*_`\"'(\[<]*(not\s+)?([+-]?\w+)[\s*_`\"')\]>.!]*([|/]?)(.*)$", re.I | re.S
)
_MARKS = {
    **dict.fromkeys("✅✔✓☑", 1),
    **dict.fromkeys("❌✗✘✖❎", -1),
}  # check and cross marks, as chat models write them in verdict lists
_MARK = re.compile(r"[\s*_`\"'(\[<]*([" + "".join(_MARKS) + r"])\ufe0f?[\s*_`)\]>.!:]*")
_NUMERIC_VERDICT_END = re.compile(r"\s*(?:$|[-–—(:;,]|\s[-–—(])")
_SCORE_LINE = re.compile(
    _LEAD + r"(?:overall[ \t]+|final[ \t]+)?score" + _EMPH + r"[:=]?" + _EMPH
    + r"([+-]?\d+(?:\.\d+)?)(?:[ \t]*/[ \t]*(\d+(?:\.\d+)?))?",
    re.I | re.M,
)  # fmt: skip
_LINE_ENTRY = re.compile(
    _LEAD + r"line" + _EMPH + r"(\d+)" + _EMPH + r"[:=(]?" + _EMPH
    + r"\(?[ \t]*(?:impact" + _EMPH + r"[:=]?[ \t]*)?([+-]?\d+(?:\.\d+)?)[ \t]*\)?(.*)$",
    re.I | re.M,
)  # fmt: skip

Entry = tuple[Any, Any, str]
"""An answer entry before validation: (step or line number, verdict or impact, reason)."""


def parse_step_answer(text: str, n_steps: int) -> StepVerdicts:
    """Verdicts for ``n_steps`` steps from a step judge's answer.

    >>> parse_step_answer("Step 1: correct\\nStep 2: **Incorrect** - sign error", 3).verdicts
    (1, -1, 0)
    >>> parse_step_answer('```json\\n{"verdicts": ["correct", "uncertain"]}\\n```', 2).verdicts
    (1, 0)
    >>> r = parse_step_answer("I think it's fine.", 2)
    >>> r.ok, r.verdicts
    (False, (0, 0))
    """
    if not isinstance(text, str):
        return StepVerdicts.neutral(n_steps, f"answer is not text: {type(text).__name__}")
    answer = _final_answer(text)
    for value in _json_candidates(answer):
        entries = _json_step_entries(value)
        if entries and any(_verdict_value(v) is not None for _, v, _ in entries):
            return _assemble_steps(entries, n_steps, text)
    entries = list(_line_step_entries(answer))
    if not entries:
        return StepVerdicts.neutral(
            n_steps, "unparseable: no 'Step <i>: <verdict>' line or JSON verdicts found", text
        )
    return _assemble_steps(entries, n_steps, text)


def parse_code_answer(text: str, n_lines: int) -> CodeVerdict:
    """Score and flagged lines from a code judge's answer about code of ``n_lines`` lines.

    >>> v = parse_code_answer("SCORE: 7\\nLINE 2: -2 (off by one)\\nLINE 9: -1 (no such line)", 5)
    >>> v.score, dict(v.lines), v.reasons[2], v.dropped
    (7.0, {2: -2}, 'off by one', 1)
    >>> parse_code_answer('{"score": 12, "lines": {"1": -3}}', 5).score
    10.0
    >>> parse_code_answer("LINE 1: -1", 5).ok
    False
    """
    if not isinstance(text, str):
        return CodeVerdict.neutral(f"answer is not text: {type(text).__name__}")
    answer = _final_answer(text)
    for value in _json_candidates(answer):
        if isinstance(value, Mapping) and _pick(value, _SCORE_KEYS) is not None:
            score = _score_value(_pick(value, _SCORE_KEYS))
            if score is not None:
                return _assemble_code(score, _json_line_entries(value), n_lines, text)
    matches = list(_SCORE_LINE.finditer(answer))
    if not matches:
        return CodeVerdict.neutral("unparseable: no 'SCORE: <0-10>' line or JSON score", text)
    last = matches[-1]
    score = _score_value(last.group(1) + (f"/{last.group(2)}" if last.group(2) else ""))
    if score is None:
        return CodeVerdict.neutral(f"unparseable score {last.group(0).strip()!r}", text)
    entries = [(m.group(1), m.group(2), m.group(3)) for m in _LINE_ENTRY.finditer(answer)]
    return _assemble_code(score, entries, n_lines, text)


# ---------------------------------------------------------------- shared helpers


def _final_answer(text: str) -> str:
    """The answer after a reasoning model's ``</think>``, if any (drafts inside are ignored;
    a ``<think>`` never closed leaves no answer), with the typographic minus sign (U+2212,
    ``−3``) written as ``-``."""
    if "</think>" not in text and "<think>" in text:
        text = text.split("<think>", 1)[0]  # still thinking: what follows is a draft
    return text.rsplit("</think>", 1)[-1].replace("\u2212", "-")


def _json_candidates(text: str) -> Iterator[Any]:
    """JSON containers in an answer: the whole answer, fenced blocks, then embedded objects."""
    blocks = [text.strip()] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    for block in blocks:
        try:
            value = json.loads(block)
        except ValueError:
            continue
        if isinstance(value, dict | list):
            yield value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _pick(obj: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` present in ``obj`` (case-insensitive), else None."""
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


def _as_int(value: Any) -> int | None:
    """An integer from an int, an integral finite float or a numeric string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(?:(?:step|line)[\s_-]*)?([+-]?\d+(?:\.0+)?)\s*", value, re.I)
        value = float(match.group(1)) if match else None
    if isinstance(value, int | float) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    return None


def _clean_reason(text: Any) -> str:
    """A reason without the separators and brackets around it."""
    return str(text or "").strip().strip("*_`|").strip(" \t:;,.-–—()[]\"'|").strip()


# ---------------------------------------------------------------- step answers


def _split_verdict(text: str) -> tuple[int | None, str, str]:
    """(verdict or None, the verdict token, the text after it) for the start of ``text``.

    A check or cross mark (``✅ correct``, ``❌``) counts as its verdict; a word after it
    that says the opposite makes the entry ambiguous.
    """
    mark = _MARK.match(text)
    if mark is not None:
        marked = _MARKS[mark.group(1)]
        verdict, token, rest = _split_verdict(text[mark.end() :])
        if verdict is None:  # "✅ the step is right": the mark is the verdict
            return marked, mark.group(1), text[mark.end() :]
        return (verdict if verdict == marked else None), token, rest
    match = _VERDICT_TOKEN.match(text)
    if match is None:
        return None, "", text
    negated, token, alternative, rest = match.groups()
    verdict = _VERDICT_WORDS.get(token.lower())
    echoed = _VERDICT_TOKEN.match(rest) if alternative else None
    if echoed and echoed.group(2).isalpha() and echoed.group(2).lower() in _VERDICT_WORDS:
        verdict = None  # e.g. "correct|incorrect|uncertain" echoed from the prompt
    elif negated and verdict is not None:
        verdict = -1 if verdict == 1 else None  # "not correct" -> -1
    return verdict, token, rest


def _verdict_value(value: Any) -> int | None:
    """+1 / -1 / 0 from a verdict word, number or boolean; None if unrecognised or ambiguous."""
    if isinstance(value, bool):
        return 1 if value else -1
    if isinstance(value, int | float):
        return int(value) if value in (-1, 0, 1) else None
    if not isinstance(value, str):
        return None
    return _split_verdict(value)[0]


def _json_step_entries(value: Any) -> list[Entry] | None:
    """Step entries from a parsed JSON value, or None if it does not look like verdicts."""
    if isinstance(value, Mapping):
        nested = _pick(value, _STEP_LIST_KEYS)
        if nested is not None:
            return _json_step_entries(nested)
        if _pick(value, _VERDICT_KEYS) is not None:
            return _json_step_entries([value])
        numbered = [(_as_int(k), v) for k, v in value.items()]
        if not numbered or any(n is None for n, _ in numbered):
            return None
        return [_json_step_item(n, v) for n, v in numbered]
    if isinstance(value, list):
        plain = [item for item in value if not isinstance(item, Mapping)]
        if any(_verdict_value(item) is None for item in plain):
            return None  # a list such as [1, 2, 3] is not a list of verdicts
        return [_json_step_item(pos, item) for pos, item in enumerate(value, start=1)]
    return None


def _json_step_item(position: int | None, item: Any) -> Entry:
    """One entry from a list item or mapping value (a verdict, or an object holding one)."""
    if not isinstance(item, Mapping):
        return (position, item, "")
    number = _pick(item, _STEP_NUMBER_KEYS)
    number = position if number is None else _as_int(number)
    return (number, _pick(item, _VERDICT_KEYS), _clean_reason(_pick(item, _REASON_KEYS)))


def _line_step_entries(text: str) -> Iterator[Entry]:
    """Entries from ``Step i: verdict`` lines; lines without a verdict word are prose."""
    for match in _STEP_LINE.finditer(text):
        has_step_word, number, separators, rest = match.groups()
        if not (has_step_word or separators.strip()):
            continue  # a bare number without a separator starts prose, not an entry
        verdict, token, after = _split_verdict(rest)
        if token[-1:].isdigit() and not _NUMERIC_VERDICT_END.match(after):
            continue  # "Step 2: 1 + 1 = 2" is arithmetic, not the verdict +1
        if verdict is not None:
            yield (int(number), verdict, _clean_reason(after))


def _assemble_steps(entries: list[Entry], n_steps: int, text: str) -> StepVerdicts:
    """Validate entries into one verdict per step (last one wins; missing steps -> 0)."""
    verdicts: dict[int, int] = {}
    reasons: dict[int, str] = {}
    problems: list[str] = []
    for number, raw_verdict, reason in entries:
        verdict = _verdict_value(raw_verdict)
        if verdict is None:
            problems.append(f"step {number}: unrecognised verdict {raw_verdict!r}")
        elif not isinstance(number, int) or not 1 <= number <= n_steps:
            problems.append(f"step {number!r} is not between 1 and {n_steps}")
        else:
            if number in verdicts:
                problems.append(f"step {number} judged twice; the last verdict is kept")
            verdicts[number] = verdict
            if reason:
                reasons[number] = reason
    if not verdicts:
        result = StepVerdicts.neutral(n_steps, "unparseable: no valid step verdict", text)
        return dataclasses.replace(result, dropped=len(problems), problems=tuple(problems))
    missing = tuple(i for i in range(1, n_steps + 1) if i not in verdicts)
    return StepVerdicts(
        verdicts=tuple(verdicts.get(i, 0) for i in range(1, n_steps + 1)),
        raw=text,
        reasons=reasons,
        missing=missing,
        dropped=len(problems),
        problems=tuple(problems),
    )


# ---------------------------------------------------------------- code answers


def _score_value(value: Any) -> float | None:
    """A finite score from a number or a string such as ``"7"`` or ``"7/10"`` (rescaled)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([+-]?\d+(?:\.\d+)?)\s*(?:/\s*(\d+(?:\.\d+)?))?\s*", value)
        if match is None:
            return None
        scale = float(match.group(2)) if match.group(2) else 10.0
        value = float(match.group(1)) * 10.0 / scale if scale > 0 else None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def _json_line_entries(obj: Mapping[str, Any]) -> list[Entry]:
    """Line entries from a JSON answer: a list of objects or pairs, or ``{line: impact}``."""
    lines = _pick(obj, _LINE_LIST_KEYS)
    if isinstance(lines, Mapping):
        lines = [
            {"line": k, **v} if isinstance(v, Mapping) else {"line": k, "impact": v}
            for k, v in lines.items()
        ]
    if not isinstance(lines, list):
        return []
    entries: list[Entry] = []
    for item in lines:
        if isinstance(item, Mapping):
            reason = _clean_reason(_pick(item, _REASON_KEYS))
            entries.append((_pick(item, _LINE_NUMBER_KEYS), _pick(item, _IMPACT_KEYS), reason))
        elif isinstance(item, list | tuple) and len(item) >= 2:
            entries.append((item[0], item[1], _clean_reason(item[2] if len(item) > 2 else "")))
        else:
            entries.append((item, None, ""))
    return entries


def _assemble_code(score: float, entries: list[Entry], n_lines: int, text: str) -> CodeVerdict:
    """Clamp the score and keep at most three valid, distinct flagged lines."""
    problems: list[str] = []
    low, high = SCORE_RANGE
    if not low <= score <= high:
        problems.append(f"score {score:g} clamped to [{low:g}, {high:g}]")
        score = min(high, max(low, score))
    lines: dict[int, int] = {}
    reasons: dict[int, str] = {}
    dropped = 0
    for raw_line, raw_impact, reason in entries:
        line, impact = _as_int(raw_line), _as_int(raw_impact)
        problem = _line_problem(line, impact, n_lines, lines)
        if problem is not None or line is None or impact is None:
            problems.append(f"line {raw_line!r} (impact {raw_impact!r}) dropped: {problem}")
            dropped += 1
            continue
        lines[line] = impact
        if reason := _clean_reason(reason):
            reasons[line] = reason
    return CodeVerdict(
        score=score,
        lines=lines,
        raw=text,
        reasons=reasons,
        dropped=dropped,
        problems=tuple(problems),
    )


def _line_problem(
    line: int | None, impact: int | None, n_lines: int, kept: Mapping[int, int]
) -> str | None:
    """Why a line entry is invalid, or None if it can be kept."""
    if line is None or not 1 <= line <= n_lines:
        return f"line number must be between 1 and {n_lines}"
    if impact not in IMPACTS:
        return f"impact must be one of {IMPACTS}"
    if line in kept:
        return "line already flagged"
    if len(kept) >= MAX_FLAGGED_LINES:
        return f"at most {MAX_FLAGGED_LINES} lines are kept"
    return None
