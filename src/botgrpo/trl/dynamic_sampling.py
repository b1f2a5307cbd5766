"""DAPO's dynamic sampling inside TRL's loop: drop zero-signal groups and refill the batch.

DAPO (arXiv 2503.14476, Sec. 3.2) keeps sampling until the batch is full of groups whose
outcomes are not all equal. Here a group is dropped when its advantages are all 0 (for the
outcome estimators exactly "all outcomes equal"; for token estimators "no reward spread at
all"). The trainer generates extra rounds for fresh prompts (:func:`refill_prompt_indices`) and
merges the kept groups of all rounds into a batch of the usual size (:func:`concat_batches`).

How it differs from DAPO's own loop (documented in ``docs/trainer/presets.md``):

1. Refill prompts are drawn at random from the whole training set (seeded by the step and
   round, so a resumed run draws the same ones), not taken from the next batches of the epoch;
   a prompt may appear twice in one batch.
2. At most ``dynamic_sampling_max_rounds`` rounds; a batch still short then keeps some
   zero-signal groups (advantage 0: they add nothing to the gradient but count in TRL's
   loss normaliser) instead of failing.
3. Each process fills its own share of groups (it must hold whole groups); a round runs on every
   process while any process is short.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

#: Completion-side fields [B, T] and the value their right padding takes.
COMPLETION_FIELDS = {
    "completion_ids": None,  # the tokenizer's pad id
    "completion_mask": 0,
    "advantages": 0.0,
    "old_per_token_logps": 0.0,
    "ref_per_token_logps": 0.0,
    "sampling_per_token_logps": 0.0,
    "importance_sampling_ratio": 1.0,
    "tool_mask": 1,
}
#: Prompt-side fields [B, P] (left padded).
PROMPT_FIELDS = {"prompt_ids": None, "prompt_mask": 0}


def group_signal(advantages_BT: Tensor, num_generations: int) -> Tensor:
    """bool [B / K]: which of this process's (whole) groups have any nonzero advantage."""
    has_B = (advantages_BT != 0).any(dim=1)
    return has_B.view(-1, num_generations).any(dim=1)


def take_groups(batch: dict, groups: Sequence[int], num_generations: int) -> dict:
    """The rows of ``batch`` belonging to the given local group indices, in that order."""
    rows = torch.tensor(
        [g * num_generations + k for g in groups for k in range(num_generations)], dtype=torch.long
    )
    out = {}
    for key, value in batch.items():
        if isinstance(value, Tensor) and value.ndim >= 1:
            out[key] = value[rows.to(value.device)]
        else:
            out[key] = value
    return out


def concat_batches(parts: Sequence[dict], pad_token_id: int) -> dict:
    """Concatenate batch dicts row-wise, re-padding prompt (left) and completion (right) fields.

    ``num_items_in_batch`` is dropped (the caller recomputes it); any other field that is not a
    known prompt/completion field is an error (e.g. multimodal inputs are not supported).
    """
    keys = [k for k in parts[0] if k != "num_items_in_batch"]
    out = {}
    for key in keys:
        values = [p[key] for p in parts]
        if key in COMPLETION_FIELDS or key in PROMPT_FIELDS:
            fill = {**COMPLETION_FIELDS, **PROMPT_FIELDS}[key]
            fill = pad_token_id if fill is None else fill
            out[key] = _pad_cat(values, fill, left=key in PROMPT_FIELDS)
        else:
            raise ValueError(
                f"dynamic sampling cannot merge the batch field {key!r}; it supports text "
                f"completions (fields {sorted({**COMPLETION_FIELDS, **PROMPT_FIELDS})})"
            )
    return out


def _pad_cat(values: Sequence[Tensor], fill: float, left: bool) -> Tensor:
    width = max(v.shape[1] for v in values)
    padded = [
        F.pad(v, (width - v.shape[1], 0) if left else (0, width - v.shape[1]), value=fill)
        for v in values
    ]
    return torch.cat(padded, dim=0)


def refill_prompt_indices(
    dataset_size: int, num_prompts: int, *, seed: int, step: int, round_: int
) -> list[int]:
    """``num_prompts`` distinct dataset indices for refill round ``round_`` of step ``step``.

    The same on every process (so each takes its slice) and a pure function of its arguments
    (so a resumed run draws the same prompts).

    >>> refill_prompt_indices(10, 3, seed=0, step=5, round_=1) == refill_prompt_indices(
    ...     10, 3, seed=0, step=5, round_=1)
    True
    """
    if num_prompts > dataset_size:
        raise ValueError(
            f"dynamic sampling needs {num_prompts} prompts per round but the dataset has "
            f"{dataset_size}"
        )
    gen = torch.Generator().manual_seed(hash((seed, step, round_)) % (2**63))
    return torch.randperm(dataset_size, generator=gen)[:num_prompts].tolist()
