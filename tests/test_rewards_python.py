"""Recipe 2 carried to Python (Eqs. 6-7): code blocks, diagnostics, sandboxed tests, penalties."""

from __future__ import annotations

import os
import re

import pytest

from botgrpo.rewards.code_blocks import extract_code_block
from botgrpo.rewards.compose import LineSignalConfig
from botgrpo.rewards.recipes.python import (
    CodeJudgement,
    PythonRewardConfig,
    make_python_code_reward,
)
from botgrpo.rewards.verifiers.python_diagnostics import (
    analyse_python,
    lint_python,
    pyflakes_severity,
    syntax_error,
)
from botgrpo.tiny import build_char_tokenizer

TOK = build_char_tokenizer()  # token i <-> character i
NO_TESTS = PythonRewardConfig(run_tests=False)
PROSE = "Here:\n```python\n"  # 6 + 10 characters: the code starts at character 16
HUMANEVAL_TEST = (
    "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n"
)


def _ids(text: str) -> list[int]:
    return [*TOK(text).input_ids, TOK.eos_token_id]


def _respond(code: str) -> str:
    return f"{PROSE}{code}```\nDone."


def _line_starts(code: str) -> list[int]:
    """Character offset of each code line in the response (token index with TOK)."""
    starts, pos = [], len(PROSE)
    for line in code.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    return starts


def _call(reward, texts, **columns):
    return reward(
        prompts=["task"] * len(texts),
        completions=texts,
        completion_ids=[_ids(t) for t in texts],
        **columns,
    )


# ---------------------------------------------------------------------------------------------
# Code blocks and diagnostics


def test_code_block_choice():
    text = "```js\nlet a\n```\n```\nplain = 1\n```\n```Python\nx = 2\n```"
    assert extract_code_block(text).code == "x = 2\n"  # tagged python wins, case-insensitive
    assert extract_code_block("```\nplain = 1\n```").code == "plain = 1\n"
    assert extract_code_block("```js\nlet a\n```") is None  # only another language
    truncated = extract_code_block("Sure:\n```python\ndef f():\n    return")
    assert truncated.code == "def f():\n    return" and not truncated.closed
    whole = extract_code_block("x = 1\nprint(x)\n")
    assert whole.code == "x = 1\nprint(x)\n" and not whole.fenced
    assert extract_code_block("The answer is: yes.") is None
    tildes = extract_code_block("~~~python\ny = 3\n~~~")
    assert tildes.code == "y = 3\n"


def test_syntax_and_lint_diagnostics():
    err = syntax_error("def f(:\n    pass\n")
    assert (err.line, err.severity, err.kind) == (1, "fatal", "SyntaxError")
    assert syntax_error("return 1").message == "'return' outside function"
    assert syntax_error(r"x = '\0'") is None  # an escaped NUL in a literal is fine
    assert syntax_error("x = 1\0") is not None  # a raw NUL byte is not
    code = "import os\ndef f(x):\n    y = 1\n    return z\n"
    assert [(d.line, d.severity, d.kind) for d in lint_python(code)] == [
        (1, "warning", "UnusedImport"),
        (3, "warning", "UnusedVariable"),
        (4, "error", "UndefinedName"),
    ]
    assert pyflakes_severity("ReturnOutsideFunction") == "fatal"
    assert pyflakes_severity("PercentFormatMissingArgument") == "error"
    assert pyflakes_severity("SomeFutureMessage") == "warning"


# ---------------------------------------------------------------------------------------------
# Hand-computed rewards


def test_clean_code_all_tests_pass():
    code = "def add(a, b):\n    return a + b\n"
    [tr] = _call(
        make_python_code_reward(TOK), [_respond(code)], test=[HUMANEVAL_TEST], entry_point=["add"]
    )
    # compiles, no lint, 2/2 cases: G = 0 + 1.0 * 2/2 = 1; no line penalty
    assert tr.outcome == 1.0 and tr.info["tests"] == (2, 2)
    assert not tr.local.any() and tr.n_tokens == len(_respond(code)) + 1


