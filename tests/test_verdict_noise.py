"""Noisy step verdicts (botgrpo.tasks.noise): the shares each kind changes, what it never
touches, determinism, a user's task through the wrapper, and the comparison's option."""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import sys

import numpy as np
import pytest

from botgrpo.harness.config import CompareConfig
from botgrpo.harness.runner import RunSpec, run_settings
from botgrpo.harness.warmstart import WarmStartConfig
from botgrpo.tasks import ChainArithmetic, NoisyVerdicts, VerdictNoise, load_task
from botgrpo.tasks.base import Example, Score, StepVerdict
from botgrpo.tasks.noise import clean_task, with_verdict_noise
from botgrpo.tasks.reward import make_task_reward
from botgrpo.tiny import build_char_tokenizer
from tests.user_task import Doubling


class Ledger:
    """A user's task with many steps per completion: verdict i of a completion is -1 when
    character i is 'x', +1 when 'o', 0 when '?' (so tests choose the clean verdicts)."""

    name = "ledger"

    def sample(self, rng: random.Random) -> Example:
        return Example(f"p{rng.randrange(10**9)}\n", "done", {"k": 1})

    def demonstration(self, example: Example) -> str:
        return "ooooo"

    def score(self, example: Example, completion: str) -> Score:
        steps = tuple(
            StepVerdict(i, i + 1, {"x": -1, "o": 1, "?": 0}[c]) for i, c in enumerate(completion)
        )
        return Score(0.5, steps, well_formed=False, answer="a", metrics={"compiled": 1.0})


def _verdict_pairs(task, rate, kind, n=400, seed=0, share=None):
    """(clean, noisy) verdicts over n completions of 20 steps (3/4 correct, as a slipping
    policy's), each with its own prompt."""
    noisy = NoisyVerdicts(task, rate, kind, seed=seed, share=share)
    rng = random.Random(1)
    pairs = []
    for _ in range(n):
        ex = task.sample(rng)
        text = "".join(rng.choice("ooox") for _ in range(20))
        clean = task.score(ex, text)
        pairs += [
            (c.verdict, d.verdict)
            for c, d in zip(clean.steps, noisy.score(ex, text).steps, strict=True)
        ]
    return np.array(pairs)


def _share_changed(pairs, clean_value):
    rows = pairs[pairs[:, 0] == clean_value]
    return float(np.mean(rows[:, 1] != rows[:, 0]))


@pytest.mark.parametrize(
    ("kind", "changed_correct", "changed_incorrect"),
    [("flip", 0.3, 0.3), ("false_alarm", 0.3, 0.0), ("miss", 0.0, 0.3)],
)
def test_each_kind_changes_its_share_of_verdicts(kind, changed_correct, changed_incorrect):
    pairs = _verdict_pairs(Ledger(), 0.3, kind)  # 8000 verdicts: 2000 incorrect
    assert _share_changed(pairs, 1) == pytest.approx(changed_correct, abs=0.025)
    assert _share_changed(pairs, -1) == pytest.approx(changed_incorrect, abs=0.04)
    assert set(np.unique(pairs[:, 1])) <= {-1, 1}


def test_random_verdicts_keep_the_share_of_correct_ones_but_not_which_steps():
    pairs = _verdict_pairs(Ledger(), 1.0, "random")
    clean_share = float(np.mean(pairs[:, 0] == 1))
    assert float(np.mean(pairs[:, 1] == 1)) == pytest.approx(clean_share, abs=0.025)
    # independent of correctness: a +1 is as likely after a clean -1 as after a clean +1
    after_wrong = float(np.mean(pairs[pairs[:, 0] == -1, 1] == 1))
    after_right = float(np.mean(pairs[pairs[:, 0] == 1, 1] == 1))
    assert abs(after_wrong - after_right) < 0.04
    assert abs(np.corrcoef(pairs[:, 0], pairs[:, 1])[0, 1]) < 0.05
    # rate mixes clean and random; a given share sets the odds of a +1
    half = _verdict_pairs(Ledger(), 0.5, "random")
    assert _share_changed(half, -1) == pytest.approx(0.5 * clean_share, abs=0.04)
    given = _verdict_pairs(Ledger(), 1.0, "random", share=0.2)
    assert float(np.mean(given[:, 1] == 1)) == pytest.approx(0.2, abs=0.025)


