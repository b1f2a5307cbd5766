"""A task read from a JSONL file: one problem per line, ``{"prompt", "answer", "steps"?}``.

- ``prompt`` (str): the text the model continues; ``answer`` (str or number): the reference
  final answer (a number as written in the file, never in exponent form: ``1e20`` is
  ``100000000000000000000``); ``steps`` (list of str, optional): a reference solution, one
  step per item (one line each, none of them an ``Answer:`` line), used as the warm-start
  demonstration. Other keys (``id``, ``source``, ...) are ignored, with one warning naming them.
- Completions are read in the one-step-per-line layout with a final ``Answer: ...`` line (the
  demonstration format). The outcome is math-verify's verdict on the answer; each step's
  verdict comes from the symbolic verifier (+1 all its equalities hold, -1 one is false, 0
  nothing checkable). A completion is well formed when it ends in an answer line after at least
  one step; on a row without ``steps`` the answer line alone is well formed too (the row's
  demonstration is just that line).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import warnings
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from botgrpo.rewards.steps import parse_steps
from botgrpo.rewards.verifiers.answers import check_answer
from botgrpo.rewards.verifiers.symbolic import check_step
from botgrpo.tasks.base import Example, Score, StepVerdict


def read_jsonl_problems(path: str | Path) -> list[dict]:
    """Rows of a JSONL problem file, validated (the error names the line). UTF-8, with or
    without a byte-order mark; lines end at ``\\n`` (a ``\\r`` before it is JSON whitespace),
    so a JSON string holding U+2028 or U+0085 as written by ``ensure_ascii=False`` stays one
    line."""
    rows = []
    answered: dict[str, tuple[int, str]] = {}  # prompt -> (its first line, its answer)
    ignored: dict[str, int] = {}  # a key botgrpo does not read -> its first line
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        line = Path(path).read_bytes()[: err.start].count(b"\n") + 1
        raise ValueError(
            f"{path}:{line}: not UTF-8 text ({err.reason}); save it as UTF-8"
        ) from None
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line, parse_float=Decimal)  # 2.50 stays 2.50, 1e20 exact
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{n}: not valid JSON ({err.msg})") from err
        if not isinstance(row, dict) or "prompt" not in row or "answer" not in row:
            raise ValueError(f"{path}:{n}: each line needs an object with 'prompt' and 'answer'")
        if not isinstance(row["prompt"], str) or not row["prompt"].strip():
            raise ValueError(
                f"{path}:{n}: 'prompt' must be a non-empty string, got {row['prompt']!r}"
            )
        answer = row["answer"]
        blank = isinstance(answer, str) and not answer.strip()
        odd = isinstance(answer, float | Decimal) and not math.isfinite(answer)
        if (
            isinstance(answer, bool)
            or not isinstance(answer, str | int | float | Decimal)
            or blank
            or odd
        ):
            shown = float(answer) if isinstance(answer, Decimal) else answer
            raise ValueError(
                f"{path}:{n}: 'answer' must be a non-blank string or a finite number, got {shown!r}"
            )
        answer = format(answer, "f") if isinstance(answer, Decimal) else str(answer)
        steps = row.get("steps")
        if steps is not None and not (
            isinstance(steps, list) and all(isinstance(s, str) for s in steps)
        ):
            raise ValueError(f"{path}:{n}: 'steps' must be a list of strings")
        for i, step in enumerate(steps or [], 1):
            _check_step(step, f"{path}:{n}: step {i}")
        first, before = answered.setdefault(row["prompt"], (n, answer))
        if before != answer:
            raise ValueError(
                f"{path}:{n}: the prompt of line {first} again, with another answer "
                f"({before!r} there, {answer!r} here): keep one answer per prompt"
            )
        for key in row.keys() - {"prompt", "answer", "steps"}:
            ignored.setdefault(key, n)
        rows.append({"prompt": row["prompt"], "answer": answer, "steps": steps})
    if not rows:
        raise ValueError(f"{path}: no problems found")
    if ignored:
        keys = ", ".join(
            f"{k!r} (line {n})" for k, n in sorted(ignored.items(), key=lambda kv: kv[1])
        )
        warnings.warn(
            f"{path}: keys other than 'prompt', 'answer' and 'steps' are ignored: {keys}",
            stacklevel=2,
        )
    return rows


def _check_step(step: str, where: str) -> None:
    """A reference step is one non-blank line that is not an answer line (the demonstration
    writes each step on a line of its own, then ``Answer: ...``)."""
    if not step.strip():
        raise ValueError(f"{where} is blank: drop it")
    if "\n" in step.strip() or "\r" in step.strip():
        raise ValueError(f"{where} spans several lines: give each line as a step of its own")
    if parse_steps(step, "lines").final is not None:
        raise ValueError(
            f"{where} is an answer line ({step.strip()[:40]!r}): the demonstration ends with "
            "'Answer: <answer>' itself; drop it from 'steps'"
        )


@dataclass(frozen=True)
class JsonlTask:
    """Problems from a JSONL file (see the module docstring).

    Attributes:
        path: the JSONL file.
        name: the task's name in logs.
    """

    path: str
    name: str = "jsonl"
    _rows: list[dict] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.path != self.path.strip():
            raise ValueError(
                f"jsonl:{self.path} has spaces around its path: write jsonl:{self.path.strip()}"
            )
        object.__setattr__(self, "path", str(Path(self.path).expanduser()))
        self._rows.extend(read_jsonl_problems(self.path))

    def fingerprint(self) -> str:
        """Hash of the file's content: an edited file is a different task."""
        return hashlib.sha256(Path(self.path).read_bytes()).hexdigest()

    def all_problems(self) -> list[Example]:
        """Every row as an example (a finite task's whole content, for checks that must see
        every row, such as whether a tokenizer can write it)."""
        return [Example(r["prompt"], r["answer"], {"row": i}) for i, r in enumerate(self._rows)]

    def sample(self, rng: random.Random) -> Example:
        """A uniformly drawn row."""
        i = rng.randrange(len(self._rows))
        row = self._rows[i]
        return Example(row["prompt"], row["answer"], {"row": i})

    def demonstration(self, example: Example) -> str:
        """The reference steps (if any), one per line, then ``Answer: ...``."""
        steps = self._rows[example.meta["row"]]["steps"] or []
        return "\n".join([*steps, f"Answer: {example.answer}"])

    def score(self, example: Example, completion: str) -> Score:
        """math-verify outcome, symbolic step verdicts, format."""
        parsed = parse_steps(completion, "lines")
        verdicts = tuple(
            StepVerdict(s.start, s.end, check_step(s.text).verdict) for s in parsed.steps
        )
        answer = parsed.final_text
        correct = answer is not None and check_answer(answer, example.answer).correct
        stepless = not self._rows[example.meta["row"]]["steps"]  # its demonstration: the answer
        formats = ("well_formed", "missing") if stepless else ("well_formed",)
        return Score(
            float(correct), verdicts, parsed.verdict in formats and answer is not None, answer
        )