def test_syntax_error_line_decays_over_neighbours():
    code = "x = 1\ny = (2\nz = 3\nw = 4\nv = 5\nu = 6\n"
    [tr] = _call(make_python_code_reward(TOK, NO_TESTS), [_respond(code)])
    # "(" never closed: reported on line 2. G = -1 (syntax), no lint, no tests.
    assert tr.outcome == -1.0 and tr.info["syntax_error"][0] == 2
    # p_2 = -1; phi over lines 1..6 with w = 3: d = 1, 0, 1, 2, 3, 4
    per_line = [-0.75, -1.0, -0.75, -0.5, -0.25, 0.0]
    starts = _line_starts(code)
    for line, value in enumerate(per_line):
        assert tr.local[starts[line]] == pytest.approx(value)
    assert tr.local[: len(PROSE)].tolist() == [0.0] * len(PROSE)  # prose and fence
    assert tr.local[-1] == 0.0  # EOS


def test_lint_and_failing_traceback_merge_on_a_line():
    code = "def add(a, b):\n    total = a + b\n    return total + c\n"
    [tr] = _call(
        make_python_code_reward(TOK), [_respond(code)], test=[HUMANEVAL_TEST], entry_point=["add"]
    )
    # pyflakes: UndefinedName "c" on line 3 (error, -0.1). Both cases raise NameError on line 3.
    # G = lint -0.1 + tests 0/2 = -0.1
    assert tr.outcome == pytest.approx(-0.1)
    assert tr.info["tests"] == (0, 2)
    # p_3 = -0.1 (lint) + -0.5 (traceback line) = -0.6
    assert tr.info["line_penalties"] == {3: pytest.approx(-0.6)}
    starts = _line_starts(code)
    # line 3: -0.6; line 2: -0.6 * 0.75 = -0.45; line 1: -0.6 * 0.5 = -0.3
    assert tr.local[starts[2]] == pytest.approx(-0.6)
    assert tr.local[starts[1]] == pytest.approx(-0.45)
    assert tr.local[starts[0]] == pytest.approx(-0.3)


def test_wrong_answer_has_no_line_to_blame():
    code = "def add(a, b):\n    return a - b\n"
    [tr] = _call(
        make_python_code_reward(TOK), [_respond(code)], test=[HUMANEVAL_TEST], entry_point=["add"]
    )
    # candidate(1, 2) == -1 fails (the assert is in the test), candidate(0, 0) == 0 passes.
    assert tr.outcome == 0.5 and tr.info["tests"] == (1, 2)
    assert not tr.local.any()


def test_bound_clamps_many_penalties_on_one_line():
    code = "import os, sys, re, json\n"
    cfg = PythonRewardConfig(run_tests=False, lines=LineSignalConfig(bound=0.05))
    [tr] = _call(make_python_code_reward(TOK, cfg), [_respond(code)])
    # 4 unused imports: G = 4 * -0.02 = -0.08; p_1 = -0.08 clamped to -0.05
    assert tr.outcome == pytest.approx(-0.08)
    assert tr.local[len(PROSE)] == pytest.approx(-0.05)
    assert tr.local.min() >= -0.05


def test_lint_floor_bounds_the_global_score():
    code = "".join(f"print(u{i})\n" for i in range(15))  # 15 undefined names: 15 * -0.1
    [tr] = _call(make_python_code_reward(TOK, NO_TESTS), [_respond(code)])
    assert tr.outcome == -1.0  # max(lint_floor = -1.0, -1.5)


def test_no_code_and_empty_completion():
    reward = make_python_code_reward(TOK, NO_TESTS)
    out = reward(
        prompts=["t", "t"],
        completions=["I cannot do that.", ""],
        completion_ids=[_ids("I cannot do that."), [TOK.eos_token_id]],
    )
    assert [tr.outcome for tr in out] == [-1.0, -1.0]
    assert not out[0].local.any() and out[1].n_tokens == 1


def test_blank_or_comment_only_code_counts_as_no_code():
    reward = make_python_code_reward(TOK)
    texts = ["```python\n```", "```python\n# TODO: write the function\n```"]
    out = _call(reward, texts, test=[HUMANEVAL_TEST] * 2, entry_point=["add"] * 2)
    assert [tr.outcome for tr in out] == [-1.0, -1.0]  # no_code_score, not the 0 of clean code
    assert all(tr.info["code"] is None for tr in out)


