"""Datasets of task problems for TRL: one row per problem (prompt, answer, meta as JSON)."""

from __future__ import annotations

import random

from datasets import Dataset

from botgrpo.tasks.base import Example, Task


def sample_examples(
    task: Task, n: int, seed_label: str, exclude: set[str] | None = None
) -> list[Example]:
    """``n`` problems from the stream named ``seed_label``, skipping prompts in ``exclude``.

    Raises if the task cannot produce enough distinct-from-excluded problems (its problem space
    is too small for the request).
    """
    rng = random.Random(seed_label)
    out: list[Example] = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 20 * n + 100:
            raise ValueError(
                f"task {task.name!r} produced only {len(out)} of {n} problems outside the "
                "held-out set; its problem space is too small for this request"
            )
        example = task.sample(rng)
        if exclude is None or example.prompt not in exclude:
            out.append(example)
    return out


def task_dataset(examples: list[Example]) -> Dataset:
    """A ``datasets.Dataset`` with columns prompt, answer and meta (JSON)."""
    rows = [ex.to_row() for ex in examples]
    return Dataset.from_dict({k: [r[k] for r in rows] for k in ("prompt", "answer", "meta")})


def chat_prompt(prompt, system_prompt: str | None = None) -> list[dict[str, str]]:
    """``prompt`` as a conversation for a chat model: the system message, then the prompt as
    the user's turn (a prompt that already is a conversation gets the system message if it has
    none). Task rewards read the problem back from the user turn.

    >>> chat_prompt("7+5-3\\n", "Solve in steps.")
    [{'role': 'system', 'content': 'Solve in steps.'}, {'role': 'user', 'content': '7+5-3\\n'}]
    """
    turns = list(prompt) if not isinstance(prompt, str) else [{"role": "user", "content": prompt}]
    has_system = any(t.get("role") == "system" for t in turns)
    if system_prompt is not None and not has_system:
        turns = [{"role": "system", "content": system_prompt}, *turns]
    return turns


def chat_text(tokenizer, prompt, system_prompt: str | None = None) -> str:
    """The text a chat model continues for ``prompt``: :func:`chat_prompt` rendered by the
    tokenizer's chat template with the assistant's turn opened (what TRL feeds the model for a
    conversational prompt)."""
    return tokenizer.apply_chat_template(
        chat_prompt(prompt, system_prompt), add_generation_prompt=True, tokenize=False
    )
