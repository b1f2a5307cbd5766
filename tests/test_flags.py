"""The hand check of a verifier's flags: diagnose's sample of flagged steps (flags.jsonl) and
``botgrpo check-flags``, which reads the hand marks against the map's ``min_flags_right``."""

from __future__ import annotations

import json

import pytest
import torch

from botgrpo.cli import main
from botgrpo.harness.diagnosis import Rollouts, Scored
from botgrpo.harness.flags import (
    check_flags,
    penalised_line_runs,
    read_checked,
    sample_flags,
    show_flag,
    step_token_runs,
    wilson,
)
from botgrpo.tiny import build_char_tokenizer

TOK = build_char_tokenizer()


def test_step_flags_follow_the_step_verdicts():
    steps = [-1, 0, 0, 0, -1, 1, 1, -1, 2, 2]
    assert step_token_runs(steps, [-1, 1, -1]) == [(1, 4, 0), (8, 10, 2)]
    assert step_token_runs(steps, [1, 1, 1]) == []
    # a verdict on a step with no token of its own (cut off) has no span
    assert step_token_runs([0, 0, 1, 1], [1, 1, -1]) == []


def test_without_steps_a_flag_is_a_lines_run_of_negative_values():
    # values that vary along a line (a per-token PRM score) stay one flag; a run that goes on
    # into the next line (two adjacent wrong steps of one value, Eq. 8) splits at the break
    local = [0.0, -0.5, -0.25, -0.75, 0.0, -0.5, -0.5, -0.5, 0.5, -0.5]
    lines = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert penalised_line_runs(local, lines) == [(1, 4), (5, 6), (6, 8), (9, 10)]
    assert penalised_line_runs([0.1, 0.0], [0, 0]) == []


def _batch(texts, local_rows, *, steps=None, spans=None, verdicts=None, k=2):
    ids = [TOK(t).input_ids for t in texts]
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
        torch.tensor([i % 2 == 1 for i in range(len(texts))]),
        verdicts or [None] * len(texts),
        steps=steps or [],
        spans=spans or [],
    )
    return rollouts, scored


TEXTS = ["x = 1\ny = x +\nz = 3", "ab\ncd"]
VERDICTS = [[1, -1, -1], [-1, 1]]


@pytest.mark.parametrize("named", ["spans", "steps"])
def test_the_sample_carries_the_flagged_step_its_lines_and_the_reference(named):
    """A reward naming its verdicts' characters, or its tokens' steps: the same flags."""
    where = {
        "spans": {"spans": [[(0, 6), (6, 14), (14, 19)], [(0, 3), (3, 5)]]},
        "steps": {"steps": [[0] * 6 + [1] * 8 + [2] * 5, [0, 0, 0, 1, 1]]},
    }[named]
    local = [[0.0] * 6 + [-0.25] * 8 + [0.0] * 5, [-0.5] * 3 + [0.0] * 2]
    rollouts, scored = _batch(TEXTS, local, verdicts=VERDICTS, **where)
    reference = [[1, -1, 1], [1, 1]]
    entries, total, kind = sample_flags(rollouts, scored, TOK, 10, reference=reference)
    assert (total, kind) == (3, "step")
    assert [e["flagged"] for e in entries] == ["y = x +\n", "z = 3", "ab\n"]
    assert [e["lines"] for e in entries] == ["y = x +", "z = 3", "ab"]
    assert [e["penalty"] for e in entries] == [-2.0, 0.0, -1.5]
    assert [e["reference_wrong"] for e in entries] == [True, False, False]
    assert [e["prompt"] for e in entries] == ["p0", "p0", "p0"]
    assert all(e["wrong"] is None for e in entries)
    # a reference that judged other steps (another count) is not matched to these
    entries, _, _ = sample_flags(rollouts, scored, TOK, 10, reference=[[1, -1], [1, 1]])
    assert "reference_wrong" not in entries[0] and entries[2]["reference_wrong"] is False


