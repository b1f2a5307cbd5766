"""Prompts of the two LLM judges (the answer formats are parsed by ``parsing``).

* Step judge (math, recipe 1 of BoT-GRPO, arXiv 2610.09804 Eq. 8): the problem and the numbered
  steps of one solution go in; one line ``Step i: correct | incorrect | uncertain`` per step is
  asked for.
* Code judge (recipe 2, Eqs. 6-7): the task and the code with line numbers go in; a 0-10 score
  and up to three worst lines with an impact of -1, -2 or -3 are asked for, as
  ``SCORE: <n>`` and ``LINE <n>: <impact> (<reason>)`` lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from botgrpo.rewards.text import count_lines, split_lines

STEP_SYSTEM_PROMPT = (
    "You are a meticulous mathematics grader. You check a student's solution step by step and "
    "report a verdict for every step in the exact format you are given."
)

STEP_INSTRUCTIONS = """\
Judge each step of the solution above, in order, given the problem and the steps before it:
- correct: the step is mathematically valid and follows from the problem and earlier steps;
- incorrect: the step contains a calculation error, a false claim or an unjustified leap;
- uncertain: you cannot decide.
Do not solve the problem again at length. Answer with exactly {n} lines, one per step from
Step 1 to Step {n}, and nothing else. Each line is "Step <number>: <verdict>", where <verdict>
is one word from correct, incorrect, uncertain, optionally followed by " - <short reason>".
For example:
Step 1: correct
Step 2: incorrect - 7 * 8 is 56, not 54"""

CODE_SYSTEM_PROMPT = (
    "You are a strict senior code reviewer. You rate code against its task and point to the "
    "lines that hurt it most, in the exact format you are given."
)

CODE_INSTRUCTIONS = """\
The code above is shown with line numbers ("<number> | "); they are not part of the code.
Rate how well the code fulfils the task (correct, complete, would compile and run) with an
integer from 0 (empty, unrelated or broken) to 10 (excellent). Then name at most three lines
that hurt the code most, worst first, each with its impact: -1 (minor), -2 (serious) or
-3 (critical: breaks the code or the task). Use the line numbers shown. Name no line if none
is at fault. Answer in exactly this format and nothing else:
SCORE: <0-10>
LINE <number>: <-1, -2 or -3> (<short reason>)
For example:
SCORE: 6
LINE 12: -3 (calls an undefined function)
LINE 4: -1 (unused import)"""


def number_steps(steps: Sequence[str]) -> str:
    """The steps as ``[Step i]`` blocks, numbered from 1.

    >>> print(number_steps(["x = 2", "so 2x = 4"]))
    [Step 1]
    x = 2
    <BLANKLINE>
    [Step 2]
    so 2x = 4
    """
    return "\n\n".join(f"[Step {i}]\n{text.strip()}" for i, text in enumerate(steps, start=1))


def number_lines(code: str) -> str:
    """``code`` with a right-aligned ``<number> | `` prefix on every line, numbered from 1.

    >>> print(number_lines("a = 1\\nprint(a)"))
    1 | a = 1
    2 | print(a)
    """
    lines = split_lines(code)  # the lines Python and JavaScript number
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, start=1))


def step_messages(problem: str, steps: Sequence[str]) -> list[dict[str, str]]:
    """Chat messages asking for one verdict per step of a solution to ``problem``."""
    user = (
        f"Problem:\n{problem.strip()}\n\n"
        f"Solution, in {len(steps)} steps:\n\n{number_steps(steps)}\n\n"
        f"{STEP_INSTRUCTIONS.format(n=len(steps))}"
    )
    return [
        {"role": "system", "content": STEP_SYSTEM_PROMPT},
        {"role": "user", "content": user},
    ]


def code_messages(task: str, code: str) -> list[dict[str, str]]:
    """Chat messages asking for a 0-10 score and the worst lines of ``code`` for ``task``."""
    n_lines = count_lines(code)
    user = (
        f"Task:\n{task.strip()}\n\n"
        f"Code ({n_lines} line{'' if n_lines == 1 else 's'}):\n{number_lines(code)}\n\n"
        f"{CODE_INSTRUCTIONS}"
    )
    return [
        {"role": "system", "content": CODE_SYSTEM_PROMPT},
        {"role": "user", "content": user},
    ]
