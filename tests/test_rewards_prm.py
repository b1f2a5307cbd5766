"""Process reward models as step verdict sources: each layout on a tiny model of that layout
built offline, P(correct) equal to a forward built by hand the way each model card does."""

from __future__ import annotations

import logging

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    LlamaForTokenClassification,
    PreTrainedTokenizerFast,
)

from botgrpo.rewards.prm import PRMConfig, ProcessRewardModel, check_prm_options
from botgrpo.rewards.recipes.math import make_math_step_reward
from tests.rewards_tokenizers import BYTE

TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
)


def tokenizer(extra: tuple[str, ...] = ("<extra_0>",)) -> PreTrainedTokenizerFast:
    """A byte-level tokenizer with the chat markers, the qwen separator and the Math-Shepherd
    tag as tokens of their own."""
    vocab = {BYTE[b]: b for b in range(256)}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<pad>", bos_token="<s>"
    )
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", *extra]})
    tok.add_tokens(["ки"])
    tok.chat_template = TEMPLATE
    return tok


def tiny(cls, tok, **kw):
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
        **kw,
    )
    return cls(config).eval()


PROBLEM = "What is 2+3*4?"
SOLUTIONS = [["3*4=12", "2+12=14"], ["2+3=5", "5*4=20", "so 20"], ["14"]]


def _prm(layout, model, tok, **options):
    return ProcessRewardModel(
        {"model": "in-memory", "layout": layout, **options}, model=model, tokenizer=tok
    )


def _softmax_at(logits_TV, positions, index):
    return logits_TV[positions].softmax(-1)[:, index].tolist()


def test_token_classification_layout_reads_the_rows_trls_prm_trainer_wrote():
    tok = tokenizer()
    model = tiny(LlamaForTokenClassification, tok, num_labels=2)
    prm = _prm("token_classification", model, tok)
    got = prm.score([PROBLEM] * 3, SOLUTIONS)
    for steps, scores in zip(SOLUTIONS, got, strict=True):
        ids = [tok.bos_token_id, *tok(PROBLEM, add_special_tokens=False).input_ids]
        positions = []
        for step in steps:  # TRL: the step's ids, then the separator's, each on its own
            ids += tok(step, add_special_tokens=False).input_ids
            ids += tok("\n", add_special_tokens=False).input_ids
            positions.append(len(ids) - 1)
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
        expected = [p[1] for p in logits[positions].softmax(-1).tolist()]
        assert scores.p_correct == pytest.approx(expected, abs=1e-5)
        assert len(scores.verdicts) == len(steps)


def test_qwen_layout_reads_its_head_at_each_extra_0():
    tok = tokenizer()
    model = tiny(LlamaForTokenClassification, tok, num_labels=2)
    prm = _prm("qwen", model, tok)
    got = prm.score([PROBLEM] * 3, SOLUTIONS)
    extra = tok.convert_tokens_to_ids("<extra_0>")
    for steps, scores in zip(SOLUTIONS, got, strict=True):
        messages = [
            {"role": "system", "content": PRMConfig("m").system_prompt},
            {"role": "user", "content": PROBLEM},
            {"role": "assistant", "content": "<extra_0>".join(steps) + "<extra_0>"},
        ]
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        ids = torch.tensor([tok.encode(text)])
        logits = model(input_ids=ids).logits[0].float()
        positions = (ids[0] == extra).nonzero().flatten()
        assert scores.p_correct == pytest.approx(_softmax_at(logits, positions, 1), abs=1e-5)


