"""Held-out evaluation: greedy accuracy and pass@k from sampled completions.

Generation is batched with left padding through ``model.generate`` (the code path of any Hugging
Face causal LM); completions are scored by the task, the same scorer that feeds the reward.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from botgrpo.metrics import pass_at_k
from botgrpo.tasks.base import Example, Task

#: Seed labels of the held-out streams: "test" is reported, "validation" picks learning rates.
HELD_OUT_STREAMS = ("test", "validation")


def held_out_examples(task: Task, n: int, stream: str = "test") -> list[Example]:
    """``n`` distinct problems of a held-out stream (its own seed label; training excludes them).

    Raises when the task cannot produce ``n`` distinct problems (a small finite task).
    """
    if stream not in HELD_OUT_STREAMS:
        raise ValueError(f"stream must be one of {HELD_OUT_STREAMS}, got {stream!r}")
    rng = random.Random(f"held-out-{stream}")
    seen: dict[str, Example] = {}
    for _ in range(50 * n + 100):
        if len(seen) == n:
            break
        ex = task.sample(rng)
        seen.setdefault(ex.prompt, ex)
    if len(seen) < n:
        raise ValueError(
            f"task {task.name!r} gave only {len(seen)} distinct problems for a held-out set of "
            f"{n}; lower --eval-problems"
        )
    return list(seen.values())


def held_out_prompts(task: Task, n: int) -> frozenset[str]:
    """Prompts of every held-out stream (test and validation), which training never sees."""
    return frozenset(ex.prompt for s in HELD_OUT_STREAMS for ex in held_out_examples(task, n, s))


@torch.no_grad()
def generate(
    model,
    tokenizer,
    prompts: list[str],
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    num_return_sequences: int = 1,
    batch_size: int = 256,
) -> list[str]:
    """Completions of ``prompts`` (``num_return_sequences`` each, in prompt order)."""
    model.eval()
    tokenizer.padding_side = "left"
    out: list[str] = []
    sample = temperature > 0
    for i in range(0, len(prompts), batch_size):
        enc = tokenizer(
            prompts[i : i + batch_size], return_tensors="pt", padding=True, add_special_tokens=False
        )
        gen = model.generate(
            **enc,
            max_new_tokens=max_new_tokens,
            do_sample=sample,
            temperature=temperature if sample else None,
            top_k=0 if sample else None,
            top_p=1.0 if sample else None,
            num_return_sequences=num_return_sequences,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        out.extend(
            tokenizer.batch_decode(gen[:, enc.input_ids.shape[1] :], skip_special_tokens=True)
        )
    return out


@dataclass(frozen=True)
class EvalResult:
    """Held-out metrics at one training step.

    Attributes:
        accuracy: fraction of problems solved by the greedy completion.
        step_accuracy: fraction of greedy steps judged correct (over all written steps).
        pass_at: pass@k for each k, from ``n_samples`` sampled completions per problem.
        n_problems: problems evaluated.
    """

    accuracy: float
    step_accuracy: float
    pass_at: dict[int, float]
    n_problems: int


def evaluate(
    model,
    tokenizer,
    task: Task,
    examples: list[Example],
    *,
    max_new_tokens: int,
    n_samples: int = 0,
    ks: tuple[int, ...] = (1, 4),
    temperature: float = 1.0,
) -> EvalResult:
    """Greedy accuracy on ``examples`` and, when ``n_samples`` > 0, unbiased pass@k."""
    prompts = [ex.prompt for ex in examples]
    greedy = generate(model, tokenizer, prompts, max_new_tokens=max_new_tokens)
    scores = [task.score(ex, c) for ex, c in zip(examples, greedy, strict=True)]
    steps = [v.verdict for s in scores for v in s.steps]
    pass_at: dict[int, float] = {}
    if n_samples > 0:
        sampled = generate(
            model,
            tokenizer,
            prompts,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            num_return_sequences=n_samples,
        )
        correct = [
            sum(task.score(ex, c).solved for c in sampled[i * n_samples : (i + 1) * n_samples])
            for i, ex in enumerate(examples)
        ]
        for k in ks:
            if k <= n_samples:
                pass_at[k] = sum(pass_at_k(n_samples, c, k) for c in correct) / len(examples)
    return EvalResult(
        accuracy=sum(s.solved for s in scores) / len(scores),
        step_accuracy=sum(v == 1 for v in steps) / max(1, len(steps)),
        pass_at=pass_at,
        n_problems=len(examples),
    )
