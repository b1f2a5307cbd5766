"""Built-in tasks, loaders and the task reward, on hand-written completions."""

from __future__ import annotations

import json
import random

import pytest

from botgrpo.tasks import BUILTIN_TASKS, ChainArithmetic, ColumnAddition, load_task
from botgrpo.tasks.base import Example
from botgrpo.tasks.data import sample_examples, task_dataset
from botgrpo.tasks.jsonl import JsonlTask
from botgrpo.tasks.reasoning_gym import ReasoningGymTask
from botgrpo.tasks.reward import make_task_reward
from botgrpo.tasks.teacher import Teacher
from botgrpo.tiny import build_char_tokenizer

CHAIN = Example("7+5-3+9\n", "18", {"numbers": [7, 5, 3, 9], "ops": ["+", "-", "+"]})


def verdicts(task, example, completion):
    return [s.verdict for s in task.score(example, completion).steps]


PERFECT = Teacher()


def test_chain_keyed_layout():
    task = ChainArithmetic(teacher=PERFECT)
    ex = task.sample(random.Random(0))
    assert ex.prompt.startswith(f"{ex.meta['numbers'][0]} a")
    demo = task.demonstration(ex)
    assert demo.splitlines()[0].startswith("a:") and demo.splitlines()[1].startswith("b:")
    assert verdicts(task, ex, demo) == [1] * len(ex.meta["ops"])
    # the right arithmetic under the wrong key is a wrong step
    swapped = demo.replace("b:", "c:", 1)
    assert verdicts(task, ex, swapped)[1] == -1


def test_chain_demonstration_is_correct_and_well_formed():
    task = ChainArithmetic(keyed=False, teacher=PERFECT)
    assert task.demonstration(CHAIN) == "7+5=12\n12-3=9\n9+9=18\nAnswer: 18"
    score = task.score(CHAIN, task.demonstration(CHAIN))
    assert (score.outcome, score.well_formed, verdicts(task, CHAIN, task.demonstration(CHAIN))) == (
        1.0,
        True,
        [1, 1, 1],
    )


@pytest.mark.parametrize(
    ("completion", "expected", "outcome"),
    [
        # wrong arithmetic in step 2; step 3 follows the claimed 8 correctly (8+9=17)
        ("7+5=12\n12-3=8\n8+9=17\nAnswer: 17", [1, -1, 1], 0.0),
        # step 2 uses the wrong operand (4 instead of 3), though its arithmetic holds
        ("7+5=12\n12-4=8\n8+9=17\nAnswer: 17", [1, -1, 1], 0.0),
        # step 2 does not continue from the previous result
        ("7+5=12\n11-3=8\n8+9=17\nAnswer: 17", [1, -1, 1], 0.0),
        # garbled line, extra step
        ("7+5=12\n12-3=9\nnine plus nine\n18+0=18\nAnswer: 18", [1, 1, -1, -1], 1.0),
        # right answer by luck, no steps
        ("Answer: 18", [], 1.0),
    ],
)
def test_chain_step_verdicts(completion, expected, outcome):
    task = ChainArithmetic(keyed=False)
    score = task.score(CHAIN, completion)
    assert [s.verdict for s in score.steps] == expected
    assert score.outcome == outcome
    assert score.well_formed is (len(expected) == 3)


def test_chain_spans_point_at_the_lines():
    completion = "7+5=12\n12-3=8\n8+9=17\nAnswer: 17"
    spans = [(s.start, s.end) for s in ChainArithmetic(keyed=False).score(CHAIN, completion).steps]
    assert [completion[a:b] for a, b in spans] == ["7+5=12", "12-3=8", "8+9=17"]


def test_chain_samples_keep_the_running_total_in_range():
    task = ChainArithmetic(min_steps=10, max_steps=10, max_total=20, teacher=PERFECT)
    rng = random.Random(0)
    for _ in range(50):
        ex = task.sample(rng)
        assert len(ex.meta["ops"]) == 10
        assert task.score(ex, task.demonstration(ex)).solved
        totals = [int(line.split("=")[1]) for line in task.demonstration(ex).splitlines()[:-1]]
        assert all(0 <= t <= 20 for t in totals)


COLUMNS = Example("4827+3956\n", "8783", {"a": 4827, "b": 3956})


def test_columns_demonstration_and_verdicts():
    task = ColumnAddition(teacher=PERFECT)
    demo = task.demonstration(COLUMNS)
    assert demo == "7+6+0=13\n2+5+1=8\n8+9+0=17\n4+3+1=8\nAnswer: 8783"
    assert verdicts(task, COLUMNS, demo) == [1, 1, 1, 1]
    # forgot the carry in column 2 (2+5+0), wrong sum in column 3, then consistent again
    bad = "7+6+0=13\n2+5+0=7\n8+9+0=18\n4+3+1=8\nAnswer: 8873"
    score = task.score(COLUMNS, bad)
    assert [s.verdict for s in score.steps] == [1, -1, -1, 1]
    assert score.outcome == 0.0


