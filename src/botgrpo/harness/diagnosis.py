"""Before a long run: what a task gives GRPO and BoT at step 0, measured on the user's own model.

:func:`diagnose` samples K rollouts of N prompts from the model at the training temperature,
scores them with the training's reward functions (a task's own reward, or the ``reward_funcs``
of a ``botgrpo train`` YAML recipe, token and scalar ones alike), builds the token rewards
exactly as the trainer does (:mod:`botgrpo.scoring`: r_t = w_g G + w_s S_t + b_format for BoT,
w_g G + b_format for outcome-only methods), and measures, each with a bootstrap 95% interval
over prompts:

- ``grpo_no_signal``: the share of prompt groups whose K outcome rewards are all equal, where
  GRPO's advantage is 0 for every token (no gradient); ``bot_no_signal``: the share whose token
  rewards are all equal, where BoT has none either;
- ``local_share``: sum |w_s S_t| / (sum |outcome part| + sum |w_s S_t|) over the bag (the
  trainer's ``bot/local_share``) and ``local_spread``: the standard deviation of w_s S_t over
  all tokens of a group's bag, averaged over groups (0: the local signal is the same on every
  token, so it adds nothing to the outcome); ``return_local_share``: sum_i |sum_t w_s S_t| /
  (sum_i |outcome part| + sum_i |sum_t w_s S_t|) over rollouts (the trainer's
  ``bot/return_local_share``), the local signal's share of the first token's reward-to-go that
  the return-based presets (otb, reinforce_pp, ppo) rank rollouts by;
- ``solved``: the share of rollouts that solve their problem (the task's verdict, which every
  built-in and task reward reports; with reward functions that report none, an outcome at the
  batch's best), completion lengths and the share truncated at the length limit;
- ``outcome_credit``: the share of rollouts whose outcome part (w_g G + b_format) lies above
  that of the typical failure (``failure_outcome``: the most common outcome among the scored
  rollouts that do not solve their problem, the lowest where several are as common): the
  rollouts that earn more outcome credit than a typical failed attempt. On a pass/fail reward it
  is the solve rate; on a code reward that grades programs that compile above broken ones, the
  compile rate; a rare answer scored below the usual failure (a malformed one, a page that
  compiles and then fails to render) does not move it. 1 when no scored rollout fails. Where it
  is low, GRPO's signal rests on a few rollouts per batch, the regime where BoT's local signal
  led (docs/results/where-bot-pays.md);
- how the step verdicts relate to the outcome: the share of steps judged wrong in solved
  rollouts (``wrong_in_solved``) and judged right in failed ones (``right_in_failed``); and,
  where a reference verifier exists (a task trained with noisy or learned verdicts is checked
  against its exact ones), ``false_alarm`` (right steps judged wrong), ``miss`` (wrong steps
  judged right) and ``flags_right`` (of the steps judged wrong, the share that are wrong: the
  flags' precision, which on long completions with few wrong lines can be low while the
  verdicts' accuracy, carried by the many right lines judged right, stays high);
- ``shortcut_beats``, the shortcut probe (:mod:`botgrpo.harness.shortcut`): short answers made of each prompt's first failed
  rollout (the empty answer, its first 1-3 lines, its first quarter and half, six single lines
  of it on their own; an open code fence closed) scored by the same reward; the share of the
  sampled rollouts whose outcome part (w_g G + b_format) lies below the best short answer of
  their prompt that neither solves it nor goes unscored. Where it is high, a snippet pays more
  than the model's own attempts: a hole in the outcome a policy can learn to take (the paper's
  blank pages; a non-component snippet on long React pages, docs/results/code-regime.md);
- costs: seconds per rollout and per scoring call, the peak memory of the process, and BoT's
  training state against PPO with a critic at this model's shape (:mod:`botgrpo.trl.memory`).
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

#: Bootstrap resamples of the intervals.
N_BOOT = 2000


@dataclass(frozen=True)
class Rollouts:
    """K sampled completions of each of N prompts, flattened prompt-major (rollout i answers
    prompt i // K).

    Attributes:
        prompts: the N prompts as the reward functions get them (text or conversation).
        columns: dataset columns per prompt (answer, meta, ...), repeated per rollout on use.
        completion_ids: the generated ids of each rollout (EOS included when generated).
        texts: each rollout decoded without special tokens.
        truncated: whether each rollout hit the length limit without ending.
        k: rollouts per prompt.
        seconds: generation's wall time.
    """

    prompts: list[Any]
    columns: dict[str, list[Any]]
    completion_ids: list[list[int]]
    texts: list[str]
    truncated: list[bool]
    k: int
    seconds: float

    @property
    def group_B(self) -> torch.Tensor:
        return torch.arange(len(self.texts)) // self.k


def sample_rollouts(
    model,
    tokenizer,
    prompts: Sequence[Any],
    columns: dict[str, list[Any]],
    *,
    k: int,
    temperature: float,
    max_new_tokens: int,
    render: Callable[[Any], str] = str,
    batch_size: int = 64,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    cache_implementation: str = "dynamic",
) -> Rollouts:
    """``k`` completions of every prompt at ``temperature`` (``render``: the text the model
    continues for a prompt, e.g. its chat template; ``cache_implementation``: transformers' KV
    cache, "static" for long completions)."""
    cache = (
        {} if cache_implementation == "dynamic" else {"cache_implementation": cache_implementation}
    )
    model.eval()
    tokenizer.padding_side = "left"
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    ids_out, texts, truncated = [], [], []
    per_batch = max(1, batch_size // k)
    start = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for i in range(0, len(prompts), per_batch):
            chunk = [render(p) for p in prompts[i : i + per_batch]]
            enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
            with torch.no_grad():
                gen = model.generate(
                    **enc,
                    max_new_tokens=max_new_tokens,
                    do_sample=True,
                    temperature=temperature,
                    top_k=0,
                    top_p=1.0,
                    num_return_sequences=k,
                    pad_token_id=pad,
                    eos_token_id=eos,
                    **cache,
                )
            for row in gen[:, enc.input_ids.shape[1] :].tolist():
                ended = eos in row
                ids = row[: row.index(eos) + 1] if ended else row
                ids_out.append(ids)
                texts.append(tokenizer.decode(ids, skip_special_tokens=True))
                truncated.append(not ended)
            if progress is not None:
                progress(len(chunk))
    return Rollouts(
        list(prompts), columns, ids_out, texts, truncated, k, time.perf_counter() - start
    )


@dataclass
class Scored:
    """The token rewards of every rollout, as the trainer builds them.

    Attributes:
        outcome_B: float64 [B], w_g G + b_format summed over reward functions (weighted).
        local_BT: float64 [B, T], w_s S_t summed over token reward functions (weighted).
        mask_BT: bool [B, T], each rollout's own tokens.
        solved_B: bool [B], whether each rollout solved its problem.
        verdicts: per rollout, the raw step verdicts its first step-judging reward gave.
        seconds: wall time of the scoring calls, one per reward function.
        scored_B: bool [B], whether any reward function scored the rollout (one none scores
            gets outcome 0 and no tokens, as in training).
        steps: per rollout, the step index of each token from the reward that gave
            ``verdicts`` (-1 outside any step; None where it gave none).
        spans: per rollout, the characters (start, end) of each verdict's step in the
            decoded completion, where that reward names them (``info["verdict_spans"]``).
    """

    outcome_B: torch.Tensor
    local_BT: torch.Tensor
    mask_BT: torch.Tensor
    solved_B: torch.Tensor
    verdicts: list[list[int] | None]
    seconds: list[float] = field(default_factory=list)
    scored_B: torch.Tensor | None = None
    steps: list[list[int] | None] = field(default_factory=list)
    spans: list[list[tuple[int, int]] | None] = field(default_factory=list)


def score_rollouts(
    rollouts: Rollouts,
    reward_funcs: Sequence[Callable],
    *,
    w_g: float,
    w_s: float,
    weights: Sequence[float] | None = None,
    local_bound: float = 1.0,
    solved_from: float | None = None,
) -> Scored:
    """Call every reward function on the rollouts as TRL does (prompts, completions,
    completion_ids and the dataset's columns) and build the token rewards with the trainer's
    own split (:func:`botgrpo.scoring.entries.split_entries`). A rollout no reward function
    gives a verdict on counts as solved with an outcome at ``solved_from`` or above (default:
    the batch's best), where that is above 0."""
    from botgrpo.rewards.types import TokenReward
    from botgrpo.scoring.entries import RewardBatch, entry_bound, split_entries
    from botgrpo.scoring.token_batch import build_token_batch

    k, n = rollouts.k, len(rollouts.texts)
    prompts = [rollouts.prompts[i // k] for i in range(n)]
    columns = {c: [v[i // k] for i in range(n)] for c, v in rollouts.columns.items()}
    conversational = not isinstance(prompts[0], str) if prompts else False
    completions = (
        [[{"role": "assistant", "content": t}] for t in rollouts.texts]
        if conversational
        else list(rollouts.texts)
    )
    batch = RewardBatch(rollouts.completion_ids)
    names = [getattr(f, "__name__", type(f).__name__) for f in reward_funcs]
    outcomes_BF, seconds = [], []
    verdicts: list[list[int] | None] = [None] * n
    steps: list[list[int] | None] = [None] * n
    spans: list[list[tuple[int, int]] | None] = [None] * n
    solved: list[bool | None] = [None] * n
    for slot, func in enumerate(reward_funcs):
        start = time.perf_counter()
        try:
            out = func(
                prompts=prompts,
                completions=completions,
                completion_ids=rollouts.completion_ids,
                **columns,
            )
        except Exception as err:  # a user's function: name it and what it raised
            raise RuntimeError(
                f"reward function {names[slot]!r} raised {type(err).__name__}: {err}"
            ) from err
        seconds.append(time.perf_counter() - start)
        bound = entry_bound(func, local_bound)
        outcomes_BF.append(split_entries(names[slot], out, batch, slot, w_g, w_s, bound))
        for i, entry in enumerate(out):
            if not isinstance(entry, TokenReward):
                continue
            raw = entry.info.get("raw_verdicts")
            if verdicts[i] is None and raw is not None:
                verdicts[i] = [int(v) for v in raw]
                steps[i] = None if entry.steps is None else entry.steps.tolist()
                named = entry.info.get("verdict_spans")
                spans[i] = None if named is None else [(int(a), int(b)) for a, b in named]
            if solved[i] is None and "solved" in entry.info:
                solved[i] = bool(entry.info["solved"])
    matrix = torch.tensor(
        [[math.nan if v is None else v for v in row] for row in zip(*outcomes_BF, strict=True)],
        dtype=torch.float64,
    ).reshape(n, len(reward_funcs))
    weights_F = torch.tensor(list(weights) if weights is not None else [1.0] * len(reward_funcs))
    width = max((len(ids) for ids in rollouts.completion_ids), default=0)
    tb = build_token_batch(batch, matrix, weights_F, names, width)
    if any(s is None for s in solved):  # no task verdict: an outcome at the batch's best solves
        best = float(tb.outcome_B.max()) if n else 0.0
        best = best if solved_from is None else solved_from
        solved = [
            s if s is not None else bool(tb.outcome_B[i] >= best - 1e-9) and best > 0
            for i, s in enumerate(solved)
        ]
    return Scored(
        tb.outcome_B,
        tb.local_BT * tb.mask_BT,
        tb.mask_BT,
        torch.tensor(solved, dtype=torch.bool),
        verdicts,
        seconds,
        ~torch.isnan(matrix).all(dim=1),
        steps,
        spans,
    )


def group_figures(scored: Scored, group_B: torch.Tensor) -> dict[str, np.ndarray]:
    """Per prompt group: the sums every figure is a ratio of (so a bootstrap over groups
    resamples whole groups)."""
    n_groups = int(group_B.max()) + 1 if group_B.numel() else 0
    out = {name: np.zeros(n_groups) for name in _GROUP_SUMS}
    floor = failure_outcome(scored)
    credited_B = scored.outcome_B > (-math.inf if floor is None else floor + 1e-9)
    if scored.scored_B is not None:
        credited_B &= scored.scored_B
    rewards_BT = (scored.outcome_B[:, None] + scored.local_BT) * scored.mask_BT
    for g in range(n_groups):
        rows = (group_B == g).nonzero().flatten()
        mask = scored.mask_BT[rows]
        outcome = scored.outcome_B[rows]
        tokens = mask.sum(1).double()
        r = rewards_BT[rows][mask]
        local = scored.local_BT[rows][mask]
        out["groups"][g] = 1.0
        out["grpo_no_signal"][g] = float(outcome.max() - outcome.min() < 1e-9)
        out["bot_no_signal"][g] = float(r.numel() == 0 or r.max() - r.min() < 1e-9)
        out["outcome_abs"][g] = float((outcome.abs() * tokens).sum())
        out["local_abs"][g] = float(local.abs().sum())
        scorable = tokens > 0
        out["outcome_once_abs"][g] = float(outcome[scorable].abs().sum())
        out["local_sum_abs"][g] = float((scored.local_BT[rows] * mask).sum(1)[scorable].abs().sum())
        out["local_spread"][g] = float(local.std(unbiased=False)) if local.numel() else 0.0
        out["rollouts"][g] = float(len(rows))
        out["solved"][g] = float(scored.solved_B[rows].sum())
        out["outcome_credit"][g] = float(credited_B[rows].sum())
        out["tokens"][g] = float(tokens.sum())
    return out


_GROUP_SUMS = (
    "groups",
    "grpo_no_signal",
    "bot_no_signal",
    "outcome_abs",
    "local_abs",
    "outcome_once_abs",
    "local_sum_abs",
    "local_spread",
    "rollouts",
    "solved",
    "outcome_credit",
    "tokens",
)

#: Each figure as (numerator, denominator) of summed per-group columns.
RATIOS = {
    "grpo_no_signal": ("grpo_no_signal", "groups"),
    "bot_no_signal": ("bot_no_signal", "groups"),
    "local_share": ("local_abs", ("outcome_abs", "local_abs")),
    "return_local_share": ("local_sum_abs", ("outcome_once_abs", "local_sum_abs")),
    "local_spread": ("local_spread", "groups"),
    "solved": ("solved", "rollouts"),
    "outcome_credit": ("outcome_credit", "rollouts"),
    "mean_tokens": ("tokens", "rollouts"),
    "shortcut_beats": ("shortcut_beats", "rollouts"),
}


def failure_outcome(scored: Scored) -> float | None:
    """The outcome part (w_g G + b_format) of the typical failed rollout: the most common one
    among the scored rollouts that do not solve their problem (the lowest of equally common
    ones); None when every scored rollout solves it. ``outcome_credit`` counts the rollouts
    above it."""
    failed = ~scored.solved_B
    if scored.scored_B is not None:
        failed &= scored.scored_B
    counts = Counter(round(float(x), 9) for x in scored.outcome_B[failed])
    if not counts:
        return None
    top = max(counts.values())
    return min(v for v, c in counts.items() if c == top)


def _ratio(sums: dict[str, np.ndarray], spec, idx: np.ndarray | None = None) -> float:
    num, den = spec
    pick = (lambda a: a) if idx is None else (lambda a: a[idx])
    top = float(pick(sums[num]).sum())
    dens = den if isinstance(den, tuple) else (den,)
    bottom = sum(float(pick(sums[d]).sum()) for d in dens)
    return top / bottom if bottom > 0 else 0.0


def with_intervals(sums: dict[str, np.ndarray], seed: int = 0) -> dict[str, dict[str, float]]:
    """Every figure of :data:`RATIOS` whose sums are given, with a percentile-bootstrap 95%
    interval over groups."""
    n = len(sums["groups"])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(N_BOOT, n)) if n else np.zeros((0, 0), dtype=int)
    out = {}
    for name, spec in RATIOS.items():
        if spec[0] not in sums:
            continue
        value = _ratio(sums, spec)
        boots = np.array([_ratio(sums, spec, d) for d in draws]) if n > 1 else np.array([value])
        low, high = np.quantile(boots, [0.025, 0.975])
        out[name] = {"value": value, "low": float(low), "high": float(high)}
    return out


def verdict_figures(
    scored: Scored, reference: list[list[int] | None] | None = None
) -> dict[str, float | int | None]:
    """How the step verdicts sit with the outcome, and against ``reference`` verdicts of the
    same steps where given (None where nothing was judged)."""
    judged = [(v, bool(s)) for v, s in zip(scored.verdicts, scored.solved_B.tolist(), strict=True)]
    in_solved = [x for v, s in judged if v and s for x in v if x != 0]
    in_failed = [x for v, s in judged if v and not s for x in v if x != 0]
    out: dict[str, float | int | None] = {
        "steps_judged": len(in_solved) + len(in_failed),
        "wrong_in_solved": in_solved.count(-1) / len(in_solved) if in_solved else None,
        "right_in_failed": in_failed.count(1) / len(in_failed) if in_failed else None,
        "steps_right": (in_solved.count(1) + in_failed.count(1)) / (len(in_solved) + len(in_failed))
        if in_solved or in_failed
        else None,
        "false_alarm": None,
        "miss": None,
        "flags_right": None,
        "verdict_accuracy": None,
    }
    if reference is None:
        return out
    pairs = [
        (got, ref)
        for mine, theirs in zip(scored.verdicts, reference, strict=True)
        if mine is not None and theirs is not None and len(mine) == len(theirs)
        for got, ref in zip(mine, theirs, strict=True)
        if ref != 0
    ]
    right = [g for g, r in pairs if r == 1]
    wrong = [g for g, r in pairs if r == -1]
    out["false_alarm"] = right.count(-1) / len(right) if right else None
    out["miss"] = wrong.count(1) / len(wrong) if wrong else None
    flagged = [r for g, r in pairs if g == -1]
    out["flags_right"] = flagged.count(-1) / len(flagged) if flagged else None
    out["verdict_accuracy"] = sum(g == r for g, r in pairs) / len(pairs) if pairs else None
    return out


def length_figures(rollouts: Rollouts) -> dict[str, float]:
    lengths = np.array([len(ids) for ids in rollouts.completion_ids], dtype=float)
    return {
        "mean_tokens": float(lengths.mean()) if lengths.size else 0.0,
        "p90_tokens": float(np.quantile(lengths, 0.9)) if lengths.size else 0.0,
        "truncated": float(np.mean(rollouts.truncated)) if rollouts.truncated else 0.0,
    }


def draw_prompts(task, n: int, seed: int) -> list:
    """``n`` problems of ``task`` from a stream of their own (never the held-out ones'
    streams, never training's), distinct by prompt."""
    rng = random.Random(f"diagnose-{seed}")
    seen: dict[str, Any] = {}
    for _ in range(50 * n + 100):
        if len(seen) == n:
            break
        ex = task.sample(rng)
        seen.setdefault(ex.prompt, ex)
    return list(seen.values())