def test_uncertain_verdicts_outcome_spans_format_and_metrics_are_never_touched():
    task = Ledger()
    noisy = NoisyVerdicts(task, 1.0, "flip")
    ex = task.sample(random.Random(0))
    clean, changed = task.score(ex, "ox?o"), noisy.score(ex, "ox?o")
    assert [s.verdict for s in changed.steps] == [-1, 1, 0, -1]
    assert [(s.start, s.end) for s in changed.steps] == [(s.start, s.end) for s in clean.steps]
    assert dataclasses.replace(changed, steps=clean.steps) == clean
    [batch] = noisy.score_batch([ex], ["ox?o"])
    assert batch == changed


def test_the_same_completion_gets_the_same_verdicts_and_the_seed_changes_them():
    task = ChainArithmetic()
    rng = random.Random(3)
    examples = [task.sample(rng) for _ in range(50)]
    texts = [task.demonstration(ex) for ex in examples]

    def verdicts(seed):
        noisy = NoisyVerdicts(task, 0.5, "flip", seed=seed)
        return [
            [s.verdict for s in noisy.score(e, t).steps]
            for e, t in zip(examples, texts, strict=True)
        ]

    first = verdicts(0)
    assert verdicts(0) == first  # another wrapper, another run: the same noise
    assert NoisyVerdicts(task, 0.5, "flip").score(examples[0], texts[0]) == NoisyVerdicts(
        task, 0.5, "flip"
    ).score(examples[0], texts[0])
    assert verdicts(1) != first


def test_a_users_task_through_the_wrapper_into_token_rewards():
    task = with_verdict_noise(Doubling(), "1:flip")
    assert task.name == "doubling" and clean_task(task).__class__ is Doubling
    ex = task.sample(random.Random(0))
    text = task.demonstration(ex)
    tok = build_char_tokenizer()
    reward = make_task_reward(task, tok)
    [tr] = reward(
        prompts=[ex.prompt],
        completions=[text],
        completion_ids=[tok(text).input_ids],
        **{k: [v] for k, v in ex.to_row().items() if k != "prompt"},
    )
    assert tr.info["raw_verdicts"] == [-1] and tr.outcome == 1.0  # outcome kept, verdict flipped
    assert with_verdict_noise(Doubling(), "").__class__ is Doubling


def test_the_wrapper_keeps_the_tasks_options_and_warm_start():
    task = load_task("chain:max_steps=6")
    noisy = NoisyVerdicts(task, 0.2)
    assert noisy.max_steps == 6 and noisy.teacher == task.teacher
    config = WarmStartConfig(steps=5)
    assert config.cache_key(noisy) == config.cache_key(task)  # no new warm start for noise


def test_tasks_the_noise_cannot_reach_and_bad_options_are_refused():
    with pytest.raises(ValueError, match="own reward function"):
        NoisyVerdicts(load_task("react"), 0.2)
    with pytest.raises(ValueError, match="already has noisy verdicts"):
        NoisyVerdicts(NoisyVerdicts(Doubling(), 0.1), 0.1)
    with pytest.raises(TypeError, match="is not a task"):
        NoisyVerdicts(object(), 0.1)  # type: ignore[arg-type]
    for bad, match in [
        ("1.5", "rate must lie in"),
        ("-0.1", "rate must lie in"),
        ("nan", "rate must lie in"),
        ("x", "'x' is not a rate"),
        ("0.2:bogus", "unknown verdict noise kind 'bogus'"),
    ]:
        with pytest.raises(ValueError, match=match):
            VerdictNoise.parse(bad)
    with pytest.raises(ValueError, match="share must lie"):
        NoisyVerdicts(Doubling(), 1.0, "random", share=2.0)
    assert VerdictNoise.parse(" 0.30 : miss ").spec() == "0.3:miss"
    assert CompareConfig(verdict_noise="0.2").verdict_noise == "0.2:flip"


