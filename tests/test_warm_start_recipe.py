"""Packed warm-start batches: every demonstration sees only itself, the loss is the padded
batch's, and the packed warm start is its own cache entry."""

from __future__ import annotations

import itertools
import random

import pytest
import torch
from transformers import AutoModelForCausalLM

from botgrpo.harness.packing import pack_rows
from botgrpo.harness.warmstart import WarmStartConfig, _encode, _pad, train_warm_start
from botgrpo.tasks import ChainArithmetic
from botgrpo.tiny import TinyModelSpec, build_char_tokenizer, build_tiny_model

SMALL = TinyModelSpec(hidden=32, layers=2, heads=2, kv_heads=1, intermediate=64, max_positions=96)


@pytest.fixture(scope="module")
def model_and_rows(tmp_path_factory):
    path = build_tiny_model(tmp_path_factory.mktemp("tiny") / "m", spec=SMALL)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    tok = build_char_tokenizer()
    task = ChainArithmetic(min_steps=1, max_steps=4)
    rows = [_encode(task, tok, random.Random(i), frozenset()) for i in range(9)]
    return model, tok, rows


def test_each_packed_demonstration_sees_only_itself(model_and_rows):
    model, tok, rows = model_and_rows
    packed = pack_rows(rows, 96, tok.pad_token_id)
    assert packed["input_ids"].shape[0] < len(rows)  # several demonstrations share a row
    with torch.no_grad():
        logits = model(
            input_ids=packed["input_ids"], position_ids=packed["position_ids"], use_cache=False
        ).logits
        alone = {tuple(ids): model(input_ids=torch.tensor([ids])).logits[0] for ids, _ in rows}
    found = 0
    for r, positions in enumerate(packed["position_ids"].tolist()):
        starts = [i for i, p in enumerate(positions) if p == 0] + [len(positions)]
        for a, b in itertools.pairwise(starts):
            ids = tuple(packed["input_ids"][r, a:b].tolist())
            if ids in alone:
                assert torch.allclose(logits[r, a:b], alone[ids], atol=1e-5)
                found += 1
    assert found == len(rows)  # every demonstration, whole, in one segment


def test_packed_loss_is_the_padded_batchs_loss(model_and_rows):
    model, tok, rows = model_and_rows
    with torch.no_grad():
        padded = model(**_pad(rows, tok.pad_token_id)).loss
        packed = model(**pack_rows(rows, 96, tok.pad_token_id), use_cache=False).loss
    assert float(packed) == pytest.approx(float(padded), rel=1e-5)
    # the control: without use_cache=False the model reads no packing and the loss moves
    with torch.no_grad():
        leaky = model(**pack_rows(rows, 96, tok.pad_token_id)).loss
    assert abs(float(leaky) - float(padded)) > 1e-4


def test_pack_rows_keeps_every_token_and_pads_apart():
    rows = [([1] * n, [-100] + [2] * (n - 1)) for n in (5, 3, 7, 2, 9)]
    out = pack_rows(rows, 10, pad_id=0)
    ids, labels, positions = (out[k].tolist() for k in ("input_ids", "labels", "position_ids"))
    assert sum(v == 1 for row in ids for v in row) == 26  # every token, once
    assert sum(v == 2 for row in labels for v in row) == 21  # every label, once
    for row_ids, row_labels, row_pos in zip(ids, labels, positions, strict=True):
        real = sum(v == 1 for v in row_ids)
        assert real <= 10
        assert all(lab == -100 for lab in row_labels[real:])  # no loss on padding
        if real < len(row_pos):
            assert row_pos[real] == 0  # the padding starts a segment of its own
    # a demonstration longer than the row gets a row of its own, not an error
    assert pack_rows([([1] * 12, [2] * 12)], 10, 0)["input_ids"].shape == (1, 12)
    with pytest.raises(ValueError, match="at least one row"):
        pack_rows([], 10, 0)


