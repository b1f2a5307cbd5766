"""Whether a tokenizer can write a task's text: the tiny model's character tokenizer knows
printable ASCII, tab, LF and CR only, and any other character would become ``<unk>`` and
vanish from the decoded text (``4 × 17 =`` read as ``4  17 =``, a right step judged wrong);
and whether a task's solutions fit the tiny model's completion limit and positions (a
warning: a smoke test at a tiny budget cuts them on purpose)."""

from __future__ import annotations

import random
import warnings

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


#: The share of demonstrations that may not fit before a task is warned about (a rare long one
#: only costs that problem; more, and the policy cannot finish what it is taught).
TOO_LONG_SHARE = 0.05


def warn_tiny_room(task: Task, max_completion_tokens: int, n: int = 64) -> str | None:
    """Warn (and return the warning) when more than ``TOO_LONG_SHARE`` of ``task``'s
    demonstrations (every problem of a finite task, else ``n`` of a stream of their own) do not
    fit the tiny model: the demonstration and its end token past ``max_completion_tokens`` (one
    character is one token), or prompt and demonstration past the model's positions (the
    task's ``max_positions``, else 256). Such a policy is cut off before its answer on those
    problems whatever it learns: fine for a smoke test at a tiny budget, a silent failure in an
    experiment. None when they fit."""
    positions = int(getattr(task, "max_positions", None) or 256)
    rng = random.Random("room-check")
    every = getattr(task, "all_problems", None)
    examples = every() if callable(every) else [task.sample(rng) for _ in range(n)]
    lengths = [(len(ex.prompt), len(demonstrate(task, ex, rng)) + 1) for ex in examples]
    long_ = sum(c > max_completion_tokens for _, c in lengths)
    wide = sum(p + c > positions for p, c in lengths)
    message = None
    if long_ > TOO_LONG_SHARE * len(lengths):
        longest = max(c for _, c in lengths)
        message = (
            f"task {task.name!r}: {long_} of {len(lengths)} demonstrations are longer than "
            f"the completion limit of {max_completion_tokens} tokens (the longest: {longest}), "
            f"so the policy is cut off before its answer there: raise --max-completion-length "
            f"to {longest} or make the task's solutions shorter"
        )
    elif wide > TOO_LONG_SHARE * len(lengths):
        longest = max(p + c for p, c in lengths)
        message = (
            f"task {task.name!r}: prompt and demonstration together pass the tiny model's "
            f"{positions} positions in {wide} of {len(lengths)} problems (the longest: "
            f"{longest} tokens), so the policy is cut off before its answer there: make the "
            "task's problems shorter, or give --init-model (a model with more positions)"
        )
    if message:
        warnings.warn(message, UserWarning, stacklevel=2)
    return message