def test_outcome_methods_do_not_depend_on_the_noise_and_bot_does():
    def settings(method, noise):
        cfg = CompareConfig(verdict_noise=noise)
        return run_settings(RunSpec(method, 0, 1e-4, "m", "r", cfg))

    assert settings("grpo", "0.3:flip") == settings("grpo", "")
    assert settings("dapo", "0.3:flip") == settings("dapo", "")
    assert settings("bot", "") == settings("grpo", "") | {"method": "bot"}  # as stored before
    assert settings("bot", "0.3:flip")["verdict_noise"] == "0.3:flip"
    assert settings("pure", "0.3:flip")["verdict_noise"] == "0.3:flip"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compare", "--verdict-noise", "1.5"], "verdict noise '1.5': rate must lie in [0, 1]"),
        (["compare", "--verdict-noise", "0.2:oops"], "unknown verdict noise kind 'oops'"),
        (
            ["compare", "--task", "react", "--verdict-noise", "0.2"],
            "the line penalties of code take kinds random or miss",
        ),
        (["train", "--task", "chain", "--verdict_noise", "0.2"], "add 'task_reward'"),
    ],
)
def test_cli_answers_bad_noise_with_one_line(args, message):
    proc = subprocess.run(
        [sys.executable, "-m", "botgrpo.cli", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert message in line


@pytest.mark.slow
def test_a_comparison_with_noisy_verdicts_records_them(tmp_path):
    from botgrpo.harness.compare import compare
    from botgrpo.tiny import build_tiny_model
    from tests.test_harness import SMALL

    build_tiny_model(tmp_path / "mine", spec=SMALL)
    cfg = CompareConfig(
        name="noisy",
        out_dir=str(tmp_path / "out"),
        task="tests.user_task:make_task",
        methods=("grpo", "bot"),
        seeds=1,
        steps=1,
        eval_every=1,
        eval_problems=4,
        pass_samples=0,
        metric="greedy_solved",
        prompts_per_step=2,
        num_generations=2,
        max_completion_length=8,
        warmup_steps=0,
        init_model=str(tmp_path / "mine"),
        workers=1,
        progress=False,
        verdict_noise="0.5:miss",
    )
    summary = compare(cfg)
    root = tmp_path / "out" / "noisy"
    stored = {
        p.parent.name.split("-")[0]: json.loads(p.read_text())["settings"]
        for p in root.glob("runs/*/done.json")
    }
    assert stored["bot"]["verdict_noise"] == "0.5:miss" and "verdict_noise" not in stored["grpo"]
    assert json.loads((root / "summary.json").read_text())["verdict_noise"] == "0.5:miss"
    assert json.loads((root / "config.json").read_text())["verdict_noise"] == "0.5:miss"
    assert "50% of incorrect steps judged correct" in summary.read_text()


def test_train_applies_the_noise_to_the_task_reward():
    from botgrpo.trl.script import TrainScriptArguments, _task_of

    args = TrainScriptArguments(
        task="chain", reward_funcs=["task_reward"], verdict_noise="0.3:miss"
    )
    task = _task_of(args)
    assert isinstance(task, NoisyVerdicts) and task.noise == VerdictNoise(0.3, "miss")
    clean = TrainScriptArguments(task="chain", reward_funcs=["task_reward"], verdict_noise="")
    assert clean.verdict_noise is None and not isinstance(_task_of(clean), NoisyVerdicts)


def test_the_wrapper_pickles_and_keeps_its_identity_per_noise():
    import pickle

    from botgrpo.tasks.base import task_fingerprint

    noisy = NoisyVerdicts(ChainArithmetic(), 0.2, "random")
    again = pickle.loads(pickle.dumps(noisy))
    ex = noisy.sample(random.Random(0))
    assert again.score(ex, noisy.demonstration(ex)) == noisy.score(ex, noisy.demonstration(ex))
    prints = {
        task_fingerprint(NoisyVerdicts(ChainArithmetic(), rate, kind))
        for rate, kind in [(0.2, "flip"), (0.3, "flip"), (0.2, "miss")]
    }
    assert len(prints) == 3 and task_fingerprint(ChainArithmetic()) not in prints


def test_random_verdicts_of_the_first_completion_are_drawn_too():
    task = Ledger()
    ex = task.sample(random.Random(0))
    first = NoisyVerdicts(task, 1.0, "random", seed=2).score(ex, "x" * 40)
    assert {s.verdict for s in first.steps} == {-1}  # its own share: all -1
    noisy = NoisyVerdicts(task, 1.0, "random", seed=2)
    noisy.score(ex, "o" * 40)  # history: all +1
    assert {s.verdict for s in noisy.score(ex, "x" * 40).steps} == {1}
