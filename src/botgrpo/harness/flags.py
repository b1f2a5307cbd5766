"""A hand check of the verdicts' flags, for a verifier with no exact reference.

The map of where BoT pays (docs/results/where-bot-pays.md, rule 4) found that the flags'
precision decides whether noisy verdicts still help: of the steps the verdicts judge wrong, the
share that really are wrong. BoT kept its lead over the run where at least ``min_flags_right``
of them were (0.43 on the map) and lost it wherever the share was lower. ``botgrpo diagnose``
measures it against a task's exact verdicts; with a verifier of your own there are none, so
diagnose writes a seeded sample of the flagged spans to ``flags.jsonl`` (:func:`sample_flags`):
mark each ``"wrong": true`` or ``false`` by hand, and ``botgrpo check-flags`` reads the share
marked wrong with its 95% Wilson interval against the map (:func:`check_flags`).

A flagged span is a judged step whose verdict is -1 (a reward that returns
``TokenReward(steps=..., info={"raw_verdicts": ...})``, as every built-in task does), else a run
of consecutive tokens with one and the same negative local signal w_s S_t.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The file of sampled flags in a diagnosis folder.
FLAGS_FILE = "flags.jsonl"


def flagged_runs(
    local_T: Sequence[float], steps_T: Sequence[int] | None, verdicts: Sequence[int] | None
) -> list[tuple[int, int, int | None]]:
    """The flagged spans of one rollout as (start, end, step): token ranges [start, end).

    With a step index per token and the step verdicts, a span per step judged wrong (-1), its
    tokens the step's; else, with no steps, a span per run of consecutive tokens carrying the
    same negative local value (step None).

    >>> flagged_runs([0, -1, -1, 0, -1], None, None)
    [(1, 3, None), (4, 5, None)]
    >>> flagged_runs([0, 0, 0, 0], [0, 0, 1, 1], [1, -1])
    [(2, 4, 1)]
    """
    if steps_T is not None and verdicts is not None:
        out = []
        for s, verdict in enumerate(verdicts):
            if verdict != -1:
                continue
            where = [t for t, step in enumerate(steps_T) if step == s]
            if where:
                out.append((where[0], where[-1] + 1, s))
        return out
    runs: list[tuple[int, int, int | None]] = []
    t, n = 0, len(local_T)
    while t < n:
        value = local_T[t]
        if value < 0:
            end = t + 1
            while end < n and local_T[end] == value:
                end += 1
            runs.append((t, end, None))
            t = end
        else:
            t += 1
    return runs


def _char_span(decode, ids: Sequence[int], start: int, end: int, text: str) -> tuple[int, int]:
    """Where tokens [start, end) lie in the decoded completion ``text`` (character offsets)."""
    head = decode(list(ids[:start]))
    piece = decode(list(ids[start:end]))
    if text.startswith(head):
        begin = len(head)
    else:  # a tokenizer whose prefix decodes differently (merged bytes): find the piece
        found = text.find(piece.strip())
        begin = found if found >= 0 else 0
    return begin, min(len(text), begin + len(piece))


def _lines_around(text: str, begin: int, end: int) -> str:
    """The whole lines of ``text`` that hold characters [begin, end)."""
    first = text.rfind("\n", 0, begin) + 1
    last = text.find("\n", max(begin, end - 1))
    return text[first : len(text) if last < 0 else last]


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    users = [m.get("content", "") for m in prompt if m.get("role") == "user"]
    return str(users[-1] if users else prompt)


def sample_flags(
    rollouts,
    scored,
    decode,
    n: int,
    seed: int = 0,
    reference: list[list[int] | None] | None = None,
) -> tuple[list[dict], int]:
    """Up to ``n`` flagged spans drawn at random (seeded) from every rollout, and how many
    there were. Each entry: the prompt, the completion, the flagged text and the lines holding
    it, the penalty on its tokens (sum of w_s S_t; 0 where the reward does not pass the verdict
    on, as the chain recipe past a rollout's first wrong step), whether the rollout solved its problem, the
    reference's verdict where one was measured (``reference_wrong``), and ``"wrong": null`` for
    the hand check."""
    found = []
    for i, ids in enumerate(rollouts.completion_ids):
        steps = scored.steps[i] if scored.steps else None
        local = scored.local_BT[i, : len(ids)].tolist()
        for start, end, step in flagged_runs(local, steps, scored.verdicts[i]):
            found.append((i, start, end, step))
    chosen = sorted(random.Random(seed).sample(found, min(n, len(found))))
    entries = []
    for i, start, end, step in chosen:
        ids, text = rollouts.completion_ids[i], rollouts.texts[i]
        begin, stop = _char_span(decode, ids, start, end, text)
        entry = {
            "rollout": i,
            "prompt": _prompt_text(rollouts.prompts[i // rollouts.k]),
            "completion": text,
            "flagged": text[begin:stop],
            "lines": _lines_around(text, begin, stop),
            "tokens": [start, end],
            "penalty": round(float(scored.local_BT[i, start:end].sum()), 6),
            "rollout_solved": bool(scored.solved_B[i]),
        }
        ref = reference[i] if reference is not None else None
        if step is not None and ref is not None and step < len(ref) and ref[step] != 0:
            entry["reference_wrong"] = ref[step] == -1
        entry["wrong"] = None
        entries.append(entry)
    return entries, len(found)


def write_flags(path: Path, entries: list[dict]) -> None:
    from botgrpo.folders import atomic_write_text

    atomic_write_text(path, "".join(json.dumps(e) + "\n" for e in entries))


def read_checked(path: Path) -> tuple[list[bool], int]:
    """The hand marks of a flags file: the ``wrong`` values set to true or false, and how many
    entries are still unmarked (null). Raises ValueError naming the line of a bad entry."""
    if path.is_dir():
        path = path / FLAGS_FILE
    if not path.is_file():
        raise ValueError(
            f"{path} does not exist: give a diagnosis folder or its {FLAGS_FILE} "
            "(botgrpo diagnose writes it)"
        )
    marks, unmarked = [], 0
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {number}: not JSON ({err.msg})") from err
        if not isinstance(entry, dict) or "wrong" not in entry:
            raise ValueError(f'{path}, line {number}: no "wrong" field: not a flags file')
        wrong = entry["wrong"]
        if wrong is None:
            unmarked += 1
        elif isinstance(wrong, bool):
            marks.append(wrong)
        else:
            raise ValueError(
                f'{path}, line {number}: "wrong" is {json.dumps(wrong)}: set it to true (the '
                "flagged step is wrong), false (it is right) or leave it null"
            )
    if not marks:
        raise ValueError(
            f'{path}: no flag is marked yet: set "wrong" to true or false on the lines you checked'
        )
    return marks, unmarked


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial share k / n (95% at z = 1.96).

    >>> [round(x, 4) for x in wilson(5, 10)]
    [0.2366, 0.7634]
    """
    if n <= 0:
        raise ValueError("wilson needs at least one trial")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def check_flags(marks: Sequence[bool], unmarked: int, rule: dict) -> dict:
    """The flags' precision from the hand marks, against the map's ``min_flags_right``:
    ``precise enough`` when the interval's lower end is at or above it, ``fix the verifier
    first`` when its upper end is below it, else ``check more flags``."""
    n, k = len(marks), sum(marks)
    low, high = wilson(k, n)
    threshold = rule.get("min_flags_right")
    out = {
        "checked": n,
        "unmarked": unmarked,
        "wrong": k,
        "flags_right": k / n,
        "low": low,
        "high": high,
        "min_flags_right": threshold,
    }
    if threshold is None:
        out["verdict"] = "no threshold"
    elif low >= threshold:
        out["verdict"] = "precise enough"
    elif high < threshold:
        out["verdict"] = "fix the verifier first"
    else:
        out["verdict"] = "check more flags"
    return out


def render_check(result: dict) -> str:
    """The hand check in words, as ``botgrpo check-flags`` prints it."""
    n, k = result["checked"], result["wrong"]
    head = (
        f"{k} of {n} checked flags are on wrong steps: the flags' precision is "
        f"{result['flags_right']:.2f} ({result['low']:.2f}-{result['high']:.2f}, 95% Wilson "
        "interval)"
    )
    if result["unmarked"]:
        head += f"; {result['unmarked']} flags not marked yet"
    t = result["min_flags_right"]
    says = {
        "no threshold": "the map reads no threshold on the flags' precision "
        "(docs/results/where-bot-pays.md)",
        "precise enough": f"at or above {t:.2f}, where BoT kept its lead over GRPO on the map "
        "(docs/results/where-bot-pays.md, rule 4): the flags are precise enough",
        "fix the verifier first": f"below {t:.2f}, where every setting on the map lost BoT's "
        "lead (docs/results/where-bot-pays.md, rule 4): fix the verifier first",
        "check more flags": f"the interval holds {t:.2f}, the map's threshold "
        "(docs/results/where-bot-pays.md, rule 4): mark more flags to tell which side it is on",
    }[result["verdict"]]
    return f"{head}.\nVerdict: {result['verdict']}: {says}."
