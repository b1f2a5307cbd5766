"""The hand check of a verifier's flags: diagnose's sample of flagged steps (flags.jsonl) and
``botgrpo check-flags``, which reads the hand marks against the map's ``min_flags_right``."""

from __future__ import annotations

import json

import pytest
import torch

from botgrpo.cli import main
from botgrpo.harness.diagnosis import Rollouts, Scored
from botgrpo.harness.flags import (
    _char_span,
    check_flags,
    flagged_runs,
    read_checked,
    sample_flags,
    wilson,
)


def _chars(ids):
    return "".join(chr(i) for i in ids)


def test_flagged_runs_follow_the_step_verdicts_where_steps_are_given():
    steps = [-1, 0, 0, 0, -1, 1, 1, -1, 2, 2]
    # the local signal is ignored when steps and verdicts say where the flags are
    assert flagged_runs([0.0] * 10, steps, [-1, 1, -1]) == [(1, 4, 0), (8, 10, 2)]
    assert flagged_runs([0.0] * 10, steps, [1, 1, 1]) == []
    # a verdict on a step with no token of its own (cut off) has no span
    assert flagged_runs([0.0] * 4, [0, 0, 1, 1], [1, 1, -1]) == []


def test_without_steps_a_flag_is_a_run_of_one_negative_value():
    local = [0.0, -0.5, -0.5, -0.25, 0.0, 0.5, -0.5]
    assert flagged_runs(local, None, None) == [(1, 3, None), (3, 4, None), (6, 7, None)]
    assert flagged_runs([0.1, 0.0], None, None) == []


