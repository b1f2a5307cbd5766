"""The verl reward hook writes token for token the rewards BoTGRPOTrainer (TRL) computes for the
same completions with the same reward functions, and verl's own ``as_dict`` carries them."""

from __future__ import annotations

import asyncio
import warnings

import pytest
import torch
from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

from botgrpo.rewards import TokenReward, make_math_step_reward
from botgrpo.scoring import RewardSpec
from botgrpo.tasks.arithmetic import (
    arithmetic_outcome,
    make_arithmetic_dataset,
    make_arithmetic_token_reward,
)
from botgrpo.trl import BoTGRPOConfig, BoTGRPOTrainer
from botgrpo.verl.reward_hook import TokenRewardHook, columns_of

W_G, W_S, BOUND = 3.0, 0.5, 1.0
WEIGHTS = [1.0, 0.5, 2.0, 1.0, 1.0]


def _completion(prompt: str, k: int) -> str:
    """Structured solutions of 'a+b=': right, wrong, right steps with a wrong answer, untagged."""
    a, b = (int(x) for x in prompt.rstrip("=").split("+"))
    s = a + b
    return [
        f"<step 1>{a}+{b}={s}</step 1><final>{s}</final>",
        f"<step 1>{a}+{b}={s + 1}</step 1><final>{s + 1}</final>",
        f"<step 1>{a}+{b}={s}</step 1><step 2>{s}*1={s}</step 2><final>{s + 2}</final>",
        f"{s} maybe",
    ][k % 4]


def _rollout(tokenizer, k_of_prompt):
    def rollout(prompts, trainer) -> dict:
        prompt_ids, completion_ids = [], []
        for prompt in prompts:
            k = k_of_prompt.setdefault(prompt, 0)
            k_of_prompt[prompt] += 1
            ids = tokenizer(_completion(prompt, k)).input_ids
            if k % 4 != 2:  # k = 2 is truncated (no EOS)
                ids = [*ids, tokenizer.eos_token_id]
            prompt_ids.append(tokenizer(prompt).input_ids)
            completion_ids.append(ids)
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}

    return rollout


def _reward_funcs(tokenizer, calls):
    def record(prompts, completions, completion_ids, **columns):
        calls.append({"prompts": list(prompts), "ids": [list(x) for x in completion_ids]})
        calls[-1]["answer"] = list(columns["answer"])
        return [None] * len(prompts)

    def digit_floats(completions, completion_ids, **columns):
        """Per-token floats: +1 on digit characters, -0.5 elsewhere."""
        out = []
        for ids in completion_ids:
            text = [tokenizer.decode([i]) for i in ids]
            out.append([1.0 if t.isdigit() else -0.5 for t in text])
        return out

    math_reward = make_math_step_reward(tokenizer)
    return [
        math_reward,
        make_arithmetic_token_reward(tokenizer),
        arithmetic_outcome,
        digit_floats,
        record,
    ]


