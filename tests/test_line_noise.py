"""Noisy line penalties, the random-verdict control of code.

The draws alone (counts, sums, rates, the lines a penalty lands on), the recipe option's checks,
and the control on the real toolchains: a slip that the React toolchain (Babel) and the Python
checks flag at its line is, under ``1:random``, penalised as much but at a line drawn at random,
while the outcome (what outcome-only methods see) is unchanged.
"""

from __future__ import annotations

import itertools
import pickle
import random
from collections import Counter

import numpy as np
import pytest

from botgrpo.rewards import (
    LineSignalConfig,
    PythonRewardConfig,
    config_from_mapping,
    noisy_line_penalties,
)
from botgrpo.tasks import NoisyLines, NoisyVerdicts, load_task
from botgrpo.tasks.base import task_fingerprint
from botgrpo.tasks.noise import clean_task, with_verdict_noise
from botgrpo.tiny import build_char_tokenizer

from .test_code_tasks import examples, slipped_lines

PENALTIES = {3: -1.0, 9: -0.5, 14: -0.25}


def test_no_noise_and_nothing_to_move_leave_the_penalties_alone():
    assert noisy_line_penalties(PENALTIES, 20, "", key="k") == PENALTIES
    assert noisy_line_penalties(PENALTIES, 20, "0:random", key="k") == PENALTIES
    assert noisy_line_penalties({}, 20, "1:random", key="k") == {}


def test_random_at_one_keeps_the_size_of_the_signal_and_spreads_it_evenly():
    landed = Counter()
    for i in range(3000):
        moved = noisy_line_penalties({7: -1.0}, 10, "1:random", key=f"code {i}")
        [(line, value)] = moved.items()
        assert value == -1.0 and 1 <= line <= 10
        landed[line] += 1
        many = noisy_line_penalties(PENALTIES, 20, "1:random", key=f"code {i}")
        assert sum(many.values()) == pytest.approx(sum(PENALTIES.values()))
    assert set(landed) == set(range(1, 11))
    assert all(250 <= n <= 350 for n in landed.values()), landed  # 300 each, sd about 16


def test_part_random_moves_that_share_and_miss_drops_that_share():
    kept_in_place = moved_away = dropped = 0
    for i in range(2000):
        part = noisy_line_penalties({7: -1.0}, 10, "0.3:random", key=f"c{i}")
        kept_in_place += part == {7: -1.0}
        moved_away += part != {7: -1.0}
        missed = noisy_line_penalties({7: -1.0}, 10, "0.4:miss", key=f"c{i}")
        assert missed in ({7: -1.0}, {})
        dropped += missed == {}
    # moved with probability 0.3, and 1 in 10 of those lands where it was: 0.27 away
    assert 0.23 < moved_away / 2000 < 0.31
    assert 0.36 < dropped / 2000 < 0.44


def test_the_draws_are_a_function_of_the_code():
    a = noisy_line_penalties(PENALTIES, 40, "1:random", key="same code")
    assert a == noisy_line_penalties(PENALTIES, 40, "1:random", key="same code")
    others = {
        tuple(noisy_line_penalties(PENALTIES, 40, "1:random", key=f"other {i}")) for i in range(5)
    }
    assert len(others) > 1


@pytest.mark.parametrize(
    ("noise", "says"),
    [
        ("0.2", "the line penalties of code take kinds random or miss"),
        ("0.2:false_alarm", "no verdict to false_alarm"),
        ("2:random", "rate must lie in [0, 1]"),
        ("1:oops", "unknown verdict noise kind 'oops'"),
    ],
)
def test_bad_line_noise_is_a_one_line_error(noise, says):
    with pytest.raises(ValueError, match=r"LineSignalConfig\.noise") as err:
        LineSignalConfig(noise=noise)
    assert says in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"random or miss|rate must|unknown"):
        with_verdict_noise(load_task("python"), noise)


def test_the_option_is_written_one_way():
    assert LineSignalConfig(noise=" 1 : random ").noise == "1:random"
    cfg = config_from_mapping(PythonRewardConfig, {"lines": {"noise": "0.50:miss"}})
    assert cfg.lines.noise == "0.5:miss"


