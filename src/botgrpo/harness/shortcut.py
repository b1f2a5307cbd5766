"""The shortcut probe: does the outcome reward pay a short answer more than a real attempt?

:func:`probe_rollouts` cuts each prompt's first failed rollout into short answers
(:data:`PROBES`: the empty answer, its first lines, its first quarter and half, single lines on
their own, a Markdown code fence the cut leaves open closed as an answer that stopped there would
close it). Scored with the training's own reward, they show a hole in the outcome reward when the
best of them lies above sampled rollouts of the same prompt (:func:`shortcut_sums`, reported as
``shortcut_beats`` by :func:`botgrpo.harness.diagnose.diagnose`): a policy that learns to stop
early then gains reward without solving anything (docs/diagnose.md).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

import numpy as np
import torch

from botgrpo.harness.diagnosis import Rollouts, Scored

#: The shortcut probe's cuts of a rollout: its first n lines (0: the empty answer) ...
PROBE_LINES = (0, 1, 2, 3)
#: ... its first share of lines ...
PROBE_SHARES = (0.25, 0.5)
#: ... and this many single lines of its body on their own, evenly spaced through it.
PROBE_SINGLE = 6

#: What each of a prompt's probes is, in the order :func:`probe_rollouts` builds them.
PROBES: tuple[str, ...] = (
    *("the empty answer" if n == 0 else f"its first {n} line" + "s" * (n > 1) for n in PROBE_LINES),
    *(f"its first {share:.0%} of lines" for share in PROBE_SHARES),
    *("one line of it on its own",) * PROBE_SINGLE,
)


def _fence_mark(line: str) -> str | None:
    """The backtick run a Markdown code fence line opens or closes with, else None."""
    mark = re.match(r"\s*(`{3,})", line)
    return mark.group(1) if mark else None


def _fence(lines: list[str]) -> tuple[int, int, str] | None:
    """The first code fence's opening line, closing line (the end where unclosed) and mark."""
    for i, line in enumerate(lines):
        mark = _fence_mark(line)
        if mark is None:
            continue
        for j in range(i + 1, len(lines)):
            if lines[j].strip().startswith(mark) and not lines[j].strip().strip("`"):
                return i, j, mark
        return i, len(lines), mark
    return None


def cut_short(text: str, keep: int | float) -> str:
    """The first ``keep`` lines of ``text`` (an int) or that share of them (a float, at least
    one line), never all of them; a Markdown code fence the cut leaves open is closed with its
    own mark, as an answer that stopped there would close it."""
    lines = text.splitlines()
    n = keep if isinstance(keep, int) else max(1, int(len(lines) * keep))
    head = lines[: min(n, max(0, len(lines) - 1))]
    fence = _fence(head)
    while fence is not None and fence[1] < len(head):  # closed: look past it
        rest = _fence(head[fence[1] + 1 :])
        fence = None if rest is None else (rest[0] + fence[1] + 1, rest[1] + fence[1] + 1, rest[2])
    if fence is not None:
        head.append(fence[2])
    return "\n".join(head)


def single_lines(text: str, count: int = PROBE_SINGLE) -> list[str]:
    """``count`` non-blank lines of ``text``'s body (inside its first code fence where it has
    one), evenly spaced, each on its own as an answer (in that fence); repeated where the body
    is shorter, the empty answer where it has none."""
    lines = text.splitlines()
    fence = _fence(lines)
    body = lines[fence[0] + 1 : fence[1]] if fence else lines
    body = [line.strip() for line in body if line.strip()]
    if not body:
        return [""] * count
    picks = [body[round(i * (len(body) - 1) / max(1, count - 1))] for i in range(count)]
    if fence is None:
        return picks
    return [f"{lines[fence[0]].strip()}\n{line}\n{fence[2]}" for line in picks]


def probes_of(text: str) -> list[str]:
    """The shortcut probe's answers made of ``text``, one per entry of :data:`PROBES`."""
    return [
        *(cut_short(text, cut) for cut in (*PROBE_LINES, *PROBE_SHARES)),
        *single_lines(text),
    ]


def probe_rollouts(
    rollouts: Rollouts, encode: Callable[[str], list[int]], solved_B: torch.Tensor
) -> Rollouts:
    """Each prompt's first failed rollout (its first where all solved: such a prompt is not
    counted, :func:`shortcut_sums`) made into short answers (:func:`probes_of`), as rollouts
    of their own (one group per prompt) to score like the sampled ones. ``encode`` gives a
    text's completion ids (its end-of-sequence token included); ``solved_B``: bool [B]."""
    k = rollouts.k
    texts = []
    for p in range(len(rollouts.texts) // k):
        failed = [i for i in range(p * k, (p + 1) * k) if not bool(solved_B[i])]
        texts += probes_of(rollouts.texts[failed[0] if failed else p * k])
    return Rollouts(
        rollouts.prompts,
        rollouts.columns,
        [encode(t) for t in texts],
        texts,
        [False] * len(texts),
        len(PROBES),
        0.0,
    )


def _probe_outcomes(sampled: Scored, probes: Scored, k: int) -> torch.Tensor:
    """float64 [P, len(PROBES)]: each probe's outcome part, -inf where it cannot show a hole:
    it solves the problem (a piece that carries the answer is a solution, not a shortcut), no
    reward function scored it (training gives it no weight), or every rollout of its prompt
    solved (there is no failed attempt to cut)."""
    outcome_PC = probes.outcome_B.view(-1, len(PROBES)).clone()
    void = probes.solved_B.clone()
    if probes.scored_B is not None:
        void |= ~probes.scored_B
    void_PC = void.view_as(outcome_PC) | sampled.solved_B.view(-1, k).all(1, keepdim=True)
    return outcome_PC.masked_fill(void_PC, -math.inf)


def shortcut_sums(sampled: Scored, probes: Scored, k: int) -> dict[str, np.ndarray]:
    """Per prompt group, the sampled rollouts whose outcome part lies below the best short
    answer of the prompt that neither solves it nor goes unscored (``shortcut_beats``, a ratio
    over ``rollouts`` in :data:`botgrpo.harness.diagnosis.RATIOS`)."""
    best_P = _probe_outcomes(sampled, probes, k).max(1).values
    outcome_PK = sampled.outcome_B.view(-1, k)
    return {"shortcut_beats": (outcome_PK < best_P[:, None] - 1e-9).sum(1).double().numpy()}


def shortcut_figures(sampled: Scored, probes: Scored, k: int, texts: list[str]) -> dict:
    """Among the prompts whose best short answer outscores at least one of their rollouts: the
    kind of short answer (:data:`PROBES`) that is best most often (``cut``, None where no
    prompt has one) and, from the prompt where it leads its own rollouts' mean by the most,
    its text (``example``), its outcome part and that mean (``texts``: the probes' texts)."""
    best_P, which_P = _probe_outcomes(sampled, probes, k).max(1)
    outcome_PK = sampled.outcome_B.view(-1, k)
    beats_P = (outcome_PK < best_P[:, None] - 1e-9).any(1)
    if not bool(beats_P.any()):
        return {"cut": None}
    kinds = Counter(PROBES[int(which_P[p])] for p in beats_P.nonzero().flatten().tolist())
    margin_P = torch.where(beats_P, best_P - outcome_PK.mean(1), -math.inf)
    p = int(margin_P.argmax())
    return {
        "cut": kinds.most_common(1)[0][0],
        "prompts_with_one": int(beats_P.sum()),
        "example": texts[p * len(PROBES) + int(which_P[p])][:300],
        "example_outcome": float(best_P[p]),
        "example_rollouts_outcome": float(outcome_PK[p].mean()),
    }
