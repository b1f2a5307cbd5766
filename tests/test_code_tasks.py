"""The code tasks react and python: teachers' slips flagged by the real toolchains on their line.

Real node (Babel, ESLint, jsdom) and the real sandbox; verdicts come from the recipes, never from
the teacher's record of its slips.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from botgrpo.tasks import load_task
from botgrpo.tasks.base import task_fingerprint
from botgrpo.tasks.components import ReactComponents
from botgrpo.tasks.functions import PythonFunctions
from botgrpo.tasks.teacher import Teacher
from botgrpo.tiny import build_char_tokenizer


def examples(task, n: int, seed: int = 0):
    rng = random.Random(seed)
    return [task.sample(rng) for _ in range(n)]


def slipped_lines(perfect: str, slipped: str) -> list[int]:
    """1-based code lines (inside the fence) where the slipped demonstration differs."""
    a, b = perfect.split("\n")[1:-1], slipped.split("\n")[1:-1]
    assert len(a) == len(b)
    return [k + 1 for k, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]


def bad_lines(score) -> set[int]:
    return {k + 1 for k, step in enumerate(score.steps) if step.verdict == -1}


@pytest.mark.parametrize("task_cls", [ReactComponents, PythonFunctions])
def test_the_perfect_teacher_solves_every_problem(task_cls):
    task = task_cls(teacher=Teacher())
    exs = examples(task, 12)
    scores = task.score_batch(exs, [task.demonstration(e) for e in exs])
    assert all(s.solved for s in scores)
    assert all(s.metrics == {"compiled": 1.0, "clean": 1.0} for s in scores)
    assert all(step.verdict == 1 for s in scores for step in s.steps)


REACT_FLAGS = {  # kind -> (compiles, clean, solved)
    "tag": (False, False, False),
    "undefined": (False, False, False),
    "attr": (True, False, True),
    "key": (True, False, True),
    "hook": (True, False, True),
}
PYTHON_FLAGS = {"colon": (False, False, False), "name": (False, False, False)}


@pytest.mark.parametrize(
    ("task_cls", "kind", "flags"),
    [(ReactComponents, k, f) for k, f in REACT_FLAGS.items()]
    + [(PythonFunctions, k, f) for k, f in PYTHON_FLAGS.items()],
)
def test_each_slip_is_flagged_by_the_toolchain_on_the_line_the_teacher_made_it(
    task_cls, kind, flags
):
    perfect, sloppy = task_cls(teacher=Teacher()), task_cls(teacher=Teacher(kind, 1.0))
    exs = examples(perfect, 16, seed=1)
    clean = [perfect.demonstration(e) for e in exs]
    slipped = [sloppy.demonstration(e, rng=random.Random(i)) for i, e in enumerate(exs)]
    pairs = [(e, c, s) for e, c, s in zip(exs, clean, slipped, strict=True) if c != s]
    assert len(pairs) >= 6, "too few opportunities for the slip"
    scores = sloppy.score_batch([e for e, _, _ in pairs], [s for _, _, s in pairs])
    compiles, is_clean, solved = flags
    for (_, c, s), score in zip(pairs, scores, strict=True):
        lines = slipped_lines(c, s)
        assert (score.metrics["compiled"] == 1.0) is compiles, s
        assert (score.metrics["clean"] == 1.0) is is_clean, s
        assert score.solved is solved, s
        # at least one slip is blamed on its own line (a compile error stops at the first)
        assert bad_lines(score) & set(lines), (s, lines, bad_lines(score))
        assert bad_lines(score) <= set(lines) | {ln + 1 for ln in lines}, (s, bad_lines(score))


def test_an_off_by_one_slip_fails_a_test_case():
    perfect, sloppy = (
        PythonFunctions(teacher=Teacher()),
        PythonFunctions(teacher=Teacher("off_by_one", 1.0)),
    )
    exs = examples(perfect, 30, seed=2)
    slipped = [sloppy.demonstration(e, rng=random.Random(i)) for i, e in enumerate(exs)]
    scores = sloppy.score_batch(exs, slipped)
    changed = [s != perfect.demonstration(e) for e, s in zip(exs, slipped, strict=True)]
    assert sum(changed) >= 20
    failed = [not sc.solved for sc, c in zip(scores, changed, strict=True) if c]
    assert sum(failed) / len(failed) >= 0.8  # the boundary case catches most wrong comparisons
    assert all(sc.metrics["compiled"] == 1.0 for sc in scores)  # it still runs


@pytest.mark.parametrize(
    ("spec", "kinds"), [("react", ReactComponents.SLIPS), ("python", PythonFunctions.SLIPS)]
)
def test_the_teachers_slip_at_their_rate(spec, kinds):
    """The measured rate over many opportunities: each slip changes one line."""
    task = load_task(f"{spec}:slip={'+'.join(kinds)},slip_rate=0.3")
    perfect = load_task(f"{spec}:slip=none")
    rng = random.Random(5)
    changed = total = 0
    for i in range(400):
        ex = perfect.sample(rng)
        c, s = perfect.demonstration(ex), task.demonstration(ex, rng=random.Random(i))
        changed += len(slipped_lines(c, s))
        total += len(c.split("\n"))
    # opportunities are a fraction of the lines; what matters: slips happen, at about the rate
    assert 0.03 < changed / total < 0.3
    no_slip = load_task(f"{spec}:slip=none")
    assert all(
        no_slip.demonstration(e, rng=random.Random(1)) == no_slip.demonstration(e)
        for e in examples(no_slip, 20)
    )


def test_the_react_outcome_reads_the_rendered_text():
    task = ReactComponents(teacher=Teacher())
    [ex] = examples(task, 1, seed=3)
    good = task.demonstration(ex)
    title = ex.meta["spec"]["title"]
    wrong = good.replace(f"<h1>{title}</h1>", "<h1>Something else</h1>")
    hidden = good.replace(f"<h1>{title}</h1>", f"<h1 hidden>{title}</h1>")
    good_s, wrong_s, hidden_s = task.score_batch([ex, ex, ex], [good, wrong, hidden])
    assert good_s.solved and title in good_s.answer
    assert not wrong_s.solved and wrong_s.metrics["compiled"] == 1.0
    assert not hidden_s.solved  # [hidden] text is not visible
    no_code = task.score(ex, "I would write a component.")
    assert not no_code.solved and no_code.metrics == {"compiled": 0.0, "clean": 0.0}


def test_task_options_reach_the_cache_key():
    keys = {
        task_fingerprint(load_task(spec))
        for spec in (
            "react",
            "react:slip=tag,slip_rate=0.3",
            "react:slip_rate=0.5",
            "react:max_parts=3",
            "python",
            "python:slip=name,slip_rate=0.3",
            "python:examples=3",
        )
    }
    assert len(keys) == 7


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="has no 'carry' slip"):
        load_task("react:slip=carry")
    with pytest.raises(ValueError, match="min_parts"):
        load_task("react:min_parts=4,max_parts=2")
    with pytest.raises(ValueError, match="examples must be 2 or 3"):
        load_task("python:examples=5")
    with pytest.raises(ValueError, match="mixes 'none'"):
        Teacher("none+tag", 0.1)


@pytest.mark.parametrize(("spec", "breaking"), [("react", "tag"), ("python", "colon")])
def test_the_training_reward_is_the_line_recipe_with_the_task_outcome(spec, breaking):
    task = load_task(spec)
    perfect = load_task(f"{spec}:slip=none")
    sloppy = load_task(f"{spec}:slip={breaking},slip_rate=1.0")
    tok = build_char_tokenizer()
    exs = examples(task, 4, seed=4)
    texts = [perfect.demonstration(exs[0]), perfect.demonstration(exs[0])]
    texts.append(sloppy.demonstration(exs[1]))
    rows = [exs[0].to_row(), exs[0].to_row(), exs[1].to_row()]
    logged = {}
    reward = task.reward_function(tok)
    out = reward(
        prompts=[r["prompt"] for r in rows],
        completions=texts,
        completion_ids=[tok(t).input_ids for t in texts],
        answer=[r["answer"] for r in rows],
        meta=[r["meta"] for r in rows],
        log_metric=lambda k, v: logged.__setitem__(k, v),
    )
    assert out[0].outcome == out[1].outcome and out[0].info["solved"] is True
    assert np.all(out[0].local == 0)
    assert out[2].outcome < out[0].outcome and out[2].local.min() < 0
    assert logged["task/solved"] == pytest.approx(2 / 3)
    assert logged["reward/distinct"] == pytest.approx(2 / 3)  # identical completions checked once
    assert {"time/extract_s", "time/check_s", "time/score_s"} <= set(logged)


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "greedy"), [("react", True), ("python", False)])
def test_the_pipeline_at_a_tiny_budget(tmp_path, spec, greedy):
    """compare on a code task: the compile and clean rates are recorded, lead and plotted; with
    greedy=False only the sampled ones, and the summary and plot are still made."""
    import json

    from botgrpo.harness.compare import compare
    from botgrpo.harness.config import CompareConfig
    from botgrpo.harness.results import load_records

    cfg = CompareConfig(
        name="tiny",
        out_dir=str(tmp_path),
        task=spec,
        methods=("grpo", "bot"),
        seeds=1,
        steps=2,
        eval_every=2,
        eval_problems=6,
        pass_samples=2,
        pass_problems=3,
        prompts_per_step=2,
        num_generations=2,
        max_completion_length=64,
        warm_start_steps=2,
        warmup_steps=1,
        metric="sampled_compiled",
        greedy=greedy,
        workers=2,
        progress=False,
    )
    compare(cfg)
    root = tmp_path / "tiny"
    evals = [r for r in load_records(root / "metrics.jsonl") if r["kind"] == "eval"]
    keys = ("greedy_compiled", "greedy_clean") * greedy + ("sampled_compiled", "sampled_clean")
    assert evals and all(all(0.0 <= r[k] <= 1.0 for k in keys) for r in evals)
    assert greedy == any("greedy_solved" in r for r in evals)
    assert json.loads((root / "summary.json").read_text())["metric"] == "sampled_compiled"
    assert (root / "curves.png").read_bytes()[:4] == b"\x89PNG"
    config = json.loads((root / "config.json").read_text())
    assert config["max_completion_length"] == 64 and config["warm_start_steps"] == 2


def test_a_compile_metric_needs_a_code_task(tmp_path):
    from botgrpo.harness.compare import check_inputs
    from botgrpo.harness.config import CompareConfig

    with pytest.raises(ValueError, match="needs a task that reports 'compiled'"):
        check_inputs(CompareConfig(out_dir=str(tmp_path), metric="sampled_compiled"))


def test_the_task_fills_the_lengths_a_comparison_leaves_open(tmp_path):
    from botgrpo.harness.compare import check_inputs, warm_start_config
    from botgrpo.harness.config import CompareConfig

    react = CompareConfig(out_dir=str(tmp_path), task="react", eval_problems=8, pass_problems=8)
    task = check_inputs(react)
    assert (react.max_completion_length, react.warm_start_steps) == (448, 1500)
    assert react.warm_start_stop == "converged"
    assert warm_start_config(react, task).model.max_positions == 640
    chain = CompareConfig(out_dir=str(tmp_path), eval_problems=8, pass_problems=8)
    chain_task = check_inputs(chain)
    assert (chain.max_completion_length, chain.warm_start_steps) == (192, 3000)
    assert chain.warm_start_stop == "steps"  # the shipped warm start's rule
    assert warm_start_config(chain, chain_task).model.max_positions == 256
    for long in ("react:sections=3,max_parts=3", "python:helpers=3"):  # the pages' recipe
        cfg = CompareConfig(out_dir=str(tmp_path), task=long, eval_problems=8, pass_problems=8)
        check_inputs(cfg)
        assert (cfg.warm_start_stop, cfg.warm_start_steps) == ("steps", 2400), long
    given = CompareConfig(out_dir=str(tmp_path), task="react", max_completion_length=100)
    check_inputs(given)
    assert given.max_completion_length == 100


@pytest.mark.parametrize("task_cls", [ReactComponents, PythonFunctions])
def test_the_shipped_code_warm_starts_are_the_default_comparisons(task_cls, tmp_path):
    """`botgrpo compare --task react` (or python) starts RL from the shipped checkpoint, not a
    training, in the regime where RL works."""
    import json

    from botgrpo.harness.compare import check_inputs, warm_start_config
    from botgrpo.harness.config import CompareConfig
    from botgrpo.harness.evaluate import held_out_prompts
    from botgrpo.harness.warmstart import packaged_warm_start

    name = task_cls.name
    cfg = CompareConfig(out_dir=str(tmp_path), task=name, **task_cls.compare_defaults)
    task = check_inputs(cfg)
    key = warm_start_config(cfg, task).cache_key(task, held_out_prompts(task, cfg.eval_problems))
    shipped = packaged_warm_start(key)
    assert shipped is not None, (
        f"rebuild it: botgrpo warm-start --task {name} --retrain --package {name}"
    )
    assert shipped.name == name
    meta = json.loads((shipped / "warm_start.json").read_text())
    assert meta["metrics"]["greedy_compiled"] > 0.9  # converged on the mechanics
    assert 0.1 < meta["metrics"]["sampled_compiled"] < 0.5  # and imitates the slipping teacher


@pytest.mark.parametrize(
    ("task", "steps", "problems"), [("react", 20, 100), ("python", 30, 150), ("chain", 40, 500)]
)
def test_the_demo_takes_each_tasks_budget_and_flags_still_win(task, steps, problems, tmp_path):
    """`botgrpo demo --task react` runs fewer, longer steps than python's demo (each task's
    ``demo_defaults`` over the demo's own); a flag given wins over both."""
    from botgrpo.harness.cli import DEMO_DEFAULTS, _parse

    argv = ["--task", task, "--out-dir", str(tmp_path)]
    cfg, _ = _parse(argv, "botgrpo demo", "", DEMO_DEFAULTS)
    assert (cfg.steps, cfg.eval_problems, cfg.pass_problems) == (steps, problems, problems)
    assert cfg.methods == ("grpo", "bot")
    assert cfg.greedy == (task == "chain")  # the code demos evaluate sampled completions only
    given, _ = _parse([*argv, "--steps", "17"], "botgrpo demo", "", DEMO_DEFAULTS)
    assert given.steps == 17 and given.eval_problems == problems