def test_math_shepherd_layout_reads_plus_against_minus_at_each_tag():
    tok = tokenizer()
    model = tiny(LlamaForCausalLM, tok)
    prm = _prm("math_shepherd", model, tok)
    got = prm.score([PROBLEM] * 3, SOLUTIONS)
    tag = tok.encode("ки", add_special_tokens=False)[-1]
    good, bad = tok.encode("+", add_special_tokens=False)[-1], tok.encode("-")[-1]
    for steps, scores in zip(SOLUTIONS, got, strict=True):
        ids = torch.tensor([tok.encode(f"{PROBLEM} " + "".join(s + " ки\n" for s in steps))])
        logits = model(input_ids=ids).logits[0].float()
        positions = (ids[0] == tag).nonzero().flatten()
        expected = logits[positions][:, [good, bad]].softmax(-1)[:, 0].tolist()
        assert scores.p_correct == pytest.approx(expected, abs=1e-5)


def test_thresholds_and_soft_values():
    tok = tokenizer()
    model = tiny(LlamaForTokenClassification, tok, num_labels=2)
    [scores] = _prm("token_classification", model, tok).score([PROBLEM], [SOLUTIONS[1]])
    ps = scores.p_correct
    for threshold in (0.01, sorted(ps)[1], 0.99):
        [again] = _prm("token_classification", model, tok, threshold=threshold).score(
            [PROBLEM], [SOLUTIONS[1]]
        )
        assert again.verdicts == tuple(-1 if p < threshold else 1 for p in ps)
    assert scores.soft == pytest.approx([2 * p - 1 for p in ps])
    assert all(-1 <= v <= 1 for v in scores.soft)


def test_a_solution_longer_than_max_length_has_its_late_steps_unscored(caplog):
    tok = tokenizer()
    model = tiny(LlamaForTokenClassification, tok, num_labels=2)
    prm = _prm("token_classification", model, tok, max_length=24)
    long_steps = [f"step {i}: {i}+1={i + 1}" for i in range(6)]
    with caplog.at_level(logging.WARNING):
        [short, long] = prm.score([PROBLEM] * 2, [["1+1=2"], long_steps])
    assert short.truncated == 0 and short.p_correct[0] is not None
    assert long.truncated > 0 and long.p_correct[-1] is None and long.verdicts[-1] == 0
    assert "past max_length 24" in caplog.text and prm.stats.truncated_steps == long.truncated


def test_no_steps_and_an_empty_batch():
    tok = tokenizer()
    prm = _prm("token_classification", tiny(LlamaForTokenClassification, tok, num_labels=2), tok)
    assert prm.judge_many([], []) == []
    assert prm(PROBLEM, []) == []


def test_a_vocabulary_without_the_separator_is_refused():
    tok = tokenizer(extra=())
    model = tiny(LlamaForTokenClassification, tok, num_labels=2)
    with pytest.raises(ValueError, match="lacks the separator '<extra_0>'"):
        _prm("qwen", model, tok)


def test_a_head_of_the_wrong_size_is_refused():
    tok = tokenizer()
    model = tiny(LlamaForTokenClassification, tok, num_labels=3)
    with pytest.raises(ValueError, match="2-class head; this model's has 3"):
        _prm("token_classification", model, tok)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"model": "m", "layout": "orm"}, "layout must be one of"),
        ({"model": "m", "threshold": 1.5}, "threshold must lie in"),
        ({"model": "m", "batch_size": "8"}, "batch_size"),
        ({"model": "m", "colour": 1}, "unknown PRM option 'colour'"),
        ({"layout": "qwen"}, "model"),
    ],
)
def test_bad_options_are_one_line_errors(options, says):
    with pytest.raises(ValueError, match=says):
        check_prm_options({"prm": options})


