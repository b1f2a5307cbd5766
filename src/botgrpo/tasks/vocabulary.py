"""Whether a tokenizer can write a task's text: the tiny model's character tokenizer knows
printable ASCII, tab, LF and CR only, and any other character would become ``<unk>`` and
vanish from the decoded text (``4 × 17 =`` read as ``4  17 =``, a right step judged wrong)."""

from __future__ import annotations

import random

from botgrpo.tasks.base import Task
from botgrpo.tasks.teacher import demonstrate
from botgrpo.tiny import missing_characters


def check_tiny_vocabulary(
    task: Task, n: int = 64, other_model: str = "compare --init-model"
) -> None:
    """ValueError naming the characters of ``task``'s prompts, answers and demonstrations (every
    problem of a finite task with ``all_problems()``, such as a JSONL file; else ``n`` problems
    of a stream of its own) that the tiny model's tokenizer cannot write;
    ``other_model`` names the option that picks another model."""
    rng = random.Random("vocabulary-check")
    texts = []
    every = getattr(task, "all_problems", None)  # a finite task: every row, not a sample
    for ex in every() if callable(every) else (task.sample(rng) for _ in range(n)):
        texts += [ex.prompt, ex.answer, demonstrate(task, ex, rng)]
    missing = missing_characters(texts)
    if missing:
        shown = ", ".join(f"{ch!r} (U+{ord(ch):04X})" for ch in missing[:8])
        more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        raise ValueError(
            f"task {task.name!r} writes characters the tiny model's tokenizer cannot: {shown}"
            f"{more}; write the task in printable ASCII, or use a model whose tokenizer covers "
            f"them ({other_model})"
        )