def test_tests_cell_none_runs_no_tests():
    code = "def add(a, b):\n    return a + b\n"
    [tr] = _call(make_python_code_reward(TOK), [_respond(code)], test=[None], entry_point=["add"])
    assert tr.outcome == 0.0 and tr.info["tests"] is None


def test_candidate_code_never_runs_in_this_process(tmp_path):
    # If this ran here, it would kill the test process (os._exit) or write a file.
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('x')\nimport os\nos._exit(3)\n"
    [tr] = _call(
        make_python_code_reward(TOK), [_respond(code)], test=[HUMANEVAL_TEST], entry_point=["add"]
    )
    assert tr.info["tests"][0] == 0  # nothing passed in the sandbox
    assert not os.path.exists(marker)


def test_code_judge_adds_score_and_lines():
    code = "def add(a, b):\n    return a + b\n"
    seen = []

    def judge(task, code_block):
        seen.append((task, code_block))
        return CodeJudgement(score=7.0, lines={1: -3})

    reward = make_python_code_reward(TOK, NO_TESTS, code_judge=judge)
    [tr] = _call(reward, [_respond(code)])
    assert seen == [("task", code)]
    # G = 0 (clean) + 1.0 * 7 / 10 = 0.7; p_1 = 0.1 * -3 = -0.3; line 2: -0.3 * 0.75
    assert tr.outcome == pytest.approx(0.7)
    starts = _line_starts(code)
    assert tr.local[starts[0]] == pytest.approx(-0.3)
    assert tr.local[starts[1]] == pytest.approx(-0.225)


def test_code_judge_forms_and_failures():
    code = "x = 1\n"
    for result in (
        {"score": 5, "lines": {}},
        (5, {}),
        type("V", (), {"score": 5.0, "lines": {}})(),
    ):
        reward = make_python_code_reward(TOK, NO_TESTS, code_judge=lambda t, c, r=result: r)
        assert _call(reward, [_respond(code)])[0].outcome == pytest.approx(0.5)
    failed = make_python_code_reward(TOK, NO_TESTS, code_judge=lambda t, c: CodeJudgement(None))
    assert _call(failed, [_respond(code)])[0].outcome == 0.0  # no score: 0, no lines

    def bad_judge(task, code_block):
        return {"score": 11}

    with pytest.raises(
        ValueError, match=r"code judge 'bad_judge' on completion 0 returned score 11"
    ):
        _call(make_python_code_reward(TOK, NO_TESTS, code_judge=bad_judge), [_respond(code)])

    def bad_lines(task, code_block):
        return {"score": 3, "lines": {1: -5}}

    with pytest.raises(ValueError, match=r"flagged line 1 with impact -5"):
        _call(make_python_code_reward(TOK, NO_TESTS, code_judge=bad_lines), [_respond(code)])


@pytest.mark.parametrize("line", [0, -4, 3, 99, 1.5, True])
def test_a_judge_line_outside_the_code_is_refused_not_moved(line):
    """A judge counting lines from 0, or naming a line past the end: moved to the nearest line,
    its penalty would land on a line the judge never named."""
    reward = make_python_code_reward(
        TOK, NO_TESTS, code_judge=lambda t, c: {"score": 5, "lines": {line: -3}}
    )
    with pytest.raises(ValueError, match=r"outside the code's lines 1-2; number the lines"):
        _call(reward, [_respond("x = 1\ny = 2\n")])


def test_a_judge_score_of_any_real_number_type_is_read():
    import numpy as np

    for score in (np.int64(7), np.float32(7.0), 7):
        reward = make_python_code_reward(TOK, NO_TESTS, code_judge=lambda t, c, s=score: (s, {}))
        assert _call(reward, [_respond("x = 1\n")])[0].outcome == pytest.approx(0.7)


