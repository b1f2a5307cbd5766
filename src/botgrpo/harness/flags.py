"""A hand check of the verdicts' flags, for a verifier with no exact reference.

The map of where BoT pays (docs/results/where-bot-pays.md, rule 4) found that the flags'
precision decides whether noisy verdicts still help: of the steps the verdicts judge wrong, the
share that really are wrong. BoT kept its lead over the run where at least ``min_flags_right``
of them were (0.43 on the map) and lost it wherever the share was lower. ``botgrpo diagnose``
measures it against a task's exact verdicts; with a verifier of your own there are none, so
diagnose writes a seeded sample of the flagged spans to ``flags.jsonl`` (:func:`sample_flags`):
mark each ``"wrong": true`` or ``false`` by hand, and ``botgrpo check-flags`` reads the share
marked wrong with its 95% Wilson interval against the map (:func:`check_flags`).

A flag is a step the verdicts judge wrong (-1): where the reward names each verdict's
characters (``info["verdict_spans"]``, as every built-in task does) or each token's step
(``TokenReward(steps=...)``) beside its ``info["raw_verdicts"]``, the flag is that step's text.
A reward that gives only token values gets flags read off them: each line's run of tokens with
a negative local value w_s S_t. The sample is a simple random one of all the flags, so the
share marked wrong estimates the precision over all of them (drawing one per rollout first would
favour rollouts with few flags and tilt the estimate).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: The file of sampled flags in a diagnosis folder.
FLAGS_FILE = "flags.jsonl"


def step_token_runs(steps_T: Sequence[int], verdicts: Sequence[int]) -> list[tuple[int, int, int]]:
    """The token range [start, end) of each step judged wrong (-1), with its index.

    >>> step_token_runs([-1, 0, 0, 1, 1, -1, 2], [-1, 1, -1])
    [(1, 3, 0), (6, 7, 2)]
    """
    out = []
    for s, verdict in enumerate(verdicts):
        if verdict != -1:
            continue
        where = [t for t, step in enumerate(steps_T) if step == s]
        if where:  # a step with no token of its own (cut off) has no span
            out.append((where[0], where[-1] + 1, s))
    return out


def penalised_line_runs(local_T: Sequence[float], line_T: Sequence[int]) -> list[tuple[int, int]]:
    """Token ranges [start, end) of consecutive tokens with a negative local value, one range per
    line at most (``line_T``: each token's line), whatever the values' sizes.

    >>> penalised_line_runs([0, -1, -0.5, 0, -1, -1], [0, 0, 0, 0, 0, 1])
    [(1, 3), (4, 5), (5, 6)]
    """
    runs: list[tuple[int, int]] = []
    t, n = 0, len(local_T)
    while t < n:
        if local_T[t] < 0:
            end = t + 1
            while end < n and local_T[end] < 0 and line_T[end] == line_T[t]:
                end += 1
            runs.append((t, end))
            t = end
        else:
            t += 1
    return runs


def _token_lines(text: str, offsets_T2: np.ndarray) -> list[int]:
    """Each token's line: the line breaks before its first character."""
    breaks = np.cumsum([0] + [c == "\n" for c in text])
    return [int(breaks[min(a, len(text))]) for a, _ in offsets_T2.tolist()]


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


def _uniform(found: list[tuple], n: int, seed: int) -> list[tuple]:
    """Up to ``n`` of ``found``, a seeded simple random sample (every flag equally likely), in
    their order."""
    if len(found) <= n:
        return list(found)
    return sorted(random.Random(seed).sample(found, n))


def sample_flags(
    rollouts,
    scored,
    tokenizer,
    n: int,
    seed: int = 0,
    reference: list[list[int] | None] | None = None,
) -> tuple[list[dict], int, str]:
    """Up to ``n`` flags drawn at random from all of them (seeded), how many there were, and what a flag is: ``"step"`` (the verdicts' own steps) or ``"line run"`` (read off
    the token values). Each entry: the prompt, the completion (the reward's decoding of its
    ids), the flagged text and the lines holding it, the penalty on its tokens (sum of w_s S_t;
    0 where the reward does not pass the verdict on, as the chain recipe past a rollout's first
    wrong step), whether the rollout solved its problem, the reference's verdict where one was
    measured on the same steps (``reference_wrong``), and ``"wrong": null`` for the hand
    check."""
    from botgrpo.rewards.spans import offsets_from_ids

    texts: dict[int, Any] = {}

    def tokenized(i: int):
        if i not in texts:
            texts[i] = offsets_from_ids(tokenizer, rollouts.completion_ids[i])
        return texts[i]

    found, kinds, mismatched = [], set(), 0
    for i, ids in enumerate(rollouts.completion_ids):
        verdicts = scored.verdicts[i]
        spans = scored.spans[i] if scored.spans else None
        steps = scored.steps[i] if scored.steps else None
        if verdicts is not None and spans is not None and len(spans) != len(verdicts):
            mismatched += 1
            spans = None
        if verdicts is not None and spans is not None:
            kinds.add("step")
            found += [(i, "chars", a, b, s) for s, (a, b) in enumerate(spans) if verdicts[s] == -1]
        elif verdicts is not None and steps is not None:
            kinds.add("step")
            found += [(i, "tokens", a, b, s) for a, b, s in step_token_runs(steps, verdicts)]
        else:
            local = scored.local_BT[i, : len(ids)].tolist()
            if min(local, default=0.0) >= 0:
                continue
            kinds.add("line run")
            tt = tokenized(i)
            lines = _token_lines(tt.text, tt.offsets_T2)
            found += [(i, "tokens", a, b, None) for a, b in penalised_line_runs(local, lines)]
    entries = []
    for i, unit, a, b, step in _uniform(found, n, seed):
        tt = tokenized(i)
        offsets = tt.offsets_T2
        if unit == "tokens":
            begin, stop = int(offsets[a, 0]), int(offsets[b - 1, 1])
            token_range = (a, b)
        else:
            begin, stop = a, b
            inside = [t for t, (x, y) in enumerate(offsets.tolist()) if x < stop and y > begin]
            token_range = (inside[0], inside[-1] + 1) if inside else (0, 0)
        entry = {
            "rollout": i,
            "prompt": _prompt_text(rollouts.prompts[i // rollouts.k]),
            "completion": tt.text,
            "flagged": tt.text[begin:stop],
            "lines": _lines_around(tt.text, begin, stop),
            "chars": [begin, stop],
            "tokens": list(token_range),
            "penalty": round(float(scored.local_BT[i, token_range[0] : token_range[1]].sum()), 6),
            "rollout_solved": bool(scored.solved_B[i]),
        }
        ref = reference[i] if reference is not None else None
        same_steps = ref is not None and len(ref) == len(scored.verdicts[i] or ())
        if step is not None and same_steps and ref[step] != 0:
            entry["reference_wrong"] = ref[step] == -1
        entry["wrong"] = None
        entries.append(entry)
    kind = " and ".join(sorted(kinds)) if kinds else "none"
    if mismatched:
        kind += (
            f" ({mismatched} rollouts' verdict_spans did not hold one range per raw verdict and "
            "were not used)"
        )
    return entries, len(found), kind


def flags_digest(entries: Sequence[dict]) -> str:
    """A fingerprint of a sample of flags (each flag's rollout, characters and completion, in
    order; not the hand marks), kept in diagnosis.json so that check-flags can tell a flags file
    from another diagnosis."""
    import hashlib

    keys = [[e.get("rollout"), e.get("chars"), e.get("completion")] for e in entries]
    return hashlib.sha256(json.dumps(keys).encode("utf-8")).hexdigest()[:16]


def write_flags(path: Path, entries: list[dict]) -> None:
    from botgrpo.folders import atomic_write_text

    atomic_write_text(path, "".join(json.dumps(e) + "\n" for e in entries))


def check_no_marks(path: Path) -> None:
    """Raise ValueError when ``path`` holds hand marks a new diagnosis would overwrite."""
    if not path.is_file():
        return
    marked = 0
    for line in path.read_text(encoding="utf-8-sig", errors="replace").splitlines():
        try:
            marked += json.loads(line).get("wrong") is not None
        except (json.JSONDecodeError, AttributeError):
            continue
    if marked:
        raise ValueError(
            f"{path} holds {marked} hand marks that a new diagnosis would overwrite: move it "
            "away, or give another --name"
        )


def read_entries(path: Path) -> list[dict]:
    """The entries of a flags file (a diagnosis folder or its flags.jsonl). Raises ValueError
    naming the line of a bad entry."""
    return [entry for _, entry in _numbered_entries(path)]


def _numbered_entries(path: Path) -> list[tuple[int, dict]]:
    """The entries of a flags file with their line numbers (see :func:`read_entries`)."""
    if path.is_dir():
        path = path / FLAGS_FILE
    if not path.is_file():
        raise ValueError(
            f"{path} does not exist: give a diagnosis folder or its {FLAGS_FILE} "
            "(botgrpo diagnose writes it)"
        )
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()  # an editor may add a BOM
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text ({err.reason}): not a flags file") from err
    entries = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{path}, line {number}: not JSON ({err.msg}): give a diagnosis folder or its "
                f"{FLAGS_FILE}, one JSON object per line"
            ) from err
        if not isinstance(entry, dict) or "wrong" not in entry:
            raise ValueError(
                f'{path}, line {number}: no "wrong" field: not a flags file (give a diagnosis '
                f"folder or its {FLAGS_FILE})"
            )
        if entry["wrong"] is not None and not isinstance(entry["wrong"], bool):
            raise ValueError(
                f'{path}, line {number}: "wrong" is {json.dumps(entry["wrong"])}: set it to '
                "true (the flagged step is wrong), false (it is right) or leave it null"
            )
        entries.append((number, entry))
    if not entries:
        raise ValueError(
            f"{path} holds no flags: the verifier judged no step wrong, or diagnose ran with "
            "--flag-sample 0"
        )
    return entries


def read_checked(path: Path) -> tuple[list[bool], int]:
    """The hand marks of a flags file: the ``wrong`` values set to true or false, and how many
    entries are still unmarked (null). Raises ValueError naming the line of a bad entry."""
    entries = read_entries(path)
    marks = [e["wrong"] for e in entries if e["wrong"] is not None]
    if not marks:
        where = path / FLAGS_FILE if path.is_dir() else path
        raise ValueError(
            f'{where}: no flag is marked yet: run botgrpo check-flags --mark, or set "wrong" '
            "to true or false on the lines you checked"
        )
    return marks, len(entries) - len(marks)


def _check_shown(entry: dict, where: str) -> None:
    """ValueError naming the field of an entry that --mark cannot show."""
    problems = []
    if not isinstance(entry.get("completion"), str):
        problems.append('"completion" (the completion\'s text)')
    if "prompt" not in entry:
        problems.append('"prompt"')
    chars = entry.get("chars")
    if chars is not None and not (
        isinstance(chars, list) and len(chars) == 2 and all(type(c) is int for c in chars)
    ):
        problems.append('"chars" ([start, end] in the completion)')
    penalty = entry.get("penalty", 0)
    if isinstance(penalty, bool) or not isinstance(penalty, int | float):
        problems.append('"penalty" (a number)')
    if problems:
        raise ValueError(
            f"{where}: {', '.join(problems)} missing or malformed, which --mark shows: restore "
            "the line as diagnose wrote it, or mark it in an editor"
        )


def show_flag(entry: dict, number: int, total: int) -> str:
    """One flag as the marking prompt shows it: the prompt, then the completion with its lines
    numbered and the flagged lines led by ``>>``."""
    text = entry["completion"]
    begin, stop = entry.get("chars") or (0, 0)
    out = [
        f"--- flag {number} of {total} (rollout {entry.get('rollout', '?')}, penalty "
        f"{entry.get('penalty', 0):+.3f}) ---",
        "prompt:",
    ]
    out += ["    " + line for line in str(entry["prompt"]).splitlines()]
    out.append("completion:")
    at = 0
    for k, line in enumerate(text.split("\n"), 1):
        end = at + len(line)
        hit = stop > begin and begin <= end and stop > at
        out.append(f"{'>>' if hit else '  '} {k:3d}  {line}")
        at = end + 1
    out.append(f"flagged: {str(entry.get('flagged', text[begin:stop])).strip()!r}")
    return "\n".join(out)


def mark_flags(path: Path, ask, say) -> tuple[int, int]:
    """Walk the unmarked flags of ``path``, show each (``say``) and ask (``ask``: a prompt ->
    an answer, EOFError to stop): y marks it wrong, n right, s skips it, q stops. The file is
    rewritten after every mark, so stopping at any point keeps what was marked. Returns the
    marks made and the flags left unmarked."""
    from botgrpo.folders import atomic_write_text

    if path.is_dir():
        path = path / FLAGS_FILE
    numbered = _numbered_entries(path)
    entries = [entry for _, entry in numbered]
    todo = [k for k, e in enumerate(entries) if e["wrong"] is None]
    for k in todo:
        _check_shown(entries[k], f"{path}, line {numbered[k][0]}")
    made = 0
    for number, k in enumerate(todo, 1):
        say(show_flag(entries[k], number, len(todo)))
        while True:
            try:
                answer = ask("Is the flagged step wrong? [y]es, [n]o, [s]kip, [q]uit: ")
            except EOFError:
                answer = "q"
            answer = answer.strip().lower()[:1]
            if answer in ("y", "n", "s", "q"):
                break
        if answer == "q":
            break
        if answer == "s":
            continue
        entries[k]["wrong"] = answer == "y"
        made += 1
        atomic_write_text(path, "".join(json.dumps(e) + "\n" for e in entries))
    return made, sum(e["wrong"] is None for e in entries)


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
    out = f"{head}.\nVerdict: {result['verdict']}: {says}."
    if result.get("same_diagnosis") is False:
        out += (
            "\nNote: these flags are not the sample the diagnosis.json beside them wrote (another "
            "diagnosis's file, or lines added or removed): the check reads them as they are."
        )
    if result.get("exact_verdicts"):
        out += (
            "\nNote: these flags come from a built-in task's own verdicts, exact by "
            "construction; the check measures the marking, not a verifier."
        )
    return out