def test_code_tasks_get_the_line_wrapper_and_step_tasks_the_step_one():
    react = with_verdict_noise(load_task("react"), "1:random")
    assert isinstance(react, NoisyLines) and clean_task(react).name == "react"
    assert isinstance(with_verdict_noise(load_task("chain"), "1:random"), NoisyVerdicts)
    assert task_fingerprint(react) != task_fingerprint(load_task("react"))
    assert task_fingerprint(react) != task_fingerprint(
        with_verdict_noise(load_task("react"), "1:miss")
    )
    again = pickle.loads(pickle.dumps(react))
    assert task_fingerprint(again) == task_fingerprint(react)
    with pytest.raises(ValueError, match="drawn from the code alone"):
        with_verdict_noise(load_task("react"), "1:random", seed=3)
    with pytest.raises(ValueError, match="wrap the clean task once"):
        NoisyLines(react, 1.0)
    with pytest.raises(ValueError, match="no line recipe of its own"):
        NoisyLines(load_task("chain"), 1.0)
    tok = build_char_tokenizer()
    with pytest.raises(
        ValueError, match=r"already sets lines\.noise='0\.5:miss'; give the noise once"
    ):
        react.reward_function(tok, {"lines": {"noise": "0.5:miss"}})


@pytest.mark.parametrize(
    ("spec", "slip"), [("react:sections=3,max_parts=3", "tag"), ("python:helpers=3", "colon")]
)
def test_the_control_moves_a_flagged_slip_on_the_real_toolchain(spec, slip):
    """One slip in a long completion: the clean reward penalises its line; the control the same
    amount at a line drawn at random (mostly another); the outcome is the same."""
    perfect = load_task(f"{spec},slip=none")
    sloppy = load_task(f"{spec},slip={slip},slip_rate=1.0")
    texts, rows = [], []
    for i, ex in enumerate(examples(perfect, 8, seed=5)):
        clean, slipped = perfect.demonstration(ex), sloppy.demonstration(ex, random.Random(i))
        lines = slipped_lines(clean, slipped)
        keep = clean.split("\n")
        keep[lines[0]] = slipped.split("\n")[lines[0]]  # the first slip only
        texts.append("\n".join(keep))
        rows.append(ex.to_row())
    tok = build_char_tokenizer()
    columns = {
        "prompts": [r["prompt"] for r in rows],
        "completions": texts,
        "completion_ids": [tok(t).input_ids for t in texts],
        "answer": [r["answer"] for r in rows],
        "meta": [r["meta"] for r in rows],
    }
    task = load_task(spec)
    clean_out = task.reward_function(tok)(**columns)
    noisy_out = with_verdict_noise(task, "1:random").reward_function(tok)(**columns)
    moved = 0
    for clean, noisy in zip(clean_out, noisy_out, strict=True):
        assert noisy.outcome == clean.outcome
        checked = clean.info["line_penalties"]
        assert checked and noisy.info["checked_line_penalties"] == checked
        assert sum(noisy.info["line_penalties"].values()) == pytest.approx(sum(checked.values()))
        moved += noisy.info["line_penalties"] != checked
        if noisy.info["line_penalties"] != checked:
            assert not np.allclose(noisy.local, clean.local)
        # the verdicts the reward gave (what diagnose checks against the clean ones) moved too
        moves = noisy.info["line_moves"]
        flagged = {k + 1 for k, v in enumerate(clean.info["raw_verdicts"]) if v == -1}
        assert flagged and flagged <= set(checked)
        judged = {k + 1 for k, v in enumerate(noisy.info["raw_verdicts"]) if v == -1}
        assert judged == {moves[line] for line in flagged}
    assert moved >= 6  # a page or a function of 25+ lines: the draw rarely hits the same line


def test_a_summary_says_what_the_noise_changed():
    from botgrpo.harness.config import CompareConfig
    from botgrpo.harness.summary import _noise_line, _noise_target

    assert _noise_target(CompareConfig(task="react", verdict_noise="1:random")) == "lines"
    assert _noise_target(CompareConfig(task="chain", verdict_noise="1:random")) == "steps"
    line = _noise_line("1:random", lines=True)
    assert "100% of line penalties moved to a line drawn at random" in line
    assert "step verdicts" in _noise_line("1:random")