def test_a_prm_that_raises_mid_run_gives_neutral_verdicts_and_the_run_goes_on(caplog):
    tok = tokenizer()
    model = tiny(LlamaForTokenClassification, tok, num_labels=2)
    prm = _prm("token_classification", model, tok)
    reward = make_math_step_reward(tok, step_verifier=prm)
    text = "<step 1> 2+3=5 </step 1><step 2> 5*4=20 </step 2><final>20</final>"
    ids = [[*tok(text).input_ids, tok.eos_token_id]]
    logged = {}
    columns = {"answer": ["20"], "log_metric": lambda k, v: logged.setdefault(k, v)}
    [before] = reward(prompts=[PROBLEM], completions=[text], completion_ids=ids, **columns)
    assert before.info["raw_verdicts"] != [0, 0] and "time/verdicts_s" in logged

    def broken(*args, **kwargs):
        raise RuntimeError("CUDA error: device-side assert triggered")

    model.forward = broken
    with caplog.at_level(logging.WARNING):
        [after] = reward(prompts=[PROBLEM], completions=[text], completion_ids=ids, **columns)
    assert after.info["raw_verdicts"] == [0, 0] and after.outcome == 1.0
    assert "its verdicts are 0" in caplog.text and prm.stats.failed_batches == 1


def test_a_prm_folder_named_in_options_is_loaded_as_yaml_would_name_it(tmp_path):
    tok = tokenizer()
    model = tiny(LlamaForTokenClassification, tok, num_labels=2)
    model.save_pretrained(tmp_path / "prm")
    tok.save_pretrained(tmp_path / "prm")
    reward = make_math_step_reward(
        tok, step_verifier={"prm": {"model": str(tmp_path / "prm"), "device": "cpu"}}
    )
    text = "<step 1> 2+3=5 </step 1><final>5</final>"
    [tr] = reward(
        prompts=["2+3?"],
        completions=[text],
        completion_ids=[[*tok(text).input_ids, tok.eos_token_id]],
        answer=["5"],
    )
    direct = _prm("token_classification", model, tok)
    assert tr.info["raw_verdicts"] == direct("2+3?", ["2+3=5"])


def test_a_missing_prm_folder_is_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"nothing-here'.*no such folder"):
        ProcessRewardModel({"model": str(tmp_path / "nothing-here")})
    with pytest.raises(ValueError, match="cannot be loaded"):
        ProcessRewardModel({"model": "no-such-org/no-such-prm"})  # offline hub id


# ---- a task judged by a learned verifier ------------------------------------------------------


class AllWrong:
    """A verifier that calls every step wrong (and records what it was shown)."""

    def __init__(self):
        self.seen = []

    def judge_many(self, problems, steps_lists):
        self.seen += list(zip(problems, steps_lists, strict=True))
        return [[-1] * len(steps) for steps in steps_lists]


def test_learned_verdicts_replace_only_the_step_verdicts():
    import random

    from botgrpo.tasks import load_task
    from botgrpo.tasks.learned import LearnedVerdicts
    from botgrpo.tasks.noise import clean_task

    task = load_task("chain")
    verifier = AllWrong()
    judged = LearnedVerdicts(task, verifier, "test")
    ex = task.sample(random.Random(0))
    text = task.demonstration(ex)
    clean, learned = task.score(ex, text), judged.score(ex, text)
    assert [s.verdict for s in learned.steps] == [-1] * len(clean.steps)
    assert (learned.outcome, learned.well_formed) == (clean.outcome, clean.well_formed)
    assert [(s.start, s.end) for s in learned.steps] == [(s.start, s.end) for s in clean.steps]
    problem, steps = verifier.seen[0]
    assert problem == ex.prompt and steps == [text[s.start : s.end] for s in clean.steps]
    assert clean_task(judged) is task and judged.name == task.name


def test_learned_verdicts_refuse_a_task_with_its_own_reward():
    from botgrpo.tasks import load_task
    from botgrpo.tasks.learned import LearnedVerdicts

    with pytest.raises(ValueError, match="its own reward function"):
        LearnedVerdicts(load_task("python"), AllWrong())


