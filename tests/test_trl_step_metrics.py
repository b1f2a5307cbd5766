"""The trainer's own step metrics, computed by hand on small batches."""

from __future__ import annotations

import pytest
import torch

from botgrpo.trl.metrics import rollout_sums, step_metrics
from botgrpo.trl.token_batch import TokenBatch


def _batch(outcome, local_rows, lengths, width):
    local = torch.zeros(len(outcome), width, dtype=torch.float64)
    for i, row in enumerate(local_rows):
        local[i, : len(row)] = torch.tensor(row, dtype=torch.float64)
    mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
    return TokenBatch(torch.tensor(outcome, dtype=torch.float64), local, None, mask)


def _metrics(tb, group):
    adv = torch.zeros(tb.mask_BT.shape)
    return step_metrics(rollout_sums(tb, adv, tb.mask_BT, torch.tensor(group)))


def test_shares_of_the_token_reward_and_of_the_first_tokens_return():
    # outcome -3 on both; four tokens penalised -0.5 on the first; the third is unscorable
    tb = _batch([-3.0, -3.0, 0.0], [[-0.5] * 4, []], [6, 4, 0], 6)
    m = _metrics(tb, [0, 0, 1])
    # bag: |outcome| on every token (6 + 4 tokens) against |token part| 2
    assert m["bot/local_share"] == pytest.approx(2 / (3 * 10 + 2))
    # returns: each outcome counted once (3 + 3) against |sum of token parts| 2
    assert m["bot/return_local_share"] == pytest.approx(2 / (6 + 2))
    assert m["bot/token_reward/mean"] == pytest.approx((-3 * 10 - 2) / 10)


def test_the_return_share_grows_with_length_where_the_token_share_does_not():
    def shares(length):
        tb = _batch([-3.0], [[-0.1] * length], [length], length)
        m = _metrics(tb, [0])
        return m["bot/local_share"], m["bot/return_local_share"]

    (short_tok, short_ret), (long_tok, long_ret) = shares(10), shares(1000)
    assert short_tok == pytest.approx(long_tok)  # 0.1 / 3.1 per token either way
    assert short_ret == pytest.approx(1 / 4) and long_ret == pytest.approx(100 / 103)


def test_signed_token_parts_cancel_in_the_return_not_in_the_bag():
    tb = _batch([1.0], [[0.5, -0.5, 0.5, -0.5]], [4], 4)
    m = _metrics(tb, [0])
    assert m["bot/local_share"] == pytest.approx(2 / (4 + 2))
    assert m["bot/return_local_share"] == 0.0


def test_no_scorable_completion_gives_zero_shares():
    m = _metrics(_batch([0.0, 0.0], [[], []], [0, 0], 3), [0, 1])
    assert m["bot/local_share"] == 0.0 and m["bot/return_local_share"] == 0.0
