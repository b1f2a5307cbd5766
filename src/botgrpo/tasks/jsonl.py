"""A task read from a JSONL file: one problem per line, ``{"prompt", "answer", "steps"?}``.

- ``prompt`` (str): the text the model continues; ``answer`` (str or number): the reference
  final answer; ``steps`` (list of str, optional): a reference solution, one step per item,
  used as the warm-start demonstration.
- Completions are read in the one-step-per-line layout with a final ``Answer: ...`` line (the
  demonstration format). The outcome is math-verify's verdict on the answer; each step's
  verdict comes from the symbolic verifier (+1 all its equalities hold, -1 one is false, 0
  nothing checkable).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass, field
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
            row = json.loads(line)
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
        odd = isinstance(answer, float) and not math.isfinite(answer)
        if isinstance(answer, bool) or not isinstance(answer, str | int | float) or blank or odd:
            raise ValueError(
                f"{path}:{n}: 'answer' must be a non-blank string or a finite number, got {answer!r}"
            )
        steps = row.get("steps")
        if steps is not None and not (
            isinstance(steps, list) and all(isinstance(s, str) for s in steps)
        ):
            raise ValueError(f"{path}:{n}: 'steps' must be a list of strings")
        first, before = answered.setdefault(row["prompt"], (n, str(answer)))
        if before != str(answer):
            raise ValueError(
                f"{path}:{n}: the prompt of line {first} again, with another answer "
                f"({before!r} there, {str(answer)!r} here): keep one answer per prompt"
            )
        rows.append({"prompt": str(row["prompt"]), "answer": str(row["answer"]), "steps": steps})
    if not rows:
        raise ValueError(f"{path}: no problems found")
    return rows


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
        return Score(
            float(correct), verdicts, parsed.verdict == "well_formed" and answer is not None, answer
        )