def test_compare_with_a_missing_prm_is_one_line_and_creates_nothing(tmp_path, capsys):
    from botgrpo.cli import main

    out = tmp_path / "out"
    code = main(["compare", "--out-dir", str(out), "--step-verifier", f"prm:{tmp_path / 'no'}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "no such folder" in err, err
    assert not out.exists()


def test_outcome_only_runs_do_not_depend_on_the_step_verifier():
    import dataclasses

    from botgrpo.harness.config import CompareConfig
    from botgrpo.harness.runner import RunSpec, run_settings

    cfg = CompareConfig()
    prm = dataclasses.replace(cfg, step_verifier="prm:/some/prm")
    grpo = [run_settings(RunSpec("grpo", 0, 1e-4, "m", "d", c)) for c in (cfg, prm)]
    bot = [run_settings(RunSpec("bot", 0, 1e-4, "m", "d", c)) for c in (cfg, prm)]
    assert grpo[0] == grpo[1] and bot[0] != bot[1]


def test_token_classification_reads_the_separator_even_where_a_merge_would_join_it():
    """A tokenizer that joins "." and a line break into one token (Qwen2's rule) must still be
    read at the lone line-break token TRL put the label on."""
    vocab = {BYTE[b]: b for b in range(256)}
    vocab[".Ċ"] = 256
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[(".", "Ċ")]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>")
    assert tok("a.\n", add_special_tokens=False).input_ids[-1] == 256  # joined when together
    prm = _prm("token_classification", tiny(LlamaForTokenClassification, tok, num_labels=2), tok)
    ids, at = prm.encode("Q?", ["It is 5."])
    newline = tok("\n", add_special_tokens=False).input_ids
    assert [ids[i] for i in at] == newline and 256 not in ids


def test_non_finite_logits_give_neutral_verdicts_not_right_ones(caplog):
    tok = tokenizer()
    model = tiny(LlamaForTokenClassification, tok, num_labels=2)
    with torch.no_grad():
        model.score.weight.fill_(float("nan"))
    prm = _prm("token_classification", model, tok)
    with caplog.at_level(logging.WARNING):
        [scores] = prm.score([PROBLEM], [["3*4=12", "2+12=14"]])
    assert scores.failed and scores.verdicts == (0, 0) and prm.stats.failed_batches == 1
    assert "not finite" in caplog.text


def test_max_length_is_capped_at_the_models_positions():
    tok = tokenizer()
    model = tiny(LlamaForTokenClassification, tok, num_labels=2)
    model.config.max_position_embeddings = 40
    prm = _prm("token_classification", model, tok)
    short, long_ = prm.score(["Q?", "Q?"], [["1+1=2"], ["word " * 30, "end"]])
    assert not short.failed and short.verdicts != (0,)
    assert not long_.failed and long_.truncated == 2 and long_.verdicts == (0, 0)


def test_inputs_of_the_wrong_type_are_refused():
    tok = tokenizer()
    prm = _prm("token_classification", tiny(LlamaForTokenClassification, tok, num_labels=2), tok)
    with pytest.raises(TypeError, match="problem 0 is a list, not a string"):
        prm.score([[{"role": "user", "content": "Q"}]], [["1+1=2"]])
    with pytest.raises(TypeError, match="steps of solution 0 must be a list of strings"):
        prm("Q?", "1+1=2")


def test_a_folder_without_a_trained_head_is_refused(tmp_path):
    tok = tokenizer()
    causal = tiny(LlamaForCausalLM, tok)
    causal.save_pretrained(tmp_path / "causal")
    tok.save_pretrained(tmp_path / "causal")
    with pytest.raises(
        ValueError, match="no trained score weights for layout 'token_classification'"
    ):
        ProcessRewardModel({"model": str(tmp_path / "causal"), "device": "cpu"})
    with pytest.raises(ValueError, match="without a classification head"):
        ProcessRewardModel(
            {"model": str(tmp_path / "causal"), "device": "cpu", "trust_remote_code": True}
        )
    with pytest.raises(ValueError, match=r"PRMConfig\.device 'gpu' is not a device torch knows"):
        ProcessRewardModel({"model": str(tmp_path / "causal"), "device": "gpu"})
