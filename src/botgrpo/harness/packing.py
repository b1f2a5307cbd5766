"""Sequence packing for supervised batches: several demonstrations share a row, none attends
to another.

A batch of right-padded rows pads every demonstration to the longest one; on a task whose
demonstrations vary in length (chain: 4-16 steps) a third of the positions are padding.
:func:`pack_rows` places the rows first-fit by decreasing length into rows of ``capacity``
positions and gives each demonstration position ids that restart at 0. With no attention mask
and no cache, transformers (>= 4.53) reads such position ids as packed sequences and blocks
attention across them (``masking_utils.find_packed_sequence_indices``), so every token sees
exactly what it sees in its own row: the same logits up to round-off, the same token-mean loss,
fewer positions to compute. The padding at a row's end forms a segment of its own, with
labels -100.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

#: (input ids, labels) of one demonstration; labels are -100 where no loss is taken.
Row = tuple[list[int], list[int]]


def _first_fit(rows: Sequence[Row], capacity: int) -> list[list[Row]]:
    """Rows in bins of at most ``capacity`` positions, first-fit by decreasing length (a row
    longer than ``capacity`` gets a bin of its own)."""
    bins: list[list[Row]] = []
    used: list[int] = []
    for row in sorted(rows, key=lambda r: -len(r[0])):
        for i, size in enumerate(used):
            if size + len(row[0]) <= capacity:
                bins[i].append(row)
                used[i] += len(row[0])
                break
        else:
            bins.append([row])
            used.append(len(row[0]))
    return bins


def pack_rows(rows: Sequence[Row], capacity: int, pad_id: int) -> dict[str, torch.Tensor]:
    """``input_ids``, ``labels`` and ``position_ids`` [R, W] of ``rows`` packed into R rows of
    at most ``capacity`` positions (W: the fullest). Pass them to the model with
    ``use_cache=False`` and no attention mask."""
    if not rows:
        raise ValueError("pack_rows needs at least one row")
    bins = _first_fit(rows, capacity)
    width = max(sum(len(ids) for ids, _ in b) for b in bins)
    ids_rows, label_rows, position_rows = [], [], []
    for b in bins:
        ids = [t for row_ids, _ in b for t in row_ids]
        labels = [t for _, row_labels in b for t in row_labels]
        positions = [p for row_ids, _ in b for p in range(len(row_ids))]
        pad = width - len(ids)
        ids_rows.append(ids + [pad_id] * pad)
        label_rows.append(labels + [-100] * pad)
        positions.extend(range(pad))  # the padding: a segment of its own
        position_rows.append(positions)
    return {
        "input_ids": torch.tensor(ids_rows),
        "labels": torch.tensor(label_rows),
        "position_ids": torch.tensor(position_rows),
    }
