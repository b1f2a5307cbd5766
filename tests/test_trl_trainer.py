"""BoTGRPOTrainer on a tiny CPU model: every preset trains, the loss sees the core estimator's
[B, T] advantages, truncation follows TRL's flag, checkpoints resume exactly, metrics reach
tensorboard."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
import torch

from botgrpo.tasks.arithmetic import make_arithmetic_dataset
from botgrpo.trl import PRESETS, BoTGRPOTrainer
from botgrpo.trl.token_batch import group_ids
from tests.trl_helpers import (
    RecordingTrainer,
    digit_share,
    make_fixed_rollout,
    make_stepped_reward,
    odd_prompts_only,
    reference_advantages,
    row_key,
)

pytestmark = pytest.mark.usefixtures("torch_single_thread")


def _trainer(cls, tiny_model_dir, tiny_tokenizer, config, reward_funcs=None, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(
            model=str(tiny_model_dir),
            reward_funcs=reward_funcs or [make_stepped_reward(tiny_tokenizer), digit_share],
            args=config,
            train_dataset=make_arithmetic_dataset(64),
            processing_class=tiny_tokenizer,
            **kwargs,
        )


@pytest.mark.parametrize("preset", list(PRESETS))
def test_preset_trains_and_loss_sees_core_advantages(
    preset, tiny_model_dir, tiny_tokenizer, cpu_config
):
    trainer = _trainer(RecordingTrainer, tiny_model_dir, tiny_tokenizer, cpu_config(preset=preset))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    trainer.train()

    unchanged = [n for n, p in trainer.model.named_parameters() if torch.equal(p, before[n])]
    assert not unchanged, f"parameters not updated: {unchanged}"

    args = trainer.args
    options = {"scale": args.scale_rewards} if args.advantage_estimator == "grpo" else {}
    expected_by_row = {}
    rounds = zip(trainer.rounds, trainer.round_values, trainer.round_policy, strict=True)
    for (output, tb), values_BT, policy in rounds:
        b, t = output["completion_ids"].shape
        assert output["advantages"].shape == (b, t)
        group_B = group_ids(0, b, args.num_generations, tb.outcome_B.device)
        if args.advantage_estimator == "gae":  # ppo: the critic's values of that round
            options = {"values_BT": values_BT}
        if args.advantage_estimator == "otb":  # the sampling policy's statistics of that round
            options = dict(policy)
        ref = reference_advantages(args.advantage_estimator, tb, group_B, **options)
        expected = ref * output["completion_mask"]
        torch.testing.assert_close(output["advantages"], expected, rtol=0, atol=1e-6)
        for i in range(b):
            key = row_key(
                output["prompt_ids"][i], output["prompt_mask"][i], output["completion_ids"][i]
            )
            expected_by_row[key] = output["advantages"][i]
    assert any(out["advantages"].abs().sum() > 0 for out, _ in trainer.rounds)

    assert len(trainer.loss_inputs) == 2
    for inputs in trainer.loss_inputs:
        adv = inputs["advantages"]
        assert adv.dim() == 2 and adv.shape == inputs["completion_ids"].shape
        for i in range(adv.shape[0]):
            key = row_key(
                inputs["prompt_ids"][i], inputs["prompt_mask"][i], inputs["completion_ids"][i]
            )
            torch.testing.assert_close(adv[i], expected_by_row[key], rtol=0, atol=0)


def _constant(completions, **kwargs) -> list[float]:
    return [1.0] * len(completions)


def test_dynamic_sampling_refills_with_signal_groups(tiny_model_dir, tiny_tokenizer, cpu_config):
    config = cpu_config(
        preset="dapo", max_steps=1, per_device_train_batch_size=16, dynamic_sampling_max_rounds=8
    )
    trainer = _trainer(RecordingTrainer, tiny_model_dir, tiny_tokenizer, config, [odd_prompts_only])
    trainer.train()
    assert len(trainer.rounds) > 1, "some group of the first round should have been dropped"
    (inputs,) = trainer.loss_inputs
    k = config.num_generations
    assert inputs["completion_ids"].shape[0] == 16
    by_prompt: dict[tuple, list[torch.Tensor]] = {}
    for i in range(16):
        prompt = tuple(inputs["prompt_ids"][i][inputs["prompt_mask"][i].bool()].tolist())
        by_prompt.setdefault(prompt, []).append(inputs["advantages"][i])
        assert int(tiny_tokenizer.decode(list(prompt))[0]) % 2 == 1, "an all-equal group was kept"
    assert sum(len(v) for v in by_prompt.values()) == 16 and all(
        len(v) % k == 0 for v in by_prompt.values()
    )
    logged = trainer.state.log_history[0]
    assert logged["bot/dynamic_sampling/padded_groups"] == 0
    assert logged["bot/dynamic_sampling/rounds"] == len(trainer.rounds)
    total = inputs["completion_mask"].sum()
    assert int(inputs["num_items_in_batch"]) == int(total)


def test_dynamic_sampling_pads_when_no_group_has_signal(tiny_model_dir, tiny_tokenizer, cpu_config):
    config = cpu_config(preset="dapo", max_steps=1, dynamic_sampling_max_rounds=2)
    trainer = _trainer(RecordingTrainer, tiny_model_dir, tiny_tokenizer, config, [_constant])
    trainer.train()
    assert len(trainer.rounds) == 2
    (inputs,) = trainer.loss_inputs
    assert inputs["completion_ids"].shape[0] == 8 and not inputs["advantages"].any()
    logged = trainer.state.log_history[0]
    assert logged["bot/dynamic_sampling/padded_groups"] == 2
    assert logged["bot/frac_zero_signal_groups"] == 1.0


def test_truncated_completions_follow_trl_flag(tiny_model_dir, tiny_tokenizer, cpu_config):
    runs = {}
    for flag in (False, True):
        config = cpu_config(max_steps=1, max_completion_length=6, mask_truncated_completions=flag)
        rollout = make_fixed_rollout(tiny_tokenizer, 6, config.num_generations)
        trainer = _trainer(
            RecordingTrainer, tiny_model_dir, tiny_tokenizer, config, rollout_func=rollout
        )
        trainer.train()
        runs[flag] = trainer.rounds[0][0]
    plain, masked = runs[False], runs[True]
    torch.testing.assert_close(plain["completion_ids"], masked["completion_ids"], rtol=0, atol=0)
    eos = tiny_tokenizer.eos_token_id
    truncated = torch.tensor(
        [eos not in row.tolist() for row in plain["completion_ids"]], dtype=torch.bool
    )
    assert truncated.any() and (~truncated).any(), "the test needs both kinds of completions"
    assert not masked["advantages"][truncated].any()
    assert not masked["completion_mask"][truncated].any()
    assert plain["advantages"][truncated].any(), (
        "without the flag truncated rows keep their advantages"
    )
    # The group statistics still include truncated completions (as TRL's rewards do), so the
    # advantages of the other rows are the same with and without the flag.
    torch.testing.assert_close(masked["advantages"][~truncated], plain["advantages"][~truncated])


def test_checkpoint_resume_reproduces_next_step(
    tiny_model_dir, tiny_tokenizer, cpu_config, tmp_path
):
    def config():
        return cpu_config(
            max_steps=3, save_strategy="steps", save_steps=2, output_dir=str(tmp_path / "ckpt")
        )

    full = _trainer(BoTGRPOTrainer, tiny_model_dir, tiny_tokenizer, config())
    full.train()
    checkpoint = tmp_path / "ckpt" / "checkpoint-2"
    assert checkpoint.is_dir()
    resumed = _trainer(BoTGRPOTrainer, tiny_model_dir, tiny_tokenizer, config())
    resumed.train(resume_from_checkpoint=str(checkpoint))

    def step3(trainer):
        (log,) = [h for h in trainer.state.log_history if h.get("step") == 3 and "loss" in h]
        return log

    a, b = step3(full), step3(resumed)
    assert a["loss"] != 0
    for key in ("loss", "grad_norm", "bot/advantage/abs_mean", "bot/token_reward/mean", "kl"):
        assert b[key] == pytest.approx(a[key], rel=1e-6, abs=1e-9), key
    for (name, p), q in zip(full.model.named_parameters(), resumed.model.parameters(), strict=True):
        torch.testing.assert_close(p, q, msg=name)


def test_metrics_reach_tensorboard(tiny_model_dir, tiny_tokenizer, cpu_config, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logdir = tmp_path / "tb"
    config = cpu_config(report_to="tensorboard", output_dir=str(logdir), preset="bot")
    _trainer(BoTGRPOTrainer, tiny_model_dir, tiny_tokenizer, config).train()
    events = [p for p in Path(logdir).rglob("events.out.tfevents*")]
    assert events
    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    wanted = {
        "train/bot/token_reward/mean",
        "train/bot/local_share",
        "train/bot/return_local_share",
        "train/bot/advantage/mean",
        "train/bot/advantage/std",
        "train/bot/advantage/abs_mean",
        "train/bot/frac_zero_signal_groups",
        "train/completions/mean_length",
        "train/completions/max_length",
        "train/clip_ratio/region_mean",
        "train/clip_ratio/low_mean",
        "train/clip_ratio/high_mean",
        "train/kl",
    }
    assert wanted <= tags, wanted - tags
    assert [e.step for e in acc.Scalars("train/bot/advantage/abs_mean")] == [1, 2]
    share = [e.value for e in acc.Scalars("train/bot/local_share")]
    assert all(0 < v < 1 for v in share)


@pytest.mark.parametrize(
    "layout",
    [{}, {"num_iterations": 2}, {"per_device_train_batch_size": 4, "steps_per_generation": 2}],
    ids=["on-policy", "trl-old-pass", "trl-old-pass-in-chunks"],
)
def test_otb_reads_the_sampling_policys_probabilities(
    tiny_model_dir, tiny_tokenizer, cpu_config, monkeypatch, layout
):
    """logp_BT and sum_pi_sq_BT equal a direct softmax over the whole vocabulary of the model
    that sampled the round, at the sampling temperature, on every sampled token (truncated
    completions, whose loss mask TRL zeroes, included). With two iterations per generation TRL
    makes an old-policy pass (also when one generation serves two optimizer micro-batches, so the
    pass runs in two chunks): the statistics come from it, and only the rows it did not attend
    (the masked truncations) are scored again."""
    from transformers import AutoModelForCausalLM

    from botgrpo.trl import policy_stats

    scored = []
    real = policy_stats.score_rows

    def counting(trainer, output, sampled_BT, rows, chunk):
        scored.append(rows.tolist())
        return real(trainer, output, sampled_BT, rows, chunk)

    monkeypatch.setattr(policy_stats, "score_rows", counting)
    config = cpu_config(
        preset="otb",
        max_steps=1,
        temperature=0.7,
        mask_truncated_completions=True,
        **layout,
    )
    trainer = _trainer(RecordingTrainer, tiny_model_dir, tiny_tokenizer, config)
    trainer.train()
    (output, tb), stats = trainer.rounds[0], trainer.round_policy[0]
    keep = tb.mask_BT
    truncated = keep.any(1) & ~output["completion_mask"].bool().any(1)
    assert truncated.any() and (~truncated).any()
    old_pass = bool(layout)
    rows = truncated.nonzero().flatten() if old_pass else range(len(truncated))
    assert scored[0] == list(map(int, rows))
    if old_pass:  # what TRL's own old pass returned, on the rows it attended
        seen = keep & ~truncated[:, None]
        assert output["old_per_token_logps"] is not None and seen.any()
        torch.testing.assert_close(stats["logp_BT"][seen], output["old_per_token_logps"][seen])
    sampler = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))  # the weights of step 0
    ids = torch.cat([output["prompt_ids"], output["completion_ids"]], 1)
    attention = torch.cat([output["prompt_mask"], keep.long()], 1)
    width = output["completion_ids"].shape[1]
    with torch.no_grad():
        logits = sampler(input_ids=ids, attention_mask=attention).logits[:, -width - 1 : -1]
    probs_BTV = torch.softmax(logits.double() / 0.7, dim=-1)
    assert probs_BTV.shape[-1] == len(tiny_tokenizer)  # the whole vocabulary
    expected_sq = (probs_BTV**2).sum(-1)
    expected_logp = probs_BTV.gather(-1, output["completion_ids"][..., None]).squeeze(-1).log()
    close = {"atol": 1e-5, "rtol": 1e-4}
    torch.testing.assert_close(stats["sum_pi_sq_BT"][keep].double(), expected_sq[keep], **close)
    torch.testing.assert_close(stats["logp_BT"][keep].double(), expected_logp[keep], **close)
    assert ((stats["sum_pi_sq_BT"][keep] > 0) & (stats["sum_pi_sq_BT"][keep] <= 1)).all()


def test_otb_refuses_tool_outputs(tiny_model_dir, tiny_tokenizer, cpu_config):
    trainer = _trainer(BoTGRPOTrainer, tiny_model_dir, tiny_tokenizer, cpu_config(preset="otb"))
    ids = torch.ones(2, 3, dtype=torch.long)
    output = {"prompt_ids": ids, "prompt_mask": ids, "completion_ids": ids, "tool_mask": ids}
    with pytest.raises(ValueError, match="preset otb does not support tool outputs"):
        trainer._policy_statistics(output, "train")


def test_ppo_trains_its_critic_and_the_policy_waits_for_it(
    tiny_model_dir, tiny_tokenizer, cpu_config
):
    config = cpu_config(preset="ppo", critic_warmup_steps=1, critic_learning_rate=1e-2)
    trainer = _trainer(RecordingTrainer, tiny_model_dir, tiny_tokenizer, config)
    critic = trainer.critic.model
    before = {n: p.detach().clone() for n, p in critic.named_parameters()}
    trainer.train()
    assert any(not torch.equal(p, before[n]) for n, p in critic.named_parameters())
    assert critic is not trainer.model and trainer.critic.optimizer is not trainer.optimizer
    first, last = trainer.rounds[0][0], trainer.rounds[-1][0]
    assert (first["advantages"] == 0).all()  # step 0: only the critic learns
    assert last["advantages"].abs().sum() > 0
    logged = [r for r in trainer.state.log_history if "bot/critic/value_loss" in r]
    assert logged and all(r["bot/critic/seconds"] > 0 for r in logged)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"critic_epochs": 0}, "critic_epochs must be a whole number >= 1"),
        ({"critic_warmup_steps": -1}, "critic_warmup_steps must be a whole number >= 0"),
        ({"critic_learning_rate": -1.0}, "critic_learning_rate"),
        ({"value_clip": -0.1}, "value_clip"),
    ],
)
def test_bad_critic_options_are_clear_errors(options, message, cpu_config):
    with pytest.raises(ValueError, match=message):
        cpu_config(preset="ppo", **options)


def test_ppo_takes_its_gae_options_and_refuses_to_resume(
    tiny_model_dir, tiny_tokenizer, cpu_config
):
    config = cpu_config(preset="ppo", advantage_options={"gamma": 1.0, "lam": 0.9}, max_steps=1)
    trainer = _trainer(RecordingTrainer, tiny_model_dir, tiny_tokenizer, config)
    assert all(
        not isinstance(m, torch.nn.Dropout) or m.p == 0 for m in trainer.critic.model.modules()
    )
    with pytest.raises(ValueError, match="preset ppo cannot resume"):
        trainer.train(resume_from_checkpoint=True)
    trainer.train()
    assert (
        trainer.rounds
        and trainer.round_values[0].shape == trainer.rounds[0][0]["completion_ids"].shape
    )


def test_the_models_trl_loads_for_the_trainer_load_on_its_thread(
    tiny_model_dir, tiny_tokenizer, cpu_config, started_threads, monkeypatch
):
    """Given a path, TRL loads the policy inside the trainer's constructor: on the calling
    thread (botgrpo.loading), so a Ctrl-C there cannot leave a loading worker behind."""
    from botgrpo.loading import SYNC_LOAD_VARIABLE

    monkeypatch.delenv(SYNC_LOAD_VARIABLE, raising=False)
    _trainer(BoTGRPOTrainer, tiny_model_dir, tiny_tokenizer, cpu_config(preset="bot"))
    assert [n for n in started_threads if "ThreadPoolExecutor" in n] == []
    assert SYNC_LOAD_VARIABLE not in os.environ
