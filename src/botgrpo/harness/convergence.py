"""When a warm start is done: the "converged" stop rule and its learning-rate schedule.

A constant rate after a short warm-up; every ``check_every`` steps a check on a fixed batch of
demonstrations that training never sees (never the evaluation's held-out problems): their
loss and, with ``watch_accuracy``, their token accuracy (the share of completion tokens the
model's argmax predicts). Once neither has improved by ``tolerance`` (relative; the accuracy
through its error rate) for ``patience`` checks, and for at least ``patience_fraction`` of the
steps run (a plateau that short, in a run that long, is a slow phase, not the end), the rate
anneals linearly to 10% over ``anneal`` times the steps run, and training stops. Checks go on
during the anneal; they are recorded, not acted on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch


class ConvergenceOptions(Protocol):
    """The options the rule reads (:class:`botgrpo.harness.warmstart.WarmStartConfig` has
    them; see its fields)."""

    @property
    def lr(self) -> float: ...
    @property
    def steps(self) -> int: ...
    @property
    def check_every(self) -> int: ...
    @property
    def tolerance(self) -> float: ...
    @property
    def watch_accuracy(self) -> bool: ...
    @property
    def patience(self) -> int: ...
    @property
    def patience_fraction(self) -> float: ...
    @property
    def anneal(self) -> float: ...


@dataclass(frozen=True)
class Check:
    """One check of the held-out demonstrations after ``step`` optimizer steps."""

    step: int
    loss: float
    token_acc: float


def token_accuracy(logits_BTV: torch.Tensor, labels_BT: torch.Tensor) -> float:
    """Share of labelled tokens (labels != -100) that the argmax of the previous position's
    logits predicts (the causal shift of the loss)."""
    preds_BT = logits_BTV[:, :-1].argmax(-1)
    targets_BT = labels_BT[:, 1:]
    mask_BT = targets_BT != -100
    return float((preds_BT == targets_BT)[mask_BT].float().mean()) if mask_BT.any() else 0.0


class ConvergenceRule:
    """The schedule (:meth:`lr`) and the stop decision (:meth:`after`) of a "converged" warm
    start of ``config``, checked on ``check_batch`` (padded rows with labels)."""

    def __init__(self, config: ConvergenceOptions, check_batch: dict) -> None:
        self.config, self.batch = config, check_batch
        self.best_loss, self.best_error, self.flat = math.inf, math.inf, 0
        self.anneal_from: int | None = None
        self.anneal_steps = 0
        self.checks: list[Check] = []

    def lr(self, step: int) -> float:
        """The rate of 0-based ``step``: warm-up, peak, then the anneal (over the last tenth of
        the step cap when the cap comes before convergence)."""
        peak, warm = self.config.lr, max(1, min(100, self.config.steps // 20))
        if step < warm:
            return peak * (step + 1) / warm
        last_tenth = self.config.steps - max(1, self.config.steps // 10)
        if self.anneal_from is None and step >= last_tenth:
            self.anneal_from, self.anneal_steps = last_tenth, self.config.steps - last_tenth
        if self.anneal_from is None:
            return peak
        done = (step - self.anneal_from) / max(1, self.anneal_steps)
        return peak * (1.0 - 0.9 * min(1.0, done))

    @torch.no_grad()
    def measure(self, model) -> Check:
        """Loss and token accuracy of ``model`` on the check batch (in eval mode)."""
        was_training = model.training
        model.eval()
        out = model(**self.batch)
        model.train(was_training)
        return Check(0, float(out.loss), token_accuracy(out.logits, self.batch["labels"]))

    def after(self, model, step: int) -> bool:
        """Check after 0-based ``step`` when one is due; True when training is done."""
        cfg = self.config
        done = self.anneal_from is not None and step + 1 >= self.anneal_from + self.anneal_steps
        if (step + 1) % cfg.check_every and not done:
            return False
        check = self.measure(model)
        self.checks.append(Check(step + 1, check.loss, check.token_acc))
        if self.anneal_from is not None:
            return done
        # a best moves only by a real improvement, so slow drift still counts as flat
        loss_better = check.loss < self.best_loss * (1 - cfg.tolerance)
        if loss_better:
            self.best_loss = check.loss
        error = 1.0 - check.token_acc
        error_better = cfg.watch_accuracy and error < self.best_error * (1 - cfg.tolerance)
        if error_better:
            self.best_error = error
        self.flat = 0 if loss_better or error_better else self.flat + 1
        needed = max(cfg.patience, math.ceil(cfg.patience_fraction * (step + 1) / cfg.check_every))
        if self.flat >= needed:
            self.anneal_from = step + 1
            self.anneal_steps = max(cfg.check_every, round((step + 1) * cfg.anneal))
        return False
