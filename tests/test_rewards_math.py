"""Recipe 1 (math steps, Eq. 8) on hand-written completions with hand-computed token rewards."""

from __future__ import annotations

import numpy as np
import pytest

from botgrpo.rewards.compose import StepSignalConfig
from botgrpo.rewards.recipes.math import MathRewardConfig, make_math_step_reward
from botgrpo.tiny import build_char_tokenizer
from tests.rewards_tokenizers import byte_bpe

TOK = build_char_tokenizer()  # one token per character: token i <-> character i


def _ids(text: str) -> list[int]:
    return [*TOK(text).input_ids, TOK.eos_token_id]


def _call(reward, texts, answers, prompts=None, **columns):
    return reward(
        prompts=prompts or ["problem"] * len(texts),
        completions=texts,
        completion_ids=[_ids(t) for t in texts],
        answer=answers,
        **columns,
    )


# "<step 1>3*4=12</step 1>" = 8 + 6 + 9 = 23 chars -> [0, 23); "\n" at 23
# "<step 2>12+5=17</step 2>" = 8 + 7 + 9 = 24 chars -> [24, 48); "\n" at 48
# "<step 3>17*2=35</step 3>" -> [49, 73); "\n" at 73; "<final>35</final>" = [74, 91); EOS at 91
THREE_STEPS = (
    "<step 1>3*4=12</step 1>\n<step 2>12+5=17</step 2>\n<step 3>17*2=35</step 3>\n<final>35</final>"
)


def test_three_steps_wrong_third_step_default_window():
    [tr] = _call(make_math_step_reward(TOK), [THREE_STEPS], ["34"])
    # 17*2 = 34, not 35: verdicts [1, 1, -1]; the answer 35 is wrong: G = 0; tags: +0.2.
    assert tr.info["verdicts"] == [1, 1, -1]
    assert (tr.outcome, tr.format_bonus) == (0.0, 0.2)
    # w = 3, |S| = 3, only the -1 decays: phi(2) = 0.5, phi(1) = 0.75
    # step 1: (1 - 0.5) / 3 = 1/6; step 2: (1 - 0.75) / 3 = 1/12; step 3: -1/3
    expected = np.zeros(92)
    expected[0:23], expected[24:48], expected[49:73] = 1 / 6, 1 / 12, -1 / 3
    assert tr.local == pytest.approx(expected)
    steps = np.full(92, -1)
    steps[0:23], steps[24:48], steps[49:73] = 0, 1, 2
    assert tr.steps.tolist() == steps.tolist()
    # r_t = 3 * 0 + 0.2 + 0.5 * S_t: a token of step 3 gets 0.2 - 0.5/3
    assert tr.token_rewards(3.0, 0.5)[60] == pytest.approx(0.2 - 0.5 / 3)
    assert tr.info["step_spans"] == [(0, 23), (24, 48), (49, 73)]


def test_error_propagation_zeroes_later_steps():
    text = THREE_STEPS.replace("12+5=17", "12+5=18").replace("17*2=35", "18*2=36")
    text = text.replace("<final>35", "<final>36")
    cfg = MathRewardConfig(steps=StepSignalConfig(window=0))
    [tr] = _call(make_math_step_reward(TOK, cfg), [text], ["34"])
    # Raw verdicts [1, -1, 1] (18*2 = 36 holds); step 3 comes after an error: 0.
    assert tr.info["raw_verdicts"] == [1, -1, 1]
    assert tr.info["verdicts"] == [1, -1, 0]
    # Eq. 8 with |S| = 3: 1/3, -1/3, 0
    assert tr.local[0] == pytest.approx(1 / 3)
    assert tr.local[30] == pytest.approx(-1 / 3)
    assert tr.local[60] == 0.0
    independent = MathRewardConfig(steps=StepSignalConfig(propagation="independent", window=0))
    [tr2] = _call(make_math_step_reward(TOK, independent), [text], ["34"])
    assert tr2.local[60] == pytest.approx(1 / 3)


def test_correct_answer_and_all_steps_right():
    text = "<step 1>3*4=12</step 1>\n<step 2>12+5=17</step 2>\n<final>17</final>"
    [tr] = _call(make_math_step_reward(TOK), [text], ["17"])
    # G = 1; two correct steps: 1/2 each; <final> tokens and EOS: 0
    assert (tr.outcome, tr.format_bonus) == (1.0, 0.2)
    assert tr.local[:23].tolist() == [0.5] * 23
    assert tr.local[23] == 0.0 and tr.local[-1] == 0.0
    # r_t = 3 * 1 + 0.2 + 0.5 * 0.5 = 3.45 on the steps, 3.2 elsewhere
    rewards = tr.token_rewards(3.0, 0.5)
    assert rewards[5] == pytest.approx(3.45) and rewards[-1] == pytest.approx(3.2)


