"""Reward functions and a recording trainer shared by the trainer tests."""

from __future__ import annotations

import random
from typing import Any

import torch

from botgrpo.core import get_advantage_estimator
from botgrpo.rewards.types import TokenReward
from botgrpo.trl import BoTGRPOTrainer
from botgrpo.trl.token_batch import TokenBatch


def digit_share(completions, **kwargs) -> list[float]:
    """Scalar outcome: share of digit characters (varies inside almost every group)."""
    return [sum(ch.isdigit() for ch in c) / max(len(c), 1) for c in completions]


def make_stepped_reward(tokenizer):
    """Token reward: G = digit share, S_t = +1 digit / -1 other / 0 special, steps of 3 tokens."""
    special = set(tokenizer.all_special_ids)

    def stepped_reward(completions, completion_ids, **kwargs) -> list[TokenReward]:
        out = []
        for text, ids in zip(completions, completion_ids, strict=True):
            pieces = tokenizer.convert_ids_to_tokens(list(ids))
            local = [
                0.0 if i in special else (1.0 if p.isdigit() else -1.0)
                for i, p in zip(ids, pieces, strict=True)
            ]
            steps = [-1 if i in special else t // 3 for t, i in enumerate(ids)]
            out.append(TokenReward(outcome=digit_share([text])[0], local=local, steps=steps))
        return out

    return stepped_reward


def make_fixed_rollout(tokenizer, max_len: int, num_generations: int):
    """A deterministic TRL ``rollout_func``: completion k of a prompt depends on (prompt, k) only,
    whichever process generates it; about half end with EOS before ``max_len`` (the others are
    truncated), so batches hold both kinds of completions."""
    alphabet = "0123456789abcxyz+= "

    def fixed_rollout(prompts, trainer) -> dict:
        start = trainer.accelerator.process_index * len(prompts)
        prompt_ids, completion_ids = [], []
        for i, prompt in enumerate(prompts):
            rng = random.Random(f"{prompt}|{(start + i) % num_generations}")
            n = rng.randint(1, max_len)
            ids = tokenizer("".join(rng.choice(alphabet) for _ in range(n))).input_ids
            if n < max_len and rng.random() < 0.5:
                ids = [*ids, tokenizer.eos_token_id]
            prompt_ids.append(tokenizer(prompt).input_ids)
            completion_ids.append(ids)
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}

    return fixed_rollout


def odd_prompts_only(prompts, completions, **kwargs) -> list[float]:
    """Outcome with signal only for prompts whose first operand is odd (others all equal)."""
    shares = digit_share(completions)
    return [s if int(p[0]) % 2 else 1.0 for p, s in zip(prompts, shares, strict=True)]


class RecordingTrainer(BoTGRPOTrainer):
    """Records every scoring round (output and token batch) and every loss call's inputs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.rounds: list[tuple[dict[str, Any], TokenBatch]] = []
        self.round_values: list[torch.Tensor | None] = []  # the critic's, for preset ppo
        self.round_policy: list[dict | None] = []  # the sampling policy's, for preset otb
        self.loss_inputs: list[dict[str, Any]] = []
        super().__init__(*args, **kwargs)

    def _score_round(self, inputs):
        output = super()._score_round(inputs)
        self.rounds.append(({k: _detach(v) for k, v in output.items()}, self.last_token_batch))
        self.round_values.append(_detach(self.last_values_BT))
        stats = self.last_policy_stats
        self.round_policy.append(stats and {k: _detach(v) for k, v in stats.items()})
        return output

    def _compute_loss(self, model, inputs):
        self.loss_inputs.append({k: _detach(v) for k, v in inputs.items()})
        return super()._compute_loss(model, inputs)


def _detach(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def reference_advantages(estimator: str, tb: TokenBatch, group_B, **options) -> torch.Tensor:
    """The core estimator called directly on the rewards the paper's protocol assigns it."""
    fn = get_advantage_estimator(estimator)
    if estimator in ("grpo", "dr_grpo", "rloo"):
        rewards = tb.outcome_B[:, None].expand_as(tb.local_BT)
    elif estimator == "pure":
        rewards = tb.local_BT
        options["outcome_B"] = tb.outcome_B
    elif estimator in ("reinforce_pp", "otb", "gae"):  # the outcome on the last token, by hand
        last = tb.mask_BT.long().sum(-1) - 1
        rewards = tb.local_BT.clone()
        rows = torch.nonzero(last >= 0).squeeze(-1)
        rewards[rows, last[rows]] += tb.outcome_B[rows]
    else:
        rewards = tb.outcome_B[:, None] + tb.local_BT
    if "steps_BT" in fn.options:
        options["steps_BT"] = tb.steps_BT
    return fn(rewards, tb.mask_BT, group_B, **options)


def row_key(
    prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, completion_ids: torch.Tensor
) -> tuple:
    """A padding-independent key of one row (prompt tokens, completion tokens)."""
    prompt = tuple(prompt_ids[prompt_mask.bool()].tolist())
    return prompt, tuple(completion_ids.tolist())