def test_a_sample_is_seeded_and_takes_every_flag_when_there_are_few():
    texts = ["a\nb\nc\nd", "e\nf", "g\nh"]
    spans = [[(0, 2), (2, 4), (4, 6), (6, 7)], [(0, 2), (2, 3)], [(0, 2), (2, 3)]]
    verdicts = [[-1, -1, -1, -1], [-1, 1], [1, -1]]
    rollouts, scored = _batch(texts, [[0.0]] * 3, spans=spans, verdicts=verdicts, k=3)
    for seed in range(5):
        some, total, _ = sample_flags(rollouts, scored, TOK, 3, seed=seed)
        assert total == 6 and len(some) == 3
        assert some == sample_flags(rollouts, scored, TOK, 3, seed=seed)[0]
    everything, _, _ = sample_flags(rollouts, scored, TOK, 100)
    assert len(everything) == 6


def test_a_sample_weighs_every_flag_alike_so_the_marked_share_estimates_all_flags():
    """One rollout holds 30 of the 40 flags: a uniform sample of 8 takes 6 from it on average,
    where drawing one per rollout first would take at most 1 (and tilt the precision)."""
    texts = ["\n".join("x" * 30), *["y"] * 10]
    spans = [[(2 * j, 2 * j + 1) for j in range(30)], *[[(0, 1)]] * 10]
    verdicts = [[-1] * 30, *[[-1]] * 10]
    rollouts, scored = _batch(texts, [[0.0]] * 11, spans=spans, verdicts=verdicts, k=11)
    from_heavy = []
    for seed in range(300):
        some, total, _ = sample_flags(rollouts, scored, TOK, 8, seed=seed)
        assert total == 40 and len(some) == 8
        from_heavy.append(sum(e["rollout"] == 0 for e in some))
    assert 5.5 < sum(from_heavy) / len(from_heavy) < 6.5


def test_a_users_token_penalties_without_steps_are_sampled_as_line_runs():
    texts = ["good\nbad line\nok", "fine"]
    local = [[0.0] * 5 + [-0.5] * 9 + [-0.25] * 2, [0.0] * 4]
    rollouts, scored = _batch(texts, local)
    entries, total, kind = sample_flags(rollouts, scored, TOK, 10)
    assert (total, kind) == (2, "line run")
    assert [e["flagged"] for e in entries] == ["bad line\n", "ok"]
    assert [e["lines"] for e in entries] == ["bad line", "ok"]
    assert [e["penalty"] for e in entries] == [-4.5, -0.5]
    assert "reference_wrong" not in entries[0]
    assert sample_flags(rollouts, scored, TOK, 0)[:2] == ([], 2)


def test_step_spans_that_do_not_match_the_verdicts_are_not_used_and_said():
    """Three verdicts with two character ranges: the ranges cannot be paired with the verdicts,
    so the flags are read off the token values and the kind says why."""
    texts = ["good\nbad line\nok", "fine"]
    local = [[0.0] * 5 + [-0.5] * 9 + [0.0] * 2, [0.0] * 4]
    rollouts, scored = _batch(
        texts, local, spans=[[(0, 4), (5, 13)], [(0, 4)]], verdicts=[[1, -1, 1], [1]]
    )
    entries, total, kind = sample_flags(rollouts, scored, TOK, 10)
    assert total == 1 and entries[0]["lines"] == "bad line"
    assert kind.startswith("line run and step (1 rollouts' verdict_spans did not hold one")


def test_the_marking_prompt_shows_the_flagged_lines():
    rollouts, scored = _batch(
        TEXTS,
        [[0.0] * 19, [0.0] * 5],
        spans=[[(0, 6), (6, 14), (14, 19)], [(0, 3), (3, 5)]],
        verdicts=VERDICTS,
    )
    entry = sample_flags(rollouts, scored, TOK, 1)[0][0]
    shown = show_flag(entry, 1, 1).splitlines()
    marked = [line for line in shown if line.startswith(">>")]
    assert len(marked) == 1 and marked[0].endswith(entry["lines"])


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
        (['{"exact_verdicts": true,', '"flags_right": 0.5}'], "give a diagnosis folder or its"),
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
    sample = {k: v for k, v in result["flag_sample"].items() if k != "digest"}
    assert sample == {"sampled": len(entries), "of": len(entries), "kind": "step"}
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
    # the marks do not change the sample's fingerprint; a line taken out does
    assert check["same_diagnosis"] is True and check["exact_verdicts"] is False
    _write(folder / "flags.jsonl", entries[1:])
    assert main(["check-flags", str(folder)]) == 0
    assert "not the sample the diagnosis.json beside them wrote" in capsys.readouterr().out