def test_malformed_tags_get_the_format_penalty():
    text = "<step 1>3*4=12<step 2>12+5=17</step 1><final>17</final>"
    [tr] = _call(make_math_step_reward(TOK), [text], ["17"])
    assert tr.format_bonus == -1.0 and tr.info["format"] == "malformed"
    assert tr.outcome == 1.0  # the answer is still checked


def test_no_tags_neutral_format_and_answer_from_the_whole_text():
    text = r"3*4=12 and 12+5=17 so the answer is \boxed{17}"
    [tr] = _call(make_math_step_reward(TOK), [text], ["17"])
    assert (tr.outcome, tr.format_bonus) == (1.0, 0.0)
    assert not tr.local.any() and (tr.steps == -1).all()
    assert tr.info["format"] == "missing"


def test_empty_completion():
    [tr] = make_math_step_reward(TOK)(
        prompts=["p"], completions=[""], completion_ids=[[TOK.eos_token_id]], answer=["1"]
    )
    assert (tr.outcome, tr.format_bonus, tr.local.tolist()) == (0.0, 0.0, [0.0])


def test_step_n_layout():
    text = "Step 1: 3*4=12\nStep 2: 12+5=18\nFinal answer: 18"
    cfg = MathRewardConfig(step_format="step_n", steps=StepSignalConfig(window=0))
    [tr] = _call(make_math_step_reward(TOK, cfg), [text], ["17"])
    # "Step 1: 3*4=12" = [0, 14); "Step 2: 12+5=18" = [15, 30); verdicts [1, -1]; |S| = 2
    assert tr.info["verdicts"] == [1, -1]
    assert tr.local[0:14].tolist() == [0.5] * 14
    assert tr.local[15:30].tolist() == [-0.5] * 15
    assert tr.outcome == 0.0 and tr.format_bonus == 0.2


def test_unicode_steps_on_byte_level_bpe():
    tok = byte_bpe()
    text = "<step 1>Café 3*4=12</step 1><step 2>😀 12+1=14</step 2><final>13</final>"
    ids = [*tok(text).input_ids, tok.eos_token_id]
    cfg = MathRewardConfig(steps=StepSignalConfig(window=0))
    [tr] = make_math_step_reward(tok, cfg)(
        prompts=["p"], completions=[text], completion_ids=[ids], answer=["13"]
    )
    assert len(tr.local) == len(ids)
    # Step 1 = 8 + 11 + 9 chars = [0, 28): +1/2; step 2 = 8 + 9 + 9 = [28, 54): -1/2. Check each token by its characters.
    assert tr.info["step_spans"] == [(0, 28), (28, 54)]
    pieces = tok.convert_ids_to_tokens(ids)
    assert pieces[pieces.index("fÃ©")] == "fÃ©"  # "fé" is one token
    assert tr.local[pieces.index("fÃ©")] == 0.5
    # The emoji is four tokens, all in step 2.
    k = pieces.index("ð")
    assert tr.local[k : k + 4].tolist() == [-0.5] * 4
    assert tr.local[-1] == 0.0


def test_conversational_completions_and_no_ids():
    text = "<step 1>2+2=4</step 1><final>4</final>"
    reward = make_math_step_reward(TOK)
    conv = [[{"role": "assistant", "content": text}]]
    prompt = [[{"role": "system", "content": "s"}, {"role": "user", "content": "2+2?"}]]
    [a] = reward(prompts=prompt, completions=conv, completion_ids=[_ids(text)], answer=["4"])
    [b] = reward(prompts=prompt, completions=conv, answer=["4"])  # tokenized afresh: no EOS
    assert a.n_tokens == len(text) + 1 and b.n_tokens == len(text)
    assert a.local[: len(text)].tolist() == b.local.tolist()
    assert reward.__name__ == "math_step_reward" and reward.local_bound == 1.0


def test_answer_none_means_not_applicable():
    text = "<step 1>2+2=4</step 1><final>4</final>"
    out = _call(make_math_step_reward(TOK), [text, text], [None, "4"])
    assert out[0] is None and out[1].outcome == 1.0
    # a float NaN is pandas' and datasets' missing value: not applicable either
    out = _call(make_math_step_reward(TOK), [text, text], [float("nan"), 4])
    assert out[0] is None and out[1].outcome == 1.0