def _batch(texts, local_rows, steps=None, verdicts=None, k=2):
    ids = [[ord(c) for c in t] for t in texts]
    width = max(map(len, ids))
    local_BT = torch.zeros(len(texts), width, dtype=torch.float64)
    for i, row in enumerate(local_rows):
        local_BT[i, : len(row)] = torch.tensor(row, dtype=torch.float64)
    rollouts = Rollouts(
        prompts=[f"p{j}" for j in range(len(texts) // k)],
        columns={},
        completion_ids=ids,
        texts=list(texts),
        truncated=[False] * len(texts),
        k=k,
        seconds=0.0,
    )
    scored = Scored(
        torch.zeros(len(texts), dtype=torch.float64),
        local_BT,
        local_BT != 0,
        torch.tensor([False, True] * (len(texts) // 2)),
        verdicts or [None] * len(texts),
        steps=steps or [],
    )
    return rollouts, scored


def test_the_sample_carries_the_flagged_text_its_lines_and_the_reference():
    texts = ["x = 1\ny = x +\nz = 3", "ab\ncd"]
    steps = [[0] * 6 + [1] * 8 + [2] * 5, [0, 0, 0, 1, 1]]
    rollouts, scored = _batch(texts, [[0.0] * 19, [0.0] * 5], steps, [[1, -1, -1], [-1, 1]])
    entries, total = sample_flags(rollouts, scored, _chars, 10, reference=[[1, -1, 1], [1, 1]])
    assert total == 3
    assert [e["flagged"] for e in entries] == ["y = x +\n", "z = 3", "ab\n"]
    assert [e["lines"] for e in entries] == ["y = x +", "z = 3", "ab"]
    assert [e["reference_wrong"] for e in entries] == [True, False, False]
    assert [e["prompt"] for e in entries] == ["p0", "p0", "p0"]
    assert all(e["wrong"] is None for e in entries)
    # a smaller sample is a seeded draw of the same flags
    some, total = sample_flags(rollouts, scored, _chars, 2, seed=3)
    assert total == 3 and len(some) == 2
    assert some == sample_flags(rollouts, scored, _chars, 2, seed=3)[0]
    assert {e["flagged"] for e in some} <= {e["flagged"] for e in entries}


def test_a_users_token_penalties_without_steps_are_sampled_as_runs():
    texts = ["good\nbad line\nok", "fine"]
    local = [[0.0] * 5 + [-0.5] * 8 + [0.0] * 3, [0.0] * 4]
    rollouts, scored = _batch(texts, local)
    entries, total = sample_flags(rollouts, scored, _chars, 10)
    assert total == 1
    assert entries[0]["flagged"] == "bad line" and entries[0]["lines"] == "bad line"
    assert entries[0]["penalty"] == -4.0 and "reference_wrong" not in entries[0]


def test_a_prefix_that_decodes_otherwise_still_finds_the_flagged_text():
    def tidy(ids):  # a tokenizer that tidies " ." into "." when decoding
        return _chars(ids).replace(" .", ".")

    ids = [ord(c) for c in "ok .\nbad"]
    text = tidy(ids)  # "ok.\nbad": the tokens before the flag decode to "ok ", no prefix of it
    begin, end = _char_span(tidy, ids, 3, 8, text)
    assert text[begin:end] == ".\nbad"


def test_wilson_interval():
    assert [round(x, 4) for x in wilson(5, 10)] == [0.2366, 0.7634]
    low, high = wilson(0, 20)
    assert low == 0.0 and 0.16 < high < 0.17
    low, high = wilson(20, 20)
    assert 0.83 < low < 0.84 and high == 1.0
    with pytest.raises(ValueError):
        wilson(0, 0)


@pytest.mark.parametrize(
    ("wrong", "of", "verdict"),
    [(80, 100, "precise enough"), (20, 100, "fix the verifier first"), (5, 10, "check more flags")],
)
def test_the_check_reads_the_interval_against_the_maps_threshold(wrong, of, verdict):
    marks = [True] * wrong + [False] * (of - wrong)
    result = check_flags(marks, 3, {"min_flags_right": 0.43})
    assert result["verdict"] == verdict
    assert result["flags_right"] == wrong / of and result["unmarked"] == 3
    assert check_flags(marks, 0, {})["verdict"] == "no threshold"


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        (None, "does not exist"),
        (['{"wrong": true', {"wrong": None}], "line 1: not JSON"),
        ([{"wrong": True}, {"flagged": "x"}], 'line 2: no "wrong" field'),
        ([{"wrong": "yes"}], '"wrong" is "yes"'),
        ([{"wrong": None}, {"wrong": None}], "no flag is marked yet"),
    ],
)
def test_bad_flag_files_end_in_one_line(tmp_path, capsys, rows, says):
    path = tmp_path / "flags.jsonl"
    if rows is not None:
        _write(path, rows)
    before = sorted(tmp_path.iterdir())
    assert main(["check-flags", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err
    assert sorted(tmp_path.iterdir()) == before
    with pytest.raises(ValueError, match=says.split(":")[-1].strip()[:12]):
        read_checked(path)


def test_check_flags_takes_a_diagnosis_folder_and_counts_the_unmarked(tmp_path, capsys):
    _write(tmp_path / "flags.jsonl", [{"wrong": True}] * 9 + [{"wrong": False}, {"wrong": None}])
    assert main(["check-flags", str(tmp_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["checked"], result["wrong"], result["unmarked"]) == (10, 9, 1)
    assert result["verdict"] == "precise enough"  # 0.90 (0.60-0.98) against the map's 0.43
    assert main(["check-flags", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "9 of 10 checked flags are on wrong steps" in out and "1 flags not marked" in out


def test_marking_the_sample_as_the_reference_does_gives_diagnoses_precision(tmp_path, capsys):
    """End to end: diagnose with noisy verdicts writes every flagged step; marked by the exact
    verdicts, check-flags reads the same precision diagnose measured against them."""
    args = ["diagnose", "--task", "chain", "--verdict-noise", "0.3", "--prompts", "8"]
    args += ["--out-dir", str(tmp_path), "--progress", "false", "--flag-sample", "100000"]
    assert main(args) == 0
    assert "botgrpo check-flags" in capsys.readouterr().out
    folder = tmp_path / "diagnose"
    result = json.loads((folder / "diagnosis.json").read_text())
    entries = [json.loads(line) for line in (folder / "flags.jsonl").read_text().splitlines()]
    assert "flags" not in result and not result["exact_verdicts"]
    assert result["flag_sample"] == {"sampled": len(entries), "of": len(entries)}
    assert len(entries) > 50
    for e in entries:  # a chain step is one keyed line of its completion
        assert e["flagged"].strip() == e["lines"] and e["lines"] in e["completion"].splitlines()
        assert e["penalty"] <= 0  # 0 where the recipe does not penalise it (after the first error)
        e["wrong"] = e["reference_wrong"]
    _write(folder / "flags.jsonl", entries)
    assert main(["check-flags", str(folder), "--json"]) == 0
    check = json.loads(capsys.readouterr().out)
    assert check["flags_right"] == pytest.approx(result["verdicts"]["flags_right"])
    assert check["verdict"] == "fix the verifier first"  # 30% flipped: the map lost the lead
