"""Per-token rewards in verl: score one rollout with botgrpo token reward functions.

verl 0.9's default reward path writes one score on the last response token
(``AgentLoopOutput.as_dict``: ``rm_scores[-1] = reward_score``) and the trainer reads
``token_level_scores = rm_scores``. The hook scores the rollout itself with the same reward
functions TRL users pass to ``BoTGRPOTrainer``, through the same engine-neutral split and assembly
(:mod:`botgrpo.scoring`), and returns a :class:`TokenRewardOutput` whose ``rm_scores`` row is

    r_t = sum_f weight_f * (w_g * G_f + b_format_f + w_s * S_f,t)     (0 on tool-output tokens)

token for token what the TRL path puts in its ``[B, T]`` token rewards. The functions see what
TRL passes them: ``prompts`` (verl's ``raw_prompt`` chat messages), ``completions`` (the decoded
response, special tokens skipped, as ``[{"role": "assistant", "content": text}]`` for chat
prompts), ``completion_ids`` (the response ids) and the row's fields as columns, plus
``ground_truth`` (from ``reward_model.ground_truth``, also the ``answer`` column) and the keys
of ``extra_info`` (:func:`columns_of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput

from botgrpo.scoring import RewardSpec, ascore_completions, load_reward_funcs
from botgrpo.verl.config import VerlRewardConfig

#: Row fields verl adds for its own bookkeeping; not passed to reward functions as columns.
INTERNAL_FIELDS = frozenset({"raw_prompt", "session_id", "global_steps", "__num_turns__"})


class TokenRewardOutput(AgentLoopOutput):
    """An agent loop output whose ``rm_scores`` is a per-token reward row, not a last-token score."""

    token_scores: list[float] | None = None
    """r_t for every response token (len == len(response_ids)); None: verl's last-token score."""

    def as_dict(self) -> dict[str, Any]:
        """verl's dictionary, with ``rm_scores`` replaced by the per-token row when present."""
        output = super().as_dict()
        scores = output.pop("token_scores", None)
        if scores is not None:
            output["rm_scores"] = torch.tensor(scores, dtype=torch.float32)
        return output


class TokenRewardHook:
    """Scores verl rollouts with token reward functions.

    Args:
        spec: the reward functions and weights.
        tokenizer: the policy's tokenizer (decodes the response like TRL does).
    """

    def __init__(self, spec: RewardSpec, tokenizer: Any) -> None:
        self.spec = spec
        self.tokenizer = tokenizer

    @classmethod
    def from_trainer_config(cls, config: Any, tokenizer: Any) -> TokenRewardHook:
        """Build from the ``botgrpo`` section of verl's trainer config."""
        cfg = VerlRewardConfig.from_trainer_config(config)
        funcs = load_reward_funcs(cfg.reward_funcs, tokenizer, cfg.reward_func_kwargs)
        spec = RewardSpec(funcs, cfg.w_g, cfg.w_s, cfg.local_bound, cfg.reward_weights)
        return cls(spec, tokenizer)

    def inputs(self, output: AgentLoopOutput, row: Mapping[str, Any]) -> dict[str, Any]:
        """The reward functions' arguments for one rollout (batches of one)."""
        ids = list(output.response_ids)
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        prompt = _plain(row.get("raw_prompt"))
        if prompt is None:
            prompt = self.tokenizer.decode(list(output.prompt_ids), skip_special_tokens=True)
        chat = isinstance(prompt, list) and all(isinstance(m, Mapping) for m in prompt)
        completion = [{"role": "assistant", "content": text}] if chat else text
        return {
            "prompts": [prompt],
            "completions": [completion],
            "completion_ids": [ids],
            "columns": {key: [value] for key, value in columns_of(row).items()},
        }

    async def score(
        self, output: AgentLoopOutput, row: Mapping[str, Any], validate: bool = False
    ) -> TokenRewardOutput:
        """The rollout with its reward: the per-token row in training; in validation verl's
        layout (the outcome R_i on the last token), so validation scores stay outcomes."""
        args = self.inputs(output, row)
        mask_T = torch.tensor(list(output.response_mask), dtype=torch.bool)
        tb = await ascore_completions(
            self.spec,
            args["prompts"],
            args["completions"],
            args["completion_ids"],
            args["columns"],
            tool_mask_BT=mask_T[None, :],
        )
        outcome = float(tb.outcome_B[0])
        values = output.model_dump(exclude_unset=True)
        values["reward_score"] = outcome
        # the attribute, not the dump: a loop may fill the default dict in place (unset)
        extra = dict(getattr(output, "extra_fields", None) or {})
        extra["reward_extra_info"] = {"bot_outcome": outcome, "bot_scored": bool(tb.mask_BT.any())}
        values["extra_fields"] = extra
        values.pop("metrics", None)
        if not validate:
            values["token_scores"] = tb.rewards_BT[0].float().tolist()
        return TokenRewardOutput(metrics=output.metrics, **values)


def columns_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """Dataset columns of one verl row: its fields, ``ground_truth`` and ``extra_info``'s keys.

    ``reward_model.ground_truth`` is the reference verl's own reward functions grade against, so
    it is both the ``ground_truth`` and the ``answer`` column (what botgrpo's recipes read by
    default): verl's GSM8K rows keep the whole worked solution in ``extra_info.answer``, which
    would be graded as the answer otherwise. A row without a ground truth keeps
    ``extra_info.answer``; a top-level ``answer`` field wins over both.
    """
    columns = {k: _plain(v) for k, v in row.items() if k not in INTERNAL_FIELDS}
    reward_model = columns.get("reward_model")
    if isinstance(reward_model, Mapping) and "ground_truth" in reward_model:
        columns.setdefault("ground_truth", reward_model["ground_truth"])
        columns.setdefault("answer", reward_model["ground_truth"])
    extra = columns.get("extra_info")
    if isinstance(extra, Mapping):
        for key, value in extra.items():
            columns.setdefault(str(key), value)
    return columns


def _plain(value: Any) -> Any:
    """numpy containers (as verl's rows hold them) as Python lists and dicts."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value
