"""The code tasks' long settings: react pages of sections and python functions of helpers.

Real node (Babel, ESLint, jsdom) and the real sandbox: a slip among dozens of lines is flagged on
its own line, the teachers slip at their rate at every opportunity, the options are checked and
reach the warm start's key, and a comparison runs on both at a tiny budget.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from botgrpo.tasks import load_task
from botgrpo.tasks.base import task_fingerprint
from botgrpo.tasks.components import ReactComponents
from botgrpo.tasks.functions import FAMILIES, PythonFunctions
from botgrpo.tasks.teacher import Teacher

from .test_code_tasks import bad_lines, examples, slipped_lines


def test_a_page_and_a_function_of_helpers_are_long_and_solved_by_a_perfect_teacher():
    for task in (
        ReactComponents(sections=3, max_parts=3, teacher=Teacher()),
        PythonFunctions(helpers=3, teacher=Teacher()),
    ):
        exs = examples(task, 24, seed=7)
        demos = [task.demonstration(e) for e in exs]
        lines = [d.count("\n") - 1 for d in demos]
        assert min(lines) >= 15 and max(lines) <= 40, lines
        assert max(len(d) for d in demos) <= task.max_completion_tokens
        assert max(len(e.prompt) + len(d) for e, d in zip(exs, demos, strict=True)) < (
            task.max_positions
        )
        scores = task.score_batch(exs, demos)
        assert all(s.solved and s.metrics == {"compiled": 1.0, "clean": 1.0} for s in scores)


def test_a_page_is_solved_only_when_every_section_shows_in_order():
    task = ReactComponents(sections=2, teacher=Teacher())
    [ex] = examples(task, 1, seed=3)
    good = task.demonstration(ex)
    spec = ex.meta["spec"]
    first, second = (s["heading"] for s in spec["sections"])
    swapped = good.replace(f"<h2>{first}</h2>", "<h2>@@</h2>").replace(
        f"<h2>{second}</h2>", f"<h2>{first}</h2>"
    )
    swapped = swapped.replace("<h2>@@</h2>", f"<h2>{second}</h2>")
    good_s, swapped_s = task.score_batch([ex, ex], [good, swapped])
    assert good_s.solved and swapped_s.metrics["compiled"] == 1.0 and not swapped_s.solved


REACT_FLAGS = {  # kind -> (compiles, clean)
    "tag": (False, False),
    "undefined": (False, False),
    "attr": (True, False),
    "key": (True, False),
    "hook": (True, False),
}


@pytest.mark.parametrize(
    ("task", "kind", "compiles"),
    [(ReactComponents(sections=3, max_parts=3), k, f[0]) for k, f in REACT_FLAGS.items()]
    + [(PythonFunctions(helpers=3), k, False) for k in ("colon", "name")],
    ids=lambda v: getattr(v, "name", v),
)
def test_one_slip_among_dozens_of_lines_is_flagged_on_its_line(task, kind, compiles):
    """A single slip (the teacher at rate 1 for one opportunity, the rest perfect) in a long
    completion: the toolchain flags that line and no line far from it."""
    perfect = type(task)(**{**_options(task), "teacher": Teacher()})
    sloppy = type(task)(**{**_options(task), "teacher": Teacher(kind, 1.0)})
    exs = examples(perfect, 12, seed=11)
    pairs = []
    for i, ex in enumerate(exs):
        clean, slipped = perfect.demonstration(ex), sloppy.demonstration(ex, random.Random(i))
        lines = slipped_lines(clean, slipped)
        if not lines:
            continue
        # keep the first slip only: the perfect text with that one line from the slipped one
        keep = clean.split("\n")
        keep[lines[0]] = slipped.split("\n")[lines[0]]
        pairs.append((ex, "\n".join(keep), lines[0]))
    assert len(pairs) >= 6, "too few opportunities for the slip"
    scores = sloppy.score_batch([e for e, _, _ in pairs], [t for _, t, _ in pairs])
    for (_, text, line), score in zip(pairs, scores, strict=True):
        assert len(score.steps) >= 15
        assert (score.metrics["compiled"] == 1.0) is compiles, text
        assert score.metrics["clean"] == 0.0, text
        assert line in bad_lines(score) or line + 1 in bad_lines(score), (text, bad_lines(score))
        assert bad_lines(score) <= {line, line + 1}, (text, bad_lines(score))


def _options(task) -> dict:
    keep = ("sections", "min_parts", "max_parts") if task.name == "react" else ("helpers",)
    return {k: getattr(task, k) for k in keep}


#: Lines where each slip can happen in the perfect demonstration (one opportunity per line).
REACT_OPPORTUNITIES = {
    "tag": re.compile(r"^\s*<(h1|h2|p)>"),
    "undefined": re.compile(r"\.map\("),
    "key": re.compile(r"\.map\("),
    "attr": re.compile(r"className=|onClick="),
    "hook": re.compile(r"useState"),
}


@pytest.mark.parametrize("kind", sorted(REACT_OPPORTUNITIES))
@pytest.mark.parametrize("rate", [0.1, 0.3])
def test_the_page_teacher_slips_at_its_rate_at_every_opportunity(kind, rate):
    perfect = load_task("react:sections=3,max_parts=3,slip=none")
    sloppy = load_task(f"react:sections=3,max_parts=3,slip={kind},slip_rate={rate}")
    changed = total = 0
    for i, ex in enumerate(examples(perfect, 400, seed=5)):
        clean = perfect.demonstration(ex)
        total += sum(bool(REACT_OPPORTUNITIES[kind].search(ln)) for ln in clean.split("\n"))
        changed += len(slipped_lines(clean, sloppy.demonstration(ex, random.Random(i))))
    assert total > 600
    assert changed / total == pytest.approx(rate, abs=0.025)


@pytest.mark.parametrize("kind", ["colon", "off_by_one"])
@pytest.mark.parametrize("rate", [0.1, 0.3])
def test_the_helpers_teacher_slips_at_its_rate_at_every_opportunity(kind, rate):
    perfect = load_task("python:helpers=3,slip=none")
    sloppy = load_task(f"python:helpers=3,slip={kind},slip_rate={rate}")
    changed = total = 0
    for i, ex in enumerate(examples(perfect, 400, seed=5)):
        clean = perfect.demonstration(ex)
        code = clean.split("\n")[1:-1]
        if kind == "colon":
            total += sum(ln.rstrip().endswith(":") for ln in code)
        else:
            rights = [FAMILIES[h["family"]][4][0].format(**h["names"]) for h in ex.meta["helpers"]]
            total += sum(any(r in ln for r in rights) for ln in code)
        changed += len(slipped_lines(clean, sloppy.demonstration(ex, random.Random(i))))
    assert total > 1000
    assert changed / total == pytest.approx(rate, abs=0.025)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("react:sections=9", "sections must be an integer from 0"),
        ("react:sections=-1", "sections must be an integer from 0"),
        ("react:sections=two", "is not a valid int"),
        ("python:helpers=1", "helpers must be 0"),
        ("python:helpers=7", "helpers must be 0"),
        ("python:helpers=2.5", "is not a valid int"),
        ("react:section=3", "has no option 'section'"),
        ("react:solved_weight=-5", "solved_weight must be a finite number >= 0"),
        ("react:render_timeout_s=inf", "render_timeout_s must be > 0 and at most 86400"),
        ("react:render_timeout_s=5e6", "render_timeout_s must be > 0 and at most 86400"),
        ("react:render_timeout_s=nan", "render_timeout_s must be > 0 and at most 86400"),
        ("python:test_timeout_s=inf", "test_timeout_s must be > 0 and at most 86400"),
        ("python:test_timeout_s=1e6", "test_timeout_s must be > 0 and at most 86400"),
        ("react :sections=3", "spaces around its name: write react:sections=3"),
        ("react ", "spaces around its name: write react$"),
        ("jsonl :data.jsonl", "spaces around its name: write jsonl:data.jsonl"),
    ],
)
def test_bad_long_options_are_one_line_errors(spec, says):
    with pytest.raises(ValueError, match=says) as err:
        load_task(spec)
    assert "\n" not in str(err.value)


def test_spaces_inside_the_options_name_the_same_task():
    """Spaces around a key, a value or a slip kind change nothing, the warm-start key included."""
    spaced = load_task("react:sections = 3, slip = tag + attr ,slip_rate= 0.2")
    plain = load_task("react:sections=3,slip=tag+attr,slip_rate=0.2")
    assert spaced == plain and task_fingerprint(spaced) == task_fingerprint(plain)
    assert spaced.teacher.kinds == ("tag", "attr")


def test_the_long_options_reach_the_warm_start_key_and_leave_the_shipped_ones_alone():
    from botgrpo.harness.compare import warm_start_config
    from botgrpo.harness.config import CompareConfig
    from botgrpo.shipped import PACKAGED_DIR

    specs = ("react", "react:sections=2", "react:sections=3", "react:sections=3,slip_rate=0.2")
    specs += ("python", "python:helpers=2", "python:helpers=3")
    keys = {task_fingerprint(load_task(s)) for s in specs}
    assert len(keys) == len(specs)
    for name in ("react", "python"):  # a default task's repr is still its shipped warm start's
        shipped = json.loads((PACKAGED_DIR / name / "warm_start.json").read_text())
        assert shipped["task"] == repr(load_task(name))
    long = load_task("react:sections=3")
    config = warm_start_config(CompareConfig(task="react:sections=3"), long)
    assert config.model.max_positions == long.max_positions
    assert (config.batch_size, config.packed) == (16, True)
    assert (config.stop, config.steps) == ("steps", 2400)
    assert load_task("react").generation_cache == "dynamic"
    assert long.generation_cache == "static"


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["react:sections=2,max_parts=2", "python:helpers=2"])
def test_the_pipeline_at_a_tiny_budget_on_a_long_setting(tmp_path, spec):
    """compare on a long setting from its own (tiny) warm start: the static KV cache, the
    task's lengths and the compile rates recorded."""
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
        eval_problems=4,
        pass_samples=1,
        pass_problems=4,
        greedy=False,
        prompts_per_step=2,
        num_generations=2,
        max_completion_length=48,
        warm_start_steps=2,
        warmup_steps=1,
        metric="sampled_compiled",
        workers=2,
        progress=False,
    )
    compare(cfg)
    root = tmp_path / "tiny"
    evals = [r for r in load_records(root / "metrics.jsonl") if r["kind"] == "eval"]
    assert len(evals) == 4 and all(0.0 <= r["sampled_compiled"] <= 1.0 for r in evals)
    done = json.loads(next(root.glob("runs/bot-*/done.json")).read_text())
    assert done["settings"]["generation_cache"] == "static"
    assert done["settings"]["task"] == spec