def _trl_token_rewards(model_dir, tokenizer, tmp_path):
    calls: list[dict] = []
    config = BoTGRPOConfig(
        output_dir=str(tmp_path / "trl"),
        preset="bot",
        w_g=W_G,
        w_s=W_S,
        local_bound=BOUND,
        reward_weights=WEIGHTS,
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=64,
        max_steps=1,
        learning_rate=1e-3,
        save_strategy="no",
        report_to="none",
        seed=0,
        dataloader_num_workers=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = BoTGRPOTrainer(
            model=str(model_dir),
            reward_funcs=_reward_funcs(tokenizer, calls),
            args=config,
            train_dataset=make_arithmetic_dataset(16, seed=3),
            processing_class=tokenizer,
            rollout_func=_rollout(tokenizer, {}),
        )
        trainer.train()
    return trainer.last_token_batch, calls[-1]


def _verl_row(prompt: str, answer: str) -> dict:
    """The fields verl's agent loop passes with a rollout (botgrpo.verl.data's layout)."""
    return {
        "raw_prompt": prompt,
        "data_source": "botgrpo/arithmetic",
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {"split": "train", "index": 0, "answer": answer},
        "uid": "u0",
        "session_id": 0,
        "global_steps": 1,
    }


def _output(tokenizer, prompt: str, ids: list[int], mask: list[int] | None = None):
    return AgentLoopOutput(
        prompt_ids=tokenizer(prompt).input_ids,
        response_ids=ids,
        response_mask=mask or [1] * len(ids),
        metrics=AgentLoopMetrics(),
    )


def test_hook_agrees_with_trl_token_for_token(tiny_model_dir, tiny_tokenizer, tmp_path):
    tb, call = _trl_token_rewards(tiny_model_dir, tiny_tokenizer, tmp_path)
    spec = RewardSpec(_reward_funcs(tiny_tokenizer, []), W_G, W_S, BOUND, WEIGHTS)
    hook = TokenRewardHook(spec, tiny_tokenizer)
    trl_BT = tb.rewards_BT.float()
    assert len(call["ids"]) == trl_BT.shape[0] == 8
    distinct_rows = 0
    for i, (prompt, ids, answer) in enumerate(
        zip(call["prompts"], call["ids"], call["answer"], strict=True)
    ):
        out = asyncio.run(
            hook.score(_output(tiny_tokenizer, prompt, ids), _verl_row(prompt, answer))
        )
        rm_scores = out.as_dict()["rm_scores"]  # what verl writes to the TransferQueue
        assert rm_scores.dtype == torch.float32 and rm_scores.shape == (len(ids),)
        assert torch.equal(rm_scores, trl_BT[i, : len(ids)]), f"row {i} differs"
        assert not trl_BT[i, len(ids) :].any()
        distinct_rows += int(rm_scores.unique().numel() > 1)
        assert out.reward_score == pytest.approx(float(tb.outcome_B[i]))
    assert distinct_rows >= 4, "the comparison needs rows whose rewards vary token by token"
    assert trl_BT.std() > 0.5


def test_row_is_the_weighted_sum_of_eq4(tiny_tokenizer):
    def reward(completion_ids, **columns):
        return [TokenReward(outcome=1.0, local=[0.5, -1.0, 0.0], format_bonus=0.2)]

    spec = RewardSpec(
        [reward, lambda completions, **kw: [2.0]], w_g=3.0, w_s=0.5, weights=[1.0, 0.5]
    )
    hook = TokenRewardHook(spec, tiny_tokenizer)
    out = asyncio.run(
        hook.score(_output(tiny_tokenizer, "1+1=", [5, 6, 7]), _verl_row("1+1=", "2"))
    )
    # 3 * 1 + 0.2 + 0.5 * S_t, plus 0.5 * (3 * 2)
    torch.testing.assert_close(
        out.as_dict()["rm_scores"], torch.tensor([6.45, 5.7, 6.2]), rtol=0, atol=1e-6
    )


def test_tool_tokens_get_zero_and_validation_keeps_verl_layout(tiny_tokenizer):
    spec = RewardSpec([lambda completion_ids, **kw: [[1.0, 2.0, 3.0, 4.0]]])
    hook = TokenRewardHook(spec, tiny_tokenizer)
    row = _verl_row("1+1=", "2")
    out = asyncio.run(hook.score(_output(tiny_tokenizer, "1+1=", [5, 6, 7, 8], [1, 0, 0, 1]), row))
    assert out.as_dict()["rm_scores"].tolist() == [1.0, 0.0, 0.0, 4.0]
    val = asyncio.run(hook.score(_output(tiny_tokenizer, "1+1=", [5, 6, 7, 8]), row, validate=True))
    assert val.as_dict()["rm_scores"].tolist() == [0.0, 0.0, 0.0, 2.5]  # the outcome (mean) last


def test_chat_prompts_get_chat_completions_and_row_columns(tiny_tokenizer):
    seen = {}

    def reward(prompts, completions, completion_ids, **columns):
        seen.update(prompts=prompts, completions=completions, columns=columns)
        return [0.0]

    hook = TokenRewardHook(RewardSpec([reward]), tiny_tokenizer)
    messages = [{"role": "user", "content": "1+1="}]
    ids = [*tiny_tokenizer("2").input_ids, tiny_tokenizer.eos_token_id]
    asyncio.run(
        hook.score(
            _output(tiny_tokenizer, "1+1=", ids), {**_verl_row("", "2"), "raw_prompt": messages}
        )
    )
    assert seen["prompts"] == [messages]
    assert seen["completions"] == [[{"role": "assistant", "content": "2"}]]
    assert seen["columns"]["ground_truth"] == ["2"] and seen["columns"]["answer"] == ["2"]
    assert "raw_prompt" not in seen["columns"] and "session_id" not in seen["columns"]


def test_a_verl_gsm8k_row_is_graded_against_its_ground_truth():
    """verl's GSM8K rows keep the worked solution in extra_info.answer: the reference the
    recipes read as `answer` is reward_model.ground_truth."""
    row = {
        "reward_model": {"style": "rule", "ground_truth": "72"},
        "extra_info": {"split": "train", "index": 0, "answer": "48/2 = 24\n48+24 = 72\n#### 72"},
    }
    columns = columns_of(row)
    assert columns["answer"] == "72" and columns["ground_truth"] == "72"
    assert columns["extra_info"]["answer"].endswith("#### 72")
    assert columns_of({"extra_info": {"answer": "5"}})["answer"] == "5"  # no ground truth
    assert columns_of({"answer": "7", "reward_model": {"ground_truth": "8"}})["answer"] == "7"


def test_extra_info_does_not_shadow_row_fields():
    columns = columns_of({"data_source": "a", "extra_info": {"data_source": "b", "level": 3}})
    assert columns["data_source"] == "a" and columns["level"] == 3


def test_bad_reward_answers_are_named(tiny_tokenizer):
    def short(completion_ids, **kw):
        return [TokenReward(outcome=0.0, local=[0.0])]

    hook = TokenRewardHook(RewardSpec([short]), tiny_tokenizer)
    with pytest.raises(ValueError, match=r"'short' returned 1 token rewards for completion 0"):
        asyncio.run(hook.score(_output(tiny_tokenizer, "1+1=", [5, 6]), _verl_row("1+1=", "2")))

    def broken(**kw):
        raise KeyError("answer")

    hook = TokenRewardHook(RewardSpec([broken]), tiny_tokenizer)
    with pytest.raises(RuntimeError, match=r"reward function 'broken' raised KeyError"):
        asyncio.run(hook.score(_output(tiny_tokenizer, "1+1=", [5, 6]), _verl_row("1+1=", "2")))


def test_hook_reads_the_botgrpo_config_section(tiny_tokenizer):
    from omegaconf import OmegaConf

    config = OmegaConf.create(
        {"botgrpo": {"reward_funcs": ["math_step_reward"], "w_g": 3.0, "w_s": 0.5}}
    )
    hook = TokenRewardHook.from_trainer_config(config, tiny_tokenizer)
    assert hook.spec.names == ["math_step_reward"] and hook.spec.w_g == 3.0
    with pytest.raises(ValueError, match=r"has no botgrpo section"):
        TokenRewardHook.from_trainer_config(OmegaConf.create({}), tiny_tokenizer)


def test_python_line_rewards_run_their_sandbox_from_the_hook(tiny_tokenizer):
    """The Python recipe (compile, pyflakes, sandboxed unit tests) scores verl rollouts, in the
    hook's worker thread, exactly as the shared scoring path does."""
    from botgrpo.rewards import make_python_code_reward
    from botgrpo.scoring import score_completions

    test = "def check(candidate):\n    assert candidate(2, 3) == 5\n"
    codes = [
        "def add(a, b):\n    return a + b\n",
        "import os\ndef add(a, b):\n    return a - b\n",
    ]
    spec = RewardSpec([make_python_code_reward(tiny_tokenizer)], w_g=3.0, w_s=0.5)
    hook = TokenRewardHook(spec, tiny_tokenizer)
    rows = []
    for code in codes:
        text = f"```python\n{code}```\n"
        ids = [*tiny_tokenizer(text).input_ids, tiny_tokenizer.eos_token_id]
        row = {**_verl_row("Write add.", "5"), "extra_info": {"test": test, "entry_point": "add"}}
        out = asyncio.run(hook.score(_output(tiny_tokenizer, "Write add.", ids), row))
        expected = score_completions(
            spec, ["Write add."], [text], [ids], {"test": [test], "entry_point": ["add"]}
        )
        assert torch.equal(out.as_dict()["rm_scores"], expected.rewards_BT[0].float())
        rows.append(out)
    assert rows[0].reward_score > rows[1].reward_score  # passing tests beat failing ones
    assert rows[1].as_dict()["rm_scores"].unique().numel() > 1  # the lint line stands out
