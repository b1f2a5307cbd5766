"""TRL's side of the token batch: which global prompt group each local row belongs to.

The token batch itself (:class:`TokenBatch`, :func:`build_token_batch`, :func:`token_advantages`)
is engine-neutral and lives in :mod:`botgrpo.scoring.token_batch`; it is re-exported here.
"""

from __future__ import annotations

import torch
from torch import Tensor

from botgrpo.scoring.token_batch import (
    OUTCOME_ESTIMATORS,
    STEP_OUTCOME_ESTIMATORS,
    TokenBatch,
    build_token_batch,
    token_advantages,
)

__all__ = [
    "OUTCOME_ESTIMATORS",
    "STEP_OUTCOME_ESTIMATORS",
    "TokenBatch",
    "build_token_batch",
    "group_ids",
    "token_advantages",
]


def group_ids(process_index: int, batch_size: int, num_generations: int, device) -> Tensor:
    """Global prompt-group id of each local row: TRL's sampler puts the K rollouts of a prompt on
    consecutive global rows, and process p holds global rows [p * B, (p + 1) * B)."""
    rows_B = process_index * batch_size + torch.arange(batch_size, device=device)
    return rows_B // num_generations