def test_columns_pads_the_shorter_addend():
    ex = Example("105+7\n", "112", {"a": 105, "b": 7})
    assert (
        ColumnAddition(teacher=PERFECT).demonstration(ex)
        == "5+7+0=12\n0+0+1=1\n1+0+0=1\nAnswer: 112"
    )


def test_task_reward_spreads_verdicts_over_line_tokens():
    task, tok = ChainArithmetic(keyed=False), build_char_tokenizer()
    completion = "7+5=12\n12-3=8\n8+9=17\nAnswer: 17"
    ids = [*tok(completion).input_ids, tok.eos_token_id]
    reward = make_task_reward(task, tok)
    row = CHAIN.to_row()
    [tr] = reward(
        prompts=[row["prompt"]],
        completions=[completion],
        completion_ids=[ids],
        answer=[row["answer"]],
        meta=[row["meta"]],
    )
    # error propagation: verdicts [1, -1, 1] -> [1, -1, 0]; window 3 decays the -1 onto
    # neighbours: step 1: (1 - 0.75)/3, step 2: -1/3, step 3: (0 - 0.75)/3
    assert tr.info["verdicts"] == [1, -1, 0]
    assert tr.local[0] == pytest.approx(0.25 / 3)
    assert tr.local[7] == pytest.approx(-1 / 3)
    assert tr.local[14] == pytest.approx(-0.75 / 3)
    assert tr.local[-1] == 0.0 and len(tr.local) == len(ids)
    assert (tr.outcome, tr.format_bonus) == (0.0, 0.2)


def test_task_dataset_and_held_out_exclusion():
    task = ChainArithmetic(min_steps=1, max_steps=1, max_operand=2, max_total=4)
    held = {ex.prompt for ex in sample_examples(task, 5, "eval")}
    train = sample_examples(task, 20, "train", exclude=held)
    assert not held & {ex.prompt for ex in train}
    ds = task_dataset(train)
    assert ds.column_names == ["prompt", "answer", "meta"]
    assert Example.from_row(ds[0]["prompt"], ds[0]["answer"], ds[0]["meta"]) == train[0]
    with pytest.raises(ValueError, match="problem space is too small"):
        sample_examples(
            task, 10, "x", exclude={ex.prompt for ex in sample_examples(task, 400, "all")}
        )


def test_load_task_specs(tmp_path):
    assert set(BUILTIN_TASKS) == {"chain", "columns", "react", "python"}
    assert load_task("columns").name == "columns"
    assert load_task("tests.user_task:make_task").name == "doubling"
    with pytest.raises(ValueError, match="unknown task"):
        load_task("nope")
    with pytest.raises(ValueError, match="cannot load task factory"):
        load_task("tests.user_task:missing")
    with pytest.raises(TypeError, match="is not a task"):
        load_task("fractions:Fraction")  # a factory whose product is not a task


def test_jsonl_task(tmp_path):
    path = tmp_path / "problems.jsonl"
    rows = [
        {
            "prompt": "What is 1/2 + 1/4?\n",
            "answer": "3/4",
            "steps": ["1/2 = 2/4", "2/4 + 1/4 = 3/4"],
        },
        {"prompt": "2*21?\n", "answer": 42},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    task = load_task(f"jsonl:{path}")
    assert isinstance(task, JsonlTask)
    ex = Example(rows[0]["prompt"], "3/4", {"row": 0})
    assert task.demonstration(ex) == "1/2 = 2/4\n2/4 + 1/4 = 3/4\nAnswer: 3/4"
    score = task.score(ex, "1/2 = 2/4\n2/4 + 1/4 = 3/5\nAnswer: 0.75")
    # math-verify accepts 0.75 for 3/4; the symbolic verifier flags the second step
    assert score.outcome == 1.0
    assert [s.verdict for s in score.steps] == [1, -1]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "x"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1: each line needs"):
        JsonlTask(str(bad))


def test_reasoning_gym_adapter():
    task = ReasoningGymTask("basic_arithmetic")
    ex = task.sample(random.Random(3))
    assert ex.prompt.endswith("\n") and ex.answer
    assert task.score(ex, task.demonstration(ex)).outcome == 1.0
    assert task.score(ex, "Answer: not a number").outcome == 0.0
    assert task.sample(random.Random(3)) == ex  # seeded: the same problem again
