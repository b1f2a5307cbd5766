"""A procedural arithmetic task for smoke-scale runs on a CPU (tiny model, no downloads).

Prompts are ``"a+b="`` with single-digit operands; the answer is the sum. Two reward functions
follow TRL's calling convention:

- :func:`arithmetic_outcome` (scalar): G = 1 if the completion's leading integer equals the
  answer, else 0.
- :func:`make_arithmetic_token_reward` (token): the same outcome G plus a bounded local signal
  S_t = +1 on a token whose characters are digits, -1 on any other token, 0 on special tokens
  (EOS, padding). Token characters come from the generated ids' offsets
  (:func:`botgrpo.rewards.spans.offsets_from_ids`), so byte-level BPE pieces such as "Ġ7"
  count as the digit they spell.

It is a plumbing check, not a benchmark: a randomly initialised model learns to emit digits
within a few dozen steps, but the numbers say nothing about the methods' quality.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

from datasets import Dataset

from botgrpo.rewards.calling import message_text
from botgrpo.rewards.spans import offsets_from_ids
from botgrpo.rewards.types import TokenReward

_LEADING_INT = re.compile(r"\s*(-?\d+)")


def make_arithmetic_dataset(n: int = 256, *, seed: int = 0, max_operand: int = 9) -> Dataset:
    """``n`` prompts "a+b=" (0 <= a, b <= max_operand) with an ``answer`` column.

    >>> ds = make_arithmetic_dataset(3, seed=1)
    >>> ds.column_names, len(ds)
    (['prompt', 'answer'], 3)
    >>> a, b = ds[0]["prompt"][:-1].split("+"); int(a) + int(b) == int(ds[0]["answer"])
    True
    """
    if n < 1 or max_operand < 0:
        raise ValueError(f"need n >= 1 and max_operand >= 0, got n={n}, max_operand={max_operand}")
    rng = random.Random(seed)
    rows = [(rng.randint(0, max_operand), rng.randint(0, max_operand)) for _ in range(n)]
    return Dataset.from_dict(
        {"prompt": [f"{a}+{b}=" for a, b in rows], "answer": [str(a + b) for a, b in rows]}
    )


def _leading_int(text: str) -> int | None:
    m = _LEADING_INT.match(text)
    return int(m[1]) if m else None


def arithmetic_outcome(completions: Sequence, answer: Sequence[str], **kwargs) -> list[float]:
    """G = 1.0 if the completion's leading integer equals the answer, else 0.0.

    >>> arithmetic_outcome(["7<x", " 12", "1", "17", "10<eos>"], answer=["7", "12", "12", "1", "1"])
    [1.0, 1.0, 0.0, 0.0, 0.0]
    """
    return [
        float(_leading_int(message_text(c)) == int(a))
        for c, a in zip(completions, answer, strict=True)
    ]


def make_arithmetic_token_reward(tokenizer) -> Callable[..., list[TokenReward]]:
    """Token reward for the arithmetic task: outcome G and S_t = +1 digit / -1 other / 0 special.

    Token characters are read from the generated ids themselves, never re-tokenized.

    >>> from botgrpo.tiny import build_char_tokenizer
    >>> tok = build_char_tokenizer()
    >>> reward = make_arithmetic_token_reward(tok)
    >>> ids = tok("7a").input_ids + [tok.eos_token_id]
    >>> tr = reward(completions=["7a"], completion_ids=[ids], answer=["7"])[0]
    >>> tr.outcome, tr.local.tolist()
    (1.0, [1.0, -1.0, 0.0])
    """
    special = set(tokenizer.all_special_ids)

    def arithmetic_token_reward(
        completions: Sequence,
        completion_ids: Sequence[Sequence[int]],
        answer: Sequence[str],
        **kwargs,
    ) -> list[TokenReward]:
        outcomes = arithmetic_outcome(completions, answer)
        rewards = []
        for ids, outcome in zip(completion_ids, outcomes, strict=True):
            pieces = offsets_from_ids(tokenizer, ids).token_texts()
            local = [
                0.0 if i in special else (1.0 if p.strip().isdigit() else -1.0)
                for i, p in zip(ids, pieces, strict=True)
            ]
            rewards.append(TokenReward(outcome=outcome, local=local))
        return rewards

    return arithmetic_token_reward