def test_missing_test_column_is_named():
    reward = make_python_code_reward(TOK)
    with pytest.raises(KeyError, match=r"python_code_reward: needs the dataset column 'test'"):
        _call(reward, [_respond("x = 1\n")], tests=["..."])


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ([], "no test case"),
        ("X = 1\n", "no test case"),
        (5, "tests must be a test program (a str) or a list of snippets"),
        ({"a": 1}, "got dict"),
        ("assert (", "does not parse"),
    ],
)
def test_a_bad_tests_row_is_named_by_its_completion_whether_it_compiles_or_not(bad, says):
    """A dataset row that cannot be tested ends the call naming that completion's index, also
    when its completion does not compile (its tests would not run, the row would go unseen)."""
    good = "def add(a, b):\n    return a + b\n"
    broken = "def add(a, b)\n    return a + b\n"
    reward = make_python_code_reward(TOK)
    for code in (good, broken):
        with pytest.raises(ValueError, match=f"the tests of completion 1: .*{re.escape(says)}"):
            _call(
                reward,
                [_respond(good), _respond(code)],
                test=[HUMANEVAL_TEST, bad],
                entry_point=["add", "add"],
            )


def test_batch_keeps_order_and_lengths():
    codes = ["def add(a, b):\n    return a + b\n", "def add(a, b):\n    return a *\n", "oops"]
    texts = [_respond(codes[0]), _respond(codes[1]), codes[2]]
    out = _call(
        make_python_code_reward(TOK), texts, test=[HUMANEVAL_TEST] * 3, entry_point=["add"] * 3
    )
    # pass; syntax error; "oops" compiles as a bare name: undefined (-0.1), no add(): 0 tests
    assert [tr.outcome for tr in out] == [1.0, -1.0, -0.1]
    assert out[2].info["tests"][0] == 0
    assert [tr.n_tokens for tr in out] == [len(t) + 1 for t in texts]
    # "oops" raises NameError on import (line 1): p_1 = -0.1 (lint) + -0.5 (traceback)
    assert out[2].local.tolist() == pytest.approx([-0.6] * 4 + [0.0])


def test_config_is_validated():
    with pytest.raises(ValueError, match="lint_floor must be <= 0"):
        PythonRewardConfig(lint_floor=0.5)
    with pytest.raises(ValueError, match="syntax_error_score must be finite"):
        PythonRewardConfig(syntax_error_score=float("nan"))
    with pytest.raises(ValueError, match="test_workers"):
        PythonRewardConfig(test_workers=0)


def test_a_fence_inside_a_list_item_is_read_as_commonmark_reads_it():
    """A fence indented inside a Markdown list item: its content loses the fence's indentation
    before it is compiled and tested (its lines stay where they are in the response)."""
    text = "1. Define it:\n   ```python\n   def add(a, b):\n       return a + b\n   ```\n"
    block = extract_code_block(text)
    assert block.indent == 3 and text[block.start : block.end] == block.code
    assert block.source == "def add(a, b):\n    return a + b\n"
    [tr] = _call(make_python_code_reward(TOK), [text], test=[HUMANEVAL_TEST], entry_point=["add"])
    assert tr.info["syntax_error"] is None and tr.info["tests"] == (2, 2)
    assert tr.outcome == pytest.approx(1.0)
    # a syntax error is still placed on its own line of the response
    broken = text.replace("return a + b", "return a +")
    [tr] = _call(make_python_code_reward(TOK), [broken], test=[HUMANEVAL_TEST], entry_point=["add"])
    assert tr.info["syntax_error"][0] == 2 and tr.outcome == -1.0


def test_a_fence_inside_the_code_does_not_close_its_block():
    """CommonMark: a closing fence is indented at most 3 columns past the opening one, so a
    fence shown in a docstring (4 spaces in) is part of the code; one 3 columns in closes."""
    doc = '    """Usage:\n\n    ```\n    f()\n    ```\n    """\n'
    text = f"```python\ndef f():\n{doc}    return 1\n```\nThat is all."
    block = extract_code_block(text)
    assert block.code == f"def f():\n{doc}    return 1\n" and block.closed
    assert analyse_python(block.source).syntax is None
    assert extract_code_block("```python\nx = 1\n   ```\ny = 2\n").code == "x = 1\n"
    assert extract_code_block("\t```python\n\tx = 1\n\t```\n").closed