@pytest.mark.slow
def test_a_comparison_on_code_with_the_control_records_it(tmp_path):
    """compare --verdict-noise 1:random on a code task: bot trains on random lines, grpo's run
    does not depend on it, and the summary says what changed."""
    import json

    from botgrpo.harness.compare import compare
    from botgrpo.harness.config import CompareConfig

    cfg = CompareConfig(
        name="control",
        out_dir=str(tmp_path),
        task="react:sections=2,max_parts=2",
        methods=("grpo", "bot"),
        seeds=1,
        steps=1,
        eval_every=1,
        eval_problems=2,
        pass_samples=1,
        pass_problems=2,
        greedy=False,
        prompts_per_step=2,
        num_generations=2,
        max_completion_length=32,
        warm_start_steps=2,
        warmup_steps=0,
        metric="sampled_compiled",
        workers=1,
        progress=False,
        verdict_noise="1:random",
    )
    summary = compare(cfg).read_text()
    root = tmp_path / "control"
    stored = {
        p.parent.name.split("-")[0]: json.loads(p.read_text())["settings"]
        for p in root.glob("runs/*/done.json")
    }
    assert stored["bot"]["verdict_noise"] == "1:random" and "verdict_noise" not in stored["grpo"]
    assert json.loads((root / "summary.json").read_text())["verdict_noise_on"] == "lines"
    assert "100% of line penalties moved to a line drawn at random" in summary


def test_without_noise_the_reward_is_bit_for_bit_the_recipe_of_before():
    """The local signal adds the penalties up in the order the checks give them (lint before
    failing tests): float sums depend on it, so noise "" must not reorder them."""
    from botgrpo.rewards import (
        PythonRewardConfig,
        clamp_local,
        extract_code_block,
        line_values,
        offsets_from_text,
        spread_span_scores,
    )
    from botgrpo.rewards.recipes.python import (
        TestOutcome,
        _line_penalties,
        analyse_python,
        score_python_completion,
    )

    code = "import os\n\ndef f(x):\n    y = 1\n    z = q\n    w = r\n    return x\n" * 2
    text = f"```python\n{code}```"
    tokens = offsets_from_text(build_char_tokenizer(), text)
    block = extract_code_block(text)
    analysis = analyse_python(block.code)
    cfg = PythonRewardConfig()
    spans = block.line_spans(text)

    def local(p):
        values = line_values(p, block.n_lines, cfg.lines)
        return clamp_local(spread_span_scores(tokens.offsets_T2, spans, values), 1.0)

    reordered = 0
    for failing in itertools.combinations(range(1, block.n_lines + 1), 2):
        tests = TestOutcome(1, 3, failing_lines=failing)
        got = score_python_completion(tokens, cfg, tests=tests, block=block, analysis=analysis)
        penalties = _line_penalties(block, None, analysis.diagnostics, tests, None, cfg)
        assert np.array_equal(got.local, local(penalties)), failing
        reordered += not np.array_equal(local(penalties), local(dict(sorted(penalties.items()))))
    assert reordered, "no case where the order changes the sum: the check above proves little"


def test_an_error_at_the_end_of_input_is_a_verdict_on_the_last_line():
    """Babel reports an unfinished component's error one line past the end; the recipe puts
    its penalty on the last line, and the line verdicts say the same (moved with the noise)."""
    text = "```jsx\nexport default function A() {\n  return <div>\n    <p>Hi</p>\n```"
    task = load_task("react")
    [ex] = examples(task, 1)
    tok = build_char_tokenizer()
    columns = {
        "prompts": [ex.prompt],
        "completions": [text],
        "completion_ids": [tok(text).input_ids],
        "answer": [ex.to_row()["answer"]],
        "meta": [ex.to_row()["meta"]],
    }
    [clean] = task.reward_function(tok)(**columns)
    n = len(clean.info["raw_verdicts"])
    assert clean.info["compiled"] == 0.0 and n in clean.info["line_penalties"]
    assert clean.info["raw_verdicts"][-1] == -1
    [noisy] = with_verdict_noise(task, "1:random").reward_function(tok)(**columns)
    to = noisy.info["line_moves"][n]
    assert [k + 1 for k, v in enumerate(noisy.info["raw_verdicts"]) if v == -1] == [to]


def test_the_control_checkpoints_so_its_runs_resume_exactly():
    from botgrpo.harness.config import CompareConfig
    from botgrpo.harness.runner import RunSpec, _checkpointing

    spec = RunSpec("bot", 0, 4e-4, "m", "r", CompareConfig(checkpoint_every=5, eval_every=5))
    noisy = with_verdict_noise(load_task("react"), "1:random")
    assert _checkpointing(spec, noisy)["save_strategy"] == "steps"
    step_random = with_verdict_noise(load_task("chain"), "1:random")  # a running share: no
    assert _checkpointing(spec, step_random) == {"save_strategy": "no"}