class _RecordingJudge:
    """A judge object with the LLM judge's batch interface."""

    __name__ = "recording_judge"

    def __init__(self, verdicts):
        self.verdicts, self.calls = verdicts, []

    def judge_many(self, problems, steps):
        self.calls.append((list(problems), [list(s) for s in steps]))
        return [type("R", (), {"verdicts": tuple(self.verdicts[: len(s)])})() for s in steps]


def test_judge_with_batch_interface():
    judge = _RecordingJudge([-1, 1])
    texts = ["<step 1>a</step 1><step 2>b</step 2><final>1</final>", "no steps at all"]
    prompts = [[{"role": "user", "content": "Q1"}], [{"role": "user", "content": "Q2"}]]
    out = _call(make_math_step_reward(TOK, step_verifier=judge), texts, ["1", "1"], prompts)
    # One batch call, only for the completion with steps; the problem is the user turn.
    assert judge.calls == [(["Q1"], [["a", "b"]])]
    assert out[0].info["verdicts"] == [-1, 0]  # error propagation
    assert out[1].info["verdicts"] == []


def test_plain_callable_judge():
    calls = []

    def judge(problem, steps):
        calls.append(problem)
        return [1] * len(steps)

    text = "<step 1>a</step 1><final>1</final>"
    [tr] = _call(make_math_step_reward(TOK, step_verifier=judge), [text], ["2"], ["Q"])
    assert calls == ["Q"] and tr.info["verdicts"] == [1]


@pytest.mark.parametrize(
    ("result", "error", "message"),
    [
        ([1, 1], ValueError, r"'bad_judge' on completion 0 returned 2 verdicts for 1 steps"),
        ([2], ValueError, r"returned verdict 2; verdicts must be -1, 0 or \+1"),
        ([True], ValueError, r"returned verdict True"),
        (None, TypeError, r"returned NoneType; expected a list of ints"),
    ],
)
def test_bad_judge_output_is_named(result, error, message):
    def bad_judge(problem, steps):
        return result

    text = "<step 1>a</step 1><final>1</final>"
    with pytest.raises(error, match=message):
        _call(make_math_step_reward(TOK, step_verifier=bad_judge), [text], ["1"])


def test_judge_exception_is_wrapped_with_its_name():
    def broken_judge(problem, steps):
        raise ConnectionError("down")

    text = "<step 1>a</step 1><final>1</final>"
    with pytest.raises(RuntimeError, match=r"step verdict source 'broken_judge' failed: down"):
        _call(make_math_step_reward(TOK, step_verifier=broken_judge), [text], ["1"])


def test_missing_column_and_mismatched_lengths():
    reward = make_math_step_reward(TOK)
    text = "<step 1>a</step 1><final>1</final>"
    with pytest.raises(KeyError, match=r"math_step_reward: needs the dataset column 'answer'"):
        reward(prompts=["p"], completions=[text], completion_ids=[_ids(text)], solution=["1"])
    with pytest.raises(ValueError, match=r"got 1 completions but 2 completion_ids"):
        reward(prompts=["p"], completions=[text], completion_ids=[_ids(text)] * 2, answer=["1"])
    with pytest.raises(ValueError, match=r"column 'answer' has 2 values for 1 completions"):
        reward(prompts=["p"], completions=[text], completion_ids=[_ids(text)], answer=["1", "2"])
    with pytest.raises(ValueError, match=r"math_step_reward: completion 0: token id -5"):
        reward(prompts=["p"], completions=[text], completion_ids=[[-5]], answer=["1"])


def test_config_is_validated():
    with pytest.raises(ValueError, match="step_format must be one of"):
        MathRewardConfig(step_format="xml")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="step_verifier must be callable"):
        make_math_step_reward(TOK, step_verifier=42)


def test_a_nested_config_given_as_a_mapping_to_the_dataclass_names_the_fix():
    from botgrpo.rewards.recipes.math import MathRewardConfig

    with pytest.raises(
        TypeError, match=r"must be a StepSignalConfig, .*StepSignalConfig\(window=1\)"
    ):
        MathRewardConfig(steps={"window": 1})


def test_an_empty_final_answer_is_malformed_not_well_formed():
    from botgrpo.rewards.steps import parse_steps

    assert parse_steps("<step 1>2+2=4</step 1><final> 4 </final>").verdict == "well_formed"
    empty = parse_steps("<step 1>2+2=4</step 1><final> </final>")
    assert empty.verdict == "malformed" and "empty <final>" in empty.problems[0]
