"""Inputs read as users write them: CRLF, CR, a byte-order mark, Unicode separators and
non-ASCII text read as their LF/ASCII form; a user's task checked in full before anything
starts; options of the wrong type refused; reduced precision that cannot overflow; help texts
that render."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import textwrap
import warnings

import pytest
import torch

from botgrpo.cli import main
from botgrpo.core import aggregate_loss, get_advantage_estimator, get_policy_loss
from botgrpo.rewards.code_blocks import extract_code_block
from botgrpo.rewards.spans import line_spans
from botgrpo.rewards.steps import parse_steps
from botgrpo.rewards.text import TEXT_BREAK, count_lines, line_bounds, strip_blanks
from botgrpo.tasks import BUILTIN_TASKS, load_task
from botgrpo.tasks.base import Example, task_fingerprint, validate_task
from botgrpo.tasks.teacher import Teacher

VARIANTS = {
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "cr": lambda t: t.replace("\n", "\r"),
    "bom": lambda t: "\ufeff" + t,
    "crlf+bom": lambda t: "\ufeff" + t.replace("\n", "\r\n"),
}
TEXT_VARIANTS = {
    **VARIANTS,
    "u2028": lambda t: t.replace("\n", "\u2028"),
    "u2029": lambda t: t.replace("\n", "\u2029"),
    "nel": lambda t: t.replace("\n", "\x85"),
}


# ---- fences, lines and steps ------------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("fence", ["```", "~~~~"])
def test_a_fence_is_found_whatever_the_line_breaks(variant, fence):
    text = f"Here:\n{fence}python\ndef f(x):\n    return x + 1\n{fence}\nDone.\n"
    lf, other = extract_code_block(text), extract_code_block(VARIANTS[variant](text))
    assert other is not None and other.closed and other.language == "python"
    assert other.code.replace("\r\n", "\n").replace("\r", "\n") == lf.code
    assert other.n_lines == lf.n_lines == 2
    assert len(other.line_spans(VARIANTS[variant](text))) == 2


def test_line_spans_keep_offsets_into_the_text_as_given():
    text = "a = 1\r\nb = 2\rc = 3\n"
    spans = line_spans(text).tolist()
    assert spans == [[0, 7], [7, 13], [13, 19]]
    assert [text[a:b] for a, b in spans] == ["a = 1\r\n", "b = 2\r", "c = 3\n"]
    assert count_lines(text) == 3 and line_bounds("x\u2028y", breaks=TEXT_BREAK) == [(0, 2), (2, 3)]


@pytest.mark.parametrize("variant", sorted(TEXT_VARIANTS))
@pytest.mark.parametrize("layout", ["lines", "step_n", "tags"])
def test_steps_and_answers_read_the_same_whatever_the_breaks(variant, layout):
    text = {
        "lines": "a:7+5=12\nb:12-3=9\nAnswer: 9",
        "step_n": "Step 1: 7+5=12\nStep 2: 12-3=9\nAnswer: 9",
        "tags": "<step 1> 7+5=12 </step 1>\n<step 2> 12-3=9 </step 2>\n<final>9</final>",
    }[layout]
    other = TEXT_VARIANTS[variant](text)
    a, b = parse_steps(text, layout), parse_steps(other, layout)
    assert [s.text for s in b.steps] == [s.text for s in a.steps]
    assert (b.final_text, b.verdict) == (a.final_text, a.verdict) == ("9", "well_formed")
    for step in b.steps:  # spans point into the text as given
        assert step.text in other[step.start : step.end]


@pytest.mark.parametrize("name", ["chain", "columns"])
@pytest.mark.parametrize("variant", [*sorted(TEXT_VARIANTS), "tabs", "nbsp"])
def test_step_tasks_score_every_variant_as_the_plain_form(name, variant):
    task = dataclasses.replace(load_task(name), teacher=Teacher())
    ex = task.sample(random.Random(3))
    demo = task.demonstration(ex)
    change = {
        **TEXT_VARIANTS,
        "tabs": lambda t: t.replace("+", "\t+ "),
        "nbsp": lambda t: t.replace("=", "\u00a0=\u00a0"),
    }[variant]
    plain, other = task.score(ex, demo), task.score(ex, change(demo))
    assert plain.outcome == other.outcome == 1.0
    assert [s.verdict for s in other.steps] == [s.verdict for s in plain.steps]
    assert other.well_formed


def test_chain_reads_only_ascii_digits():
    task = dataclasses.replace(load_task("chain"), teacher=Teacher())
    ex = task.sample(random.Random(0))
    arabic = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
    score = task.score(ex, task.demonstration(ex).translate(arabic))
    assert score.outcome == 0.0 and all(s.verdict == -1 for s in score.steps)


def test_strip_blanks_removes_invisible_marks():
    assert strip_blanks("\ufeff 12\u200b\u00a0") == "12"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_python_recipe_scores_crlf_code_as_lf(variant):
    """The CRLF closing fence was not found: correct code scored as a syntax error."""
    from botgrpo.rewards.recipes.python import PythonRewardConfig, make_python_code_reward
    from botgrpo.tiny import build_char_tokenizer

    tok = build_char_tokenizer()
    reward = make_python_code_reward(tok, config=PythonRewardConfig(run_tests=False))
    text = "Here:\n```python\nimport os\nx = 1\nprint(y)\n```\nDone.\n"
    texts = [text, VARIANTS[variant](text)]
    ids = [[*tok(t).input_ids, tok.eos_token_id] for t in texts]
    lf, other = reward(prompts=["task"] * 2, completions=texts, completion_ids=ids)
    assert other.outcome == pytest.approx(lf.outcome) and lf.outcome > -1.0
    lines = [sorted(tr.info["line_penalties"].items()) for tr in (lf, other)]
    assert lines[0] == lines[1] and len(lines[0]) == 2  # unused import (1), undefined y (3)


def test_a_jsonl_prompt_with_two_answers_is_refused_naming_both_lines(tmp_path):
    path = tmp_path / "p.jsonl"
    rows = [{"prompt": "1+1=", "answer": 2}, {"prompt": "2+2=", "answer": 4}]
    rows += [{"prompt": "1+1=", "answer": "2"}, {"prompt": "1+1=", "answer": 999}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(ValueError, match=r"p\.jsonl:4: the prompt of line 1 again, with another"):
        load_task(f"jsonl:{path}")


def test_a_module_of_ones_own_that_python_cannot_find_names_pythonpath(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["compare", "--task", "my_own_tasks_module:make", "--out-dir", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "PYTHONPATH" in err, err
    assert "pip install" not in err and not out.exists()


def test_jsonl_tasks_read_bom_crlf_and_unicode_separators(tmp_path):
    rows = [
        {"prompt": "What is 2\u20282?", "answer": "4"},
        {"prompt": "Résumé: 3+4?", "answer": "7"},
    ]
    body = "\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows)
    path = tmp_path / "p.jsonl"
    path.write_bytes(("\ufeff" + body + "\r\n").encode())
    task = load_task(f"jsonl:{path}")
    prompts = {task.sample(random.Random(i)).prompt for i in range(20)}
    assert prompts == {r["prompt"] for r in rows}


def _write_jsonl(path, rows) -> str:
    path.write_text("\n".join(json.dumps(r) if isinstance(r, dict) else r for r in rows) + "\n")
    return f"jsonl:{path}"


def test_jsonl_number_answers_read_as_written_and_stepless_rows_are_well_formed(tmp_path):
    spec = _write_jsonl(
        tmp_path / "p.jsonl",
        [
            '{"prompt": "big?", "answer": 1e20}',
            '{"prompt": "small?", "answer": 0.00001}',
            '{"prompt": "price?", "answer": 2.50}',
            '{"prompt": "count?", "answer": 7}',
        ],
    )
    task = load_task(spec)
    examples = {ex.prompt: ex for ex in task.all_problems()}
    answers = {p: ex.answer for p, ex in examples.items()}
    assert answers == {"big?": "100000000000000000000", "small?": "0.00001", "price?": "2.50",
                       "count?": "7"}  # fmt: skip
    for ex in examples.values():  # a row without steps: its demonstration is the answer line
        score = task.score(ex, task.demonstration(ex))
        assert score.outcome == 1.0 and score.well_formed, (ex, score)


def test_jsonl_steps_with_a_stepped_row_need_a_step(tmp_path):
    task = load_task(_write_jsonl(tmp_path / "p.jsonl", [
        {"prompt": "2+2?", "answer": "4", "steps": ["2 + 2 = 4"]}]))  # fmt: skip
    ex = task.all_problems()[0]
    assert task.score(ex, "2 + 2 = 4\nAnswer: 4").well_formed
    assert not task.score(ex, "Answer: 4").well_formed


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (["2 + 2 = 4", "Final answer: 4"], r"p\.jsonl:1: step 2 is an answer line"),
        (["2 + 2 = 4\n4 = 4"], r"p\.jsonl:1: step 1 spans several lines"),
        (["2 + 2 = 4", "  "], r"p\.jsonl:1: step 2 is blank"),
    ],
)
def test_jsonl_reference_steps_that_break_the_demonstration_are_refused(tmp_path, steps, message):
    spec = _write_jsonl(tmp_path / "p.jsonl", [{"prompt": "2+2?", "answer": "4", "steps": steps}])
    with pytest.raises(ValueError, match=message):
        load_task(spec)


def test_jsonl_paths_expand_home_and_refuse_spaces(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    _write_jsonl(tmp_path / "p.jsonl", [{"prompt": "2+2?", "answer": "4"}])
    assert load_task("jsonl:~/p.jsonl").path == str(tmp_path / "p.jsonl")
    out = tmp_path / "out"
    assert main(["compare", "--task", "jsonl: ~/p.jsonl", "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "write jsonl:~/p.jsonl" in err[0], err


def test_jsonl_keys_it_does_not_read_are_named_once_in_one_line(tmp_path):
    """In the CLI a warning of botgrpo's own is one line, like its errors."""
    import subprocess

    rows = [{"prompt": f"{i} + 1 =", "answer": str(i + 1), "step": ["typo"], "id": i}
            for i in range(40)]  # fmt: skip
    spec = _write_jsonl(tmp_path / "p.jsonl", rows)
    with pytest.warns(UserWarning, match=r"ignored: '(step|id)' \(line 1\), '(step|id)'"):
        load_task(spec)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "botgrpo.cli", "compare", "--task", spec, "--out-dir",
               str(out), "--eval-problems", "600"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 2, err
    assert err[0].startswith("botgrpo compare: warning: ") and "ignored: " in err[0]
    assert err[1].startswith("botgrpo compare: error: ") and not out.exists()