def test_a_packed_warm_start_trains_like_a_padded_one(tmp_path):
    task = ChainArithmetic(min_steps=2, max_steps=5)
    base = WarmStartConfig(steps=6, batch_size=8, model=SMALL)
    padded = train_warm_start(task, base, tmp_path / "a", progress=False)
    packed_cfg = WarmStartConfig(steps=6, batch_size=8, model=SMALL, packed=True)
    packed = train_warm_start(task, packed_cfg, tmp_path / "b", progress=False)
    assert packed.final_loss == pytest.approx(padded.final_loss, rel=1e-4)
    # another cache entry (not bitwise the same weights), and padded keys are as before
    assert packed_cfg.cache_key(task) != base.cache_key(task)
    assert "packed" not in base._key_fields() and packed_cfg._key_fields()["packed"] is True


class _Scripted(torch.nn.Module):
    """A model whose check loss and token accuracy follow a script, one pair per call."""

    def __init__(self, script):
        super().__init__()
        self.script = list(script)

    def forward(self, labels, **_):
        loss, acc = self.script.pop(0)
        n = labels.shape[1] - 1
        right = round(acc * n)
        logits = torch.zeros(1, labels.shape[1], 2)
        logits[0, :right, 1] = 1.0  # predicts token 1 where the label is 1
        return type("Out", (), {"loss": torch.tensor(loss), "logits": logits})()


def _run_rule(script, **options):
    from botgrpo.harness.convergence import ConvergenceRule

    cfg = WarmStartConfig(steps=1000, stop="converged", check_every=10, patience=2, **options)
    batch = {"labels": torch.ones(1, 101, dtype=torch.long)}
    rule, model = ConvergenceRule(cfg, batch), _Scripted(script)
    for step in range(cfg.steps):
        rule.lr(step)
        if rule.after(model, step):
            return rule, step + 1
    raise AssertionError("never stopped")


def test_the_rule_anneals_once_the_loss_is_flat_and_stops_after_the_anneal():
    # loss improves for 4 checks, then stays flat: 2 flat checks fire the anneal at step 60
    script = [(1.0, 0.5), (0.5, 0.6), (0.3, 0.7), (0.2, 0.8), (0.2, 0.8), (0.2, 0.8)]
    rule, stopped = _run_rule(script + [(0.19, 0.8)] * 10, anneal=0.5)
    assert rule.anneal_from == 60 and rule.anneal_steps == 30 and stopped == 90
    assert rule.lr(60) == pytest.approx(3e-3) and rule.lr(89) < rule.lr(75) < rule.lr(60)
    assert rule.lr(90) == pytest.approx(3e-4)  # 10% of the peak at the end
    # checks go on during the anneal and at its end; they do not decide anything
    assert [c.step for c in rule.checks] == [10, 20, 30, 40, 50, 60, 70, 80, 90]
    _, stopped_short = _run_rule(script + [(0.19, 0.8)] * 10, anneal=0.1)
    assert stopped_short == 70  # at least check_every steps of anneal


def test_watching_accuracy_waits_while_the_accuracy_still_rises():
    # the loss is flat from the 3rd check, the token error keeps falling until the 6th
    script = [(1.0, 0.5), (0.5, 0.6), (0.5, 0.7), (0.5, 0.8), (0.5, 0.9), (0.5, 0.95)]
    script += [(0.5, 0.95)] * 20
    loss_only, _ = _run_rule(script, anneal=0.1)
    watching, _ = _run_rule(script, anneal=0.1, watch_accuracy=True)
    assert loss_only.anneal_from == 40
    assert watching.anneal_from == 80
    assert [round(c.token_acc, 2) for c in watching.checks[:3]] == [0.5, 0.6, 0.7]


def test_a_plateau_short_for_the_run_so_far_is_not_the_end():
    # the last improvement at step 40; 2 flat checks would do, but half the run must pass too
    script = [(1.0, 0.5), (0.5, 0.6), (0.3, 0.7), (0.2, 0.8)] + [(0.2, 0.8)] * 30
    quick, _ = _run_rule(script, anneal=0.1)
    patient, _ = _run_rule(script, anneal=0.1, patience_fraction=0.5)
    assert quick.anneal_from == 60
    assert patient.anneal_from == 80  # 4 flat checks = 40 steps = half of 80
    with pytest.raises(ValueError, match="patience_fraction must be in"):
        WarmStartConfig(patience_fraction=1.0)