def test_a_code_tasks_flag_is_the_flagged_line_not_its_decayed_neighbours():
    """The python task spreads a line's penalty over the lines around it (w = 3); its flags are
    the lines its verdicts judge wrong, one each."""
    from botgrpo.harness.diagnosis import score_rollouts
    from botgrpo.tasks.data import sample_examples
    from botgrpo.tasks.functions import PythonFunctions
    from botgrpo.tasks.reward import task_reward
    from botgrpo.tasks.teacher import Teacher

    task = PythonFunctions(helpers=3, teacher=Teacher())  # a teacher that never slips
    ex = sample_examples(task, 1, "flags")[0]
    good = task.demonstration(ex)
    lines = good.split("\n")
    at = next(k for k, line in enumerate(lines) if line.strip().startswith("return ") and k > 3)
    lines[at] = lines[at].replace("return ", "return undefined_name + ", 1)
    texts = [good, "\n".join(lines)]
    ids = [TOK(t).input_ids for t in texts]
    rollouts = Rollouts(
        [ex.prompt],
        {c: [v] for c, v in ex.to_row().items() if c != "prompt"},
        ids,
        texts,
        [False, False],
        2,
        0.0,
    )
    scored = score_rollouts(rollouts, [task_reward(task, TOK)], w_g=3.0, w_s=0.5)
    assert (scored.local_BT[1] < 0).sum() > len(lines[at])  # the penalty spreads past the line
    entries, total, kind = sample_flags(rollouts, scored, TOK, 10)
    assert scored.verdicts[0].count(-1) == 0 and scored.verdicts[1].count(-1) == 1
    assert kind == "step" and total == 1
    assert entries[0]["rollout"] == 1 and entries[0]["lines"] == lines[at]


