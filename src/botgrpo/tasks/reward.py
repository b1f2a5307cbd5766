"""A task's :class:`~botgrpo.tasks.base.Score` as a TRL token reward function.

The composition is the reward toolkit's (Eq. 8 of arXiv 2610.09804): step verdicts go through
error propagation and the step decay, are spread uniformly over each step's tokens with the 1/|S|
factor, clamped to the bound B, and packed with the outcome G and the format bonus into a
:class:`~botgrpo.rewards.types.TokenReward`. The trainer then forms r_t = w_g G + w_s S_t +
b_format for BoT, and shows outcome-only methods w_g G + b_format.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from botgrpo.rewards.calling import (
    dataset_column,
    message_text,
    resolve_tokenizer,
    tokenize_completions,
)
from botgrpo.rewards.compose import FormatBonusConfig, StepSignalConfig, step_signal
from botgrpo.rewards.spans import TokenizedText
from botgrpo.rewards.types import TokenReward
from botgrpo.tasks.base import Example, Score, Task


@dataclass(frozen=True)
class TaskRewardConfig:
    """How a task's step verdicts become token rewards.

    Attributes:
        steps: error propagation, decay window (in steps) and bound B of the local signal.
        format_bonus: the format term for well-formed / malformed completions.
    """

    steps: StepSignalConfig = field(default_factory=StepSignalConfig)
    format_bonus: FormatBonusConfig = field(default_factory=FormatBonusConfig)


def score_to_token_reward(
    tokens: TokenizedText, score: Score, config: TaskRewardConfig
) -> TokenReward:
    """Token reward of one completion from its task score."""
    spans = np.array([(s.start, s.end) for s in score.steps], dtype=np.int64).reshape(-1, 2)
    raw = [s.verdict for s in score.steps]
    signal = step_signal(tokens.offsets_T2, spans, raw, len(tokens.text), config.steps)
    if score.well_formed is None:
        bonus = 0.0
    else:
        bonus = config.format_bonus.bonus("well_formed" if score.well_formed else "malformed")
    return TokenReward(
        outcome=float(score.outcome),
        local=signal.local_T,
        format_bonus=bonus,
        steps=signal.steps_T,
        info={
            "raw_verdicts": raw,
            "verdict_spans": [(s.start, s.end) for s in score.steps],
            "verdicts": signal.verdicts,
            "answer": score.answer,
            "solved": score.solved,
        },
    )


def make_task_reward(
    task: Task, tokenizer: Any, config: TaskRewardConfig | None = None
) -> Callable[..., list[TokenReward]]:
    """A TRL reward function scoring completions with ``task`` (needs the dataset's ``prompt``,
    ``answer`` and ``meta`` columns, as built by :func:`botgrpo.tasks.data.task_dataset`).
    Under TRL it also logs ``task/solved``, the share of the step's rollouts that solved their
    problem (outcome >= 1): the number that rises when training works.

    >>> import random
    >>> from botgrpo.tasks.chain import ChainArithmetic
    >>> from botgrpo.tasks.teacher import Teacher
    >>> from botgrpo.tiny import build_char_tokenizer
    >>> task = ChainArithmetic(min_steps=2, max_steps=2, teacher=Teacher())  # a perfect teacher
    >>> tok = build_char_tokenizer()
    >>> ex = task.sample(random.Random(0))
    >>> text = task.demonstration(ex)
    >>> reward = make_task_reward(task, tok)
    >>> [tr] = reward(prompts=[ex.prompt], completions=[text],
    ...               completion_ids=[tok(text).input_ids + [tok.eos_token_id]], **{
    ...               k: [v] for k, v in ex.to_row().items() if k != "prompt"})
    >>> tr.outcome, tr.format_bonus, tr.info["verdicts"]
    (1.0, 0.2, [1, 1])
    """
    cfg = config or TaskRewardConfig()
    tok = resolve_tokenizer(tokenizer)
    name = f"{task.name}_step_reward"

    def reward(
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        completion_ids: Sequence[Sequence[int]] | None = None,
        **columns: Any,
    ) -> list[TokenReward]:
        tokens = tokenize_completions(tok, completions, completion_ids, name)
        answers = dataset_column(columns, "answer", len(tokens), name)
        metas = dataset_column(columns, "meta", len(tokens), name)
        # a chat prompt (system_prompt / conversational) is the task's prompt as its user turn
        prompt_list = [message_text(p, "user") for p in prompts or [""] * len(tokens)]
        out, solved = [], []
        for t, prompt, answer, meta in zip(tokens, prompt_list, answers, metas, strict=True):
            score = task.score(Example.from_row(prompt, answer, meta), t.text)
            solved.append(float(score.solved))
            out.append(score_to_token_reward(t, score, cfg))
        log_metric = columns.get("log_metric")
        if callable(log_metric) and solved:  # TRL logs it beside the rewards: "task/solved"
            log_metric("task/solved", sum(solved) / len(solved))
        return out

    reward.__name__ = reward.__qualname__ = name
    reward.local_bound = cfg.steps.bound  # type: ignore[attr-defined]
    return reward


def task_reward(task: Task, tokenizer: Any) -> Callable[..., list[TokenReward]]:
    """The reward a task trains with: ``task.reward_function(tokenizer)`` when the task brings
    one (the code tasks' line recipes), else :func:`make_task_reward`."""
    own = getattr(task, "reward_function", None)
    return own(tokenizer) if callable(own) else make_task_reward(task, tokenizer)