def test_a_finite_task_splits_test_validation_and_training_without_overlap(tmp_path, capsys):
    from botgrpo.harness.evaluate import held_out_examples, held_out_prompts

    rows = [{"prompt": f"{i} + 17 =", "answer": str(17 + i)} for i in range(600)]
    spec = _write_jsonl(tmp_path / "p.jsonl", rows)
    task = load_task(spec)
    for n in (1, 50, 200):
        test = {ex.prompt for ex in held_out_examples(task, n, "test")}
        validation = {ex.prompt for ex in held_out_examples(task, n, "validation")}
        held = held_out_prompts(task, n)
        assert len(test) == len(validation) == n and not test & validation
        assert test | validation <= held and len(held) == 2 * max(n, 60)  # a tenth of 600
    small = {ex.prompt for ex in held_out_examples(task, 10, "test")}
    assert small <= {ex.prompt for ex in held_out_examples(task, 200, "test")}  # a prefix
    out = tmp_path / "out"
    for n, fix in [("280", "lower --eval-problems to at most 270"), ("400", "at most about 150")]:
        assert main(["compare", "--task", spec, "--out-dir", str(out), "--eval-problems", n]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and fix in err[0], err
    assert not out.exists()


@pytest.mark.parametrize("odd_rows", [2000, 1])
def test_tiny_model_tasks_with_characters_it_cannot_write_are_refused(tmp_path, capsys, odd_rows):
    """Every row of a JSONL file is read, so one odd row among 900 is found too."""
    path = tmp_path / "p.jsonl"
    rows = [{"prompt": f"{i} + 17 =", "answer": str(17 + i)} for i in range(900)]
    rows = [{"prompt": f"{i} × 17 =", "answer": str(17 * i)} for i in range(odd_rows)] + rows
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
    out = tmp_path / "out"
    code = main(["compare", "--task", f"jsonl:{path}", "--out-dir", str(out), "--seeds", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "'×' (U+00D7)" in err, err
    assert not out.exists()


# ---- a user's task, checked in full -----------------------------------------------------------

USER_TASKS = textwrap.dedent(
    """
    import random
    from botgrpo.tasks.base import Example, Score

    class Base:
        name = "mine"
        def sample(self, rng):
            a = rng.randint(1, 9)
            return Example(f"{a}+1=", str(a + 1), {"a": a})
        def demonstration(self, ex):
            return ex.answer
        def score(self, ex, completion):
            return Score(float(completion.strip() == ex.answer))

    class FloatScore(Base):
        def score(self, ex, completion):
            return 1.0

    class SetMeta(Base):
        def sample(self, rng):
            return Example("1+1=", "2", {"seen": {1, 2}})

    class TupleMeta(Base):
        def sample(self, rng):
            return Example("1+1=", "2", {"pair": (1, 2)})

    class IntKeys(Base):
        def sample(self, rng):
            return Example("1+1=", "2", {1: "a"})

    class NoDemonstration(Base):
        def demonstration(self, ex):
            return None

    class Unseeded(Base):
        def sample(self, rng):
            return Example(f"{random.random()}", "1", {})

    class NanOutcome(Base):
        def score(self, ex, completion):
            return Score(float("nan"))

    class Raises(Base):
        def score(self, ex, completion):
            raise KeyError("answer")

    class SampleRaises(Base):
        def sample(self, rng):
            raise RuntimeError("the data server is down")

    def FactoryRaises():
        raise RuntimeError("no data file")
    """
)


@pytest.fixture
def user_tasks(tmp_path, monkeypatch):
    (tmp_path / "user_tasks.py").write_text(USER_TASKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "user_tasks"
    sys.modules.pop("user_tasks", None)


@pytest.mark.parametrize(
    ("cls", "says"),
    [
        ("FloatScore", "returned a float, not a Score"),
        ("SetMeta", "not JSON-serialisable"),
        ("TupleMeta", "tuples become lists"),
        ("IntKeys", "non-string keys"),
        ("NoDemonstration", "demonstration() returned a NoneType"),
        ("Unseeded", "different problems for the same seed"),
        ("NanOutcome", "finite number"),
        ("Raises", "raised KeyError"),
        ("SampleRaises", "loading it raised RuntimeError: the data server is down"),
        ("FactoryRaises", "loading it raised RuntimeError: no data file"),
    ],
)
def test_a_broken_user_task_is_refused_before_any_folder(user_tasks, tmp_path, capsys, cls, says):
    out = tmp_path / "out"
    code = main(["compare", "--task", f"{user_tasks}:{cls}", "--out-dir", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and says in err, err
    assert not out.exists()


def test_a_good_user_task_passes_and_its_code_is_in_the_warm_start_key(user_tasks, tmp_path):
    import importlib

    module = importlib.import_module(user_tasks)
    task = validate_task(module.Base())
    before = task_fingerprint(task)
    path = tmp_path / "user_tasks.py"
    path.write_text(path.read_text().replace("a + 1", "a + 1 + 0"))
    assert task_fingerprint(task) != before, "editing the task's code trains a new warm start"


def test_meta_reaches_training_exactly():
    from botgrpo.tasks.data import task_dataset

    ex = Example("p", "1", {"nested": {"xs": [1, 2.5, "z", None, True]}})
    row = task_dataset([ex])[0]
    assert Example.from_row(row["prompt"], row["answer"], row["meta"]).meta == ex.meta


@pytest.mark.parametrize("name", sorted(BUILTIN_TASKS))
def test_builtin_tasks_pass_the_check(name):
    validate_task(load_task(name), score=name in ("chain", "columns"))


# ---- typed options and reduced precision ------------------------------------------------------


@pytest.mark.parametrize("value", ["false", "False", 0, 1, None])
def test_a_boolean_option_takes_a_boolean(value):
    rewards, mask, group = (
        torch.randn(2, 3),
        torch.ones(2, 3, dtype=torch.bool),
        torch.tensor([0, 0]),
    )
    gae = get_advantage_estimator("gae")
    with pytest.raises(ValueError, match="option whiten must be bool"):
        gae(rewards, mask, group, values_BT=torch.zeros(2, 3), whiten=value)


@pytest.mark.parametrize(
    ("name", "option", "value"), [("gae", "gamma", "0.9"), ("grpo", "scale", 1)]
)
def test_numbers_and_strings_are_checked_too(name, option, value):
    rewards, mask, group = (
        torch.randn(2, 3),
        torch.ones(2, 3, dtype=torch.bool),
        torch.tensor([0, 0]),
    )
    extra = {"values_BT": torch.zeros(2, 3)} if name == "gae" else {}
    with pytest.raises(ValueError, match=f"option {option} must be"):
        get_advantage_estimator(name)(rewards, mask, group, **extra, **{option: value})


def test_string_booleans_are_refused_in_the_trainer_config():
    from botgrpo.trl import BoTGRPOConfig

    with pytest.raises(ValueError, match="whiten must be bool"):
        BoTGRPOConfig(output_dir="x", preset="ppo", advantage_options={"whiten": "false"})
    with pytest.raises(ValueError, match="whiten must be bool"):
        BoTGRPOConfig(output_dir="x", preset="ppo", advantage_options='{"whiten": "false"}')


@pytest.mark.parametrize("mode", ["seq-mean-token-mean", "token-mean", "seq-mean-token-sum-norm"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_losses_stay_finite_at_100k_tokens(mode, dtype):
    loss_BT = torch.full((4, 25_000), 3.0, dtype=dtype, requires_grad=True)
    loss = aggregate_loss(loss_BT, torch.ones(4, 25_000, dtype=torch.bool), mode)
    assert torch.isfinite(loss) and loss.dtype == torch.float32
    loss.backward()
    assert torch.isfinite(loss_BT.grad).all()


def test_policy_loss_metrics_stay_finite_in_fp16():
    logp = torch.zeros(2, 60_000, dtype=torch.float16, requires_grad=True)
    adv = torch.ones(2, 60_000, dtype=torch.float16)
    loss, metrics = get_policy_loss("ppo_clip")(
        logp, logp.detach(), adv, torch.ones(2, 60_000, dtype=torch.bool), aggregation="token-mean"
    )
    assert torch.isfinite(loss) and all(v == v and abs(v) < float("inf") for v in metrics.values())


# ---- help texts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", ["train", "compare", "demo", "warm-start", "summarize", "diagnose", "real-model"]
)
def test_every_help_renders(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "usage:" in out
    if command in ("train", "compare", "demo", "warm-start", "diagnose"):
        for name in BUILTIN_TASKS:
            assert name in out, f"{command} --help does not list the task {name}"
    if command in ("compare", "demo"):
        from botgrpo.harness.results import EVAL_METRICS

        for metric in EVAL_METRICS:
            assert metric in out, f"{command} --help does not list the metric {metric}"


@pytest.mark.parametrize("name", ["chain", "react", "python"])
def test_the_shipped_warm_starts_keep_their_keys(name):
    """A change to the task check, the fingerprint or the options must not orphan what ships."""
    from botgrpo.harness.cli import _task_defaults
    from botgrpo.harness.compare import warm_start_config
    from botgrpo.harness.config import CompareConfig, resolve_task_defaults
    from botgrpo.harness.evaluate import held_out_prompts
    from botgrpo.shipped import shipped_warm_start

    cfg = dataclasses.replace(
        CompareConfig(task=name), **_task_defaults(["--task", name], "compare_defaults")
    )
    task = load_task(name)
    resolve_task_defaults(cfg, task)
    key = warm_start_config(cfg, task).cache_key(task, held_out_prompts(task, cfg.eval_problems))
    shipped = json.loads((shipped_warm_start(name) / "warm_start.json").read_text())["key"]
    assert key == shipped


@pytest.mark.parametrize("variant", sorted(TEXT_VARIANTS))
def test_math_step_recipe_reads_every_variant_as_lf(variant):
    from botgrpo.rewards.recipes.math import make_math_step_reward
    from tests.rewards_tokenizers import byte_bpe

    tok = byte_bpe()  # byte-level: it writes every character
    reward = make_math_step_reward(tok)
    text = "<step 1> 2+3=5 </step 1>\n<step 2> 5*2=10 </step 2>\n<final>10</final>"
    texts = [text, TEXT_VARIANTS[variant](text)]
    ids = [[*tok(t).input_ids, tok.eos_token_id] for t in texts]
    lf, other = reward(prompts=["p"] * 2, completions=texts, completion_ids=ids, answer=["10"] * 2)
    assert other.outcome == lf.outcome == 1.0
    assert other.info["verdicts"] == lf.info["verdicts"] and other.info["format"] == "well_formed"


@pytest.mark.parametrize("variant", sorted(TEXT_VARIANTS))
def test_react_blocks_are_found_in_every_variant(variant):
    from botgrpo.rewards.recipes.react.recipe import extract_react_block
    from botgrpo.rewards.text import JS_BREAK

    text = "Here:\n```jsx\nexport default function A() {\n  return <p>hi</p>;\n}\n```\nDone.\n"
    other = TEXT_VARIANTS[variant](text)
    block = extract_react_block(other)
    assert block is not None and block.closed and block.language == "jsx"
    # JavaScript ends lines at CR, LF, CRLF, U+2028 and U+2029 (not at U+0085), as Babel does
    assert count_lines(block.code, JS_BREAK) == (1 if variant == "nel" else 3)


@pytest.mark.parametrize(
    ("spec", "length", "says"),
    [
        ("columns:min_digits=30,max_digits=40", None,
         "64 of 64 demonstrations are longer than the completion limit of 192 tokens"),
        ("chain:min_steps=18,max_steps=22", 260, "pass the tiny model's 256 positions"),
    ],
)  # fmt: skip
def test_solutions_that_do_not_fit_the_tiny_model_are_warned_about(tmp_path, spec, length, says):
    from botgrpo.harness.compare import check_inputs
    from botgrpo.harness.config import CompareConfig

    cfg = CompareConfig(task=spec, out_dir=str(tmp_path), max_completion_length=length)
    with pytest.warns(UserWarning, match=says):
        check_inputs(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the built-in task at its own settings fits
        check_inputs(CompareConfig(task="chain", out_dir=str(tmp_path)))