def test_a_new_diagnosis_keeps_a_folders_hand_marks(tmp_path, capsys):
    folder = tmp_path / "diagnose"
    folder.mkdir()
    marked = _write(folder / "flags.jsonl", [{"wrong": True}, {"wrong": None}])
    before = marked.read_text()
    args = ["diagnose", "--task", "chain", "--prompts", "2", "--out-dir", str(tmp_path)]
    assert main([*args, "--progress", "false"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds 1 hand marks" in err and "--name" in err
    assert marked.read_text() == before and sorted(p.name for p in folder.iterdir()) == [
        "flags.jsonl"
    ]


def test_marking_by_prompt_saves_each_answer_and_reads_the_check(tmp_path):
    """`check-flags --mark` in a real process, answered on its stdin: y, n, an unknown answer
    asked again, s, then the input ends (a stop)."""
    import subprocess
    import sys

    rows = [
        {
            "rollout": k,
            "prompt": "p",
            "completion": f"a\nstep {k}\nb",
            "flagged": f"step {k}",
            "lines": f"step {k}",
            "chars": [2, 8],
            "penalty": -0.5,
            "wrong": None,
        }
        for k in range(5)
    ]
    path = _write(tmp_path / "flags.jsonl", rows)
    run = subprocess.run(
        [sys.executable, "-m", "botgrpo.cli", "check-flags", str(tmp_path), "--mark"],
        input="y\nn\nmaybe\ny\ns\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert ">>   2  step 0" in run.stdout and "flag 1 of 5" in run.stdout
    assert "3 flags marked; 2 left unmarked" in run.stdout
    assert "2 of 3 checked flags are on wrong steps" in run.stdout
    marks = [json.loads(line)["wrong"] for line in path.read_text().splitlines()]
    assert marks == [True, False, True, None, None]


def test_a_flags_file_saved_with_a_byte_order_mark_is_read(tmp_path, capsys):
    path = tmp_path / "flags.jsonl"
    path.write_text("".join(json.dumps({"wrong": w}) + "\n" for w in (True, False)), "utf-8-sig")
    assert path.read_bytes()[:3] == b"\xef\xbb\xbf"
    assert main(["check-flags", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checked"] == 2


@pytest.mark.parametrize(
    ("broken", "says"),
    [
        ({"prompt": None}, '"prompt"'),
        ({"completion": 3}, '"completion"'),
        ({"penalty": None}, '"penalty"'),
        ({"chars": "x"}, '"chars"'),
    ],
)
def test_marking_a_hand_edited_line_it_cannot_show_ends_in_one_line(
    tmp_path, capsys, monkeypatch, broken, says
):
    good = {"rollout": 0, "prompt": "p", "completion": "a\nb", "chars": [0, 1], "penalty": -1}
    bad = {**good, **broken}
    if broken.get("prompt", "") is None:
        bad.pop("prompt")
    path = _write(tmp_path / "flags.jsonl", [{**good, "wrong": True}, {**bad, "wrong": None}])
    before = path.read_text()
    monkeypatch.setattr("builtins.input", lambda *a: "y")
    assert main(["check-flags", str(path), "--mark"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "line 2" in err and says in err, err
    assert path.read_text() == before


def test_marking_with_json_keeps_stdout_for_the_json(tmp_path, capsys, monkeypatch):
    row = {"rollout": 0, "prompt": "p", "completion": "a\nb", "chars": [2, 3], "penalty": -1}
    path = _write(tmp_path / "flags.jsonl", [{**row, "wrong": None}] * 2)
    monkeypatch.setattr("builtins.input", lambda *a: "n")
    assert main(["check-flags", str(path), "--mark", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["checked"] == 2
    assert "flag 1 of 2" in captured.err and "2 flags marked" in captured.err


def test_the_check_says_when_the_flags_are_a_tasks_exact_verdicts(tmp_path, capsys):
    _write(tmp_path / "flags.jsonl", [{"wrong": True}, {"wrong": False}])
    (tmp_path / "diagnosis.json").write_text(json.dumps({"exact_verdicts": True}))
    assert main(["check-flags", str(tmp_path)]) == 0
    assert "exact by construction" in capsys.readouterr().out
    (tmp_path / "diagnosis.json").write_text(json.dumps({"exact_verdicts": False}))
    assert main(["check-flags", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exact_verdicts"] is False


def test_a_diagnosis_does_not_replace_files_botgrpo_did_not_write(tmp_path, capsys):
    folder = tmp_path / "diagnose"
    folder.mkdir()
    mine = folder / "diagnosis.md"
    mine.write_text("my own notes\n")
    args = ["diagnose", "--task", "chain", "--prompts", "2", "--out-dir", str(tmp_path)]
    assert main([*args, "--progress", "false"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds files botgrpo did not write (diagnosis.md)" in err
    assert mine.read_text() == "my own notes\n" and sorted(folder.iterdir()) == [mine]


def test_the_report_says_when_spans_and_verdicts_disagree_in_number():
    from botgrpo.harness.advice import _flags_note

    kind = (
        "line run (2 rollouts' verdict_spans did not hold one range per raw verdict and were "
        "not used)"
    )
    sample = {"sampled": 3, "of": 3, "kind": kind}
    note = " ".join(_flags_note({"flag_sample": sample, "verdicts": {}, "exact_verdicts": False}))
    assert "2 rollouts' verdict_spans did not hold one range" in note
    assert 'per verdict in info["raw_verdicts"]' in note


def test_hand_marks_in_a_file_with_a_byte_order_mark_are_kept(tmp_path):
    from botgrpo.harness.flags import check_no_marks

    path = tmp_path / "flags.jsonl"
    path.write_text("\ufeff" + json.dumps({"wrong": True}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="holds 1 hand marks"):
        check_no_marks(path)


@pytest.mark.parametrize("odd", ['{"flag_sample": "x"}', "[1, 2]", '{"exact_verdicts": "no"}'])
def test_an_odd_diagnosis_beside_the_flags_is_read_as_unknown(tmp_path, odd):
    from botgrpo.harness.cli import _beside

    _write(tmp_path / "flags.jsonl", [{"wrong": None}])
    (tmp_path / "diagnosis.json").write_text(odd)
    assert _beside(tmp_path / "flags.jsonl")["exact_verdicts"] is None
