"""Flawed teachers: the slip's kind and rate, measured on many demonstrations; task options."""

from __future__ import annotations

import random

import pytest

from botgrpo.harness.warmstart import WarmStartConfig
from botgrpo.tasks import ChainArithmetic, ColumnAddition, load_task
from botgrpo.tasks.base import Example
from botgrpo.tasks.teacher import Teacher, demonstrate
from tests.user_task import Doubling


def _chain_slips(task: ChainArithmetic, n: int) -> tuple[int, int, set[str]]:
    """(opportunities, slips, kinds seen) over ``n`` demonstrations, read off the lines."""
    rng, demo_rng = random.Random(0), random.Random(1)
    opportunities = slips = 0
    kinds: set[str] = set()
    for _ in range(n):
        ex = task.sample(rng)
        demo = task.demonstration(ex, rng=demo_rng)
        verdicts = [s.verdict for s in task.score(ex, demo).steps]
        for line, verdict in zip(demo.splitlines()[:-1], verdicts, strict=True):
            body = line.split(":")[-1]
            left, result = body.split("=")
            op = "+" if "+" in left[1:] else "-"
            a, d = (int(x) for x in left.rsplit(op, 1))
            true = a + d if op == "+" else a - d
            crosses = a >= 0 and a % 10 + d >= 10 if op == "+" else a >= 10 and a % 10 < d
            opportunities += crosses and (task.teacher.slip == ("carry" if op == "+" else "borrow"))
            if verdict == -1:  # a slip: wrong by exactly 10, the carry or borrow forgotten
                slips += 1
                assert crosses and int(result) == true + (-10 if op == "+" else 10)
                kinds.add("carry" if op == "+" else "borrow")
    return opportunities, slips, kinds


@pytest.mark.parametrize(("slip", "rate"), [("carry", 0.7), ("borrow", 0.4)])
def test_chain_teacher_slips_at_its_rate_and_only_in_its_kind(slip, rate):
    task = ChainArithmetic(teacher=Teacher(slip, rate))
    opportunities, slips, kinds = _chain_slips(task, 1500)
    assert opportunities > 1000
    assert kinds == {slip}
    # binomial SE at n > 1000 is below 0.016: 0.05 is over 3 SE
    assert abs(slips / opportunities - rate) < 0.05


def test_chain_teacher_goes_on_from_the_wrong_value():
    task = ChainArithmetic(keyed=False, teacher=Teacher("carry", 1.0))
    ex = Example("8+5+3\n", "16", {"numbers": [8, 5, 3], "ops": ["+", "+"]})
    demo = task.demonstration(ex)
    assert demo == "8+5=3\n3+3=6\nAnswer: 6"  # forgot the carry, then continued correctly
    score = task.score(ex, demo)
    assert [s.verdict for s in score.steps] == [-1, 1] and not score.solved


def test_columns_teacher_forgets_incoming_carries():
    ex = Example("4827+3956\n", "8783", {"a": 4827, "b": 3956})
    always = ColumnAddition(teacher=Teacher("carry", 1.0))
    demo = always.demonstration(ex)
    # both columns with an incoming carry (2+5, 4+3) are written with carry 0
    assert demo == "7+6+0=13\n2+5+0=7\n8+9+0=17\n4+3+0=7\nAnswer: 7773"
    assert [s.verdict for s in always.score(ex, demo).steps] == [1, -1, 1, -1]
    task = ColumnAddition()  # default: 70% of incoming carries forgotten
    rng, demo_rng = random.Random(0), random.Random(1)
    opportunities = slips = 0
    for _ in range(1000):
        ex = task.sample(rng)
        demo = task.demonstration(ex, rng=demo_rng)
        verdicts = [s.verdict for s in task.score(ex, demo).steps]
        carry = 0
        for line, verdict in zip(demo.splitlines()[:-1], verdicts, strict=True):
            *_, c, s = (int(v) for v in line.replace("=", "+").split("+"))
            opportunities += carry == 1
            slips += verdict == -1
            assert verdict == 1 or (carry == 1 and c == 0)
            carry = s // 10
    assert opportunities > 1000 and abs(slips / opportunities - 0.7) < 0.05


def test_default_teachers_are_flawed_and_a_perfect_one_always_solves():
    assert ChainArithmetic().teacher == Teacher("carry", 0.7)
    perfect = ChainArithmetic(teacher=Teacher())
    rng = random.Random(0)
    for _ in range(200):
        ex = perfect.sample(rng)
        assert perfect.score(ex, perfect.demonstration(ex, rng=rng)).solved


def test_demonstrations_are_reproducible_per_prompt_without_an_rng():
    task = ChainArithmetic()
    ex = task.sample(random.Random(3))
    assert task.demonstration(ex) == task.demonstration(ex)


def test_demonstrate_passes_an_rng_only_to_tasks_that_take_one():
    user = Doubling()
    ex = user.sample(random.Random(0))
    assert demonstrate(user, ex, random.Random(0)) == user.demonstration(ex)
    task = ChainArithmetic(teacher=Teacher("carry", 0.5))
    ex = next(e for e in (task.sample(random.Random(i)) for i in range(100)) if "+9" in e.prompt)
    seen = {demonstrate(task, ex, random.Random(i)) for i in range(50)}
    assert len(seen) > 1  # fresh slips every call


def test_teacher_rejects_bad_options():
    with pytest.raises(ValueError, match="unknown slip 'typo'"):
        Teacher("typo", 0.5)
    with pytest.raises(ValueError, match=r"slip rate must be in \[0, 1\]"):
        Teacher("carry", 1.5)
    with pytest.raises(ValueError, match="needs a slip kind"):
        Teacher("none", 0.3)
    with pytest.raises(ValueError, match="task 'columns' has no 'borrow' slip"):
        ColumnAddition(teacher=Teacher("borrow", 0.5))


def test_warm_start_key_includes_the_teacher():
    cfg = WarmStartConfig(steps=1)
    keys = {
        cfg.cache_key(ChainArithmetic(teacher=t))
        for t in (Teacher(), Teacher("carry", 0.7), Teacher("carry", 0.6), Teacher("borrow", 0.7))
    }
    assert len(keys) == 4


def test_builtin_task_options():
    task = load_task("chain:min_steps=2,max_steps=5,slip=borrow,slip_rate=0.25,keyed=false")
    assert (task.min_steps, task.max_steps, task.keyed) == (2, 5, False)
    assert task.teacher == Teacher("borrow", 0.25)
    assert load_task("columns:slip=none").teacher == Teacher()
    assert load_task("chain:slip=borrow").teacher == Teacher("borrow", 0.7)  # default rate
    for spec, message in [
        ("chain:depth=3", "task 'chain' has no option 'depth'; options: min_steps"),
        ("chain:min_steps=two", "chain:min_steps='two' is not a valid int"),
        ("chain:min_steps", "needs the form key=value"),
        ("chain:slip_rate=2", r"slip rate must be in \[0, 1\]"),
        ("chain:min_steps=9,max_steps=3", "need 1 <= min_steps <= max_steps"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_task(spec)
