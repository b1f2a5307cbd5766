"""The learned value model of the ``ppo`` preset: PPO with a critic, as a baseline for BoT.

A critic is a token-classification model with one output (a scalar value head on a copy of
the policy's backbone, or on a model of its own, ``critic_model``). Each scoring round it gives
V_t for the state before each completion token (no gradient); the trainer turns the token
rewards and those values into GAE advantages (:func:`botgrpo.core.returns.gae`) and trains the
critic on the round's returns with PPO's clipped value loss

    L_V = 1/2 mean_t max((V_t - R_t)^2, (V_t^old + clip(V_t - V_t^old, -c, c) - R_t)^2)

with its own AdamW optimizer and learning rate. The critic is part of the method's cost (its
memory and time are in every measurement of the run); it runs in one process, not under
accelerate's data parallelism: a comparison baseline, not a distributed PPO engine.
"""

from __future__ import annotations

import math
import time

import torch
from torch import Tensor

from botgrpo.loading import from_pretrained


class ValueCritic:
    """A value model and its optimizer.

    Args:
        model_name_or_path: the critic's starting weights (the policy's by default); its value
            head (``score``) starts fresh.
        learning_rate: the critic's AdamW learning rate.
        value_clip: c of the clipped value loss (0 = unclipped).
        epochs: passes over each round's rollouts.
        minibatch: rollouts per critic step.
        max_grad_norm: gradient-norm clip of each critic step (0: none).
        device: where the critic lives (the policy's device).
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        learning_rate: float,
        value_clip: float,
        epochs: int,
        minibatch: int,
        device: torch.device,
        max_grad_norm: float = 1.0,
    ) -> None:
        import warnings

        from transformers import AutoModelForTokenClassification
        from transformers.utils import logging as hf_logging

        if not model_name_or_path:
            raise ValueError(
                "preset ppo: set critic_model (the policy was given as an object without a "
                "saved path, so there is no copy to start the critic from)"
            )
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # "score weights newly initialized": expected here
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.model = from_pretrained(
                    AutoModelForTokenClassification,
                    model_name_or_path,
                    num_labels=1,
                    dtype=torch.float32,
                ).to(device)
        finally:
            hf_logging.set_verbosity(verbosity)
        for module in self.model.modules():  # V_old (eval) and V (train) must be one function
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=learning_rate)
        self.value_clip = value_clip
        self.epochs = epochs
        self.minibatch = minibatch
        self.max_grad_norm = max_grad_norm

    def _values(self, input_ids: Tensor, attention_mask: Tensor, width: int) -> Tensor:
        """V of the state before each of the last ``width`` tokens: [B, width]."""
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask).logits[..., 0]
        return logits[:, -width - 1 : -1].float()

    @torch.no_grad()
    def values(self, input_ids: Tensor, attention_mask: Tensor, width: int) -> Tensor:
        """The critic's values of a round's completions, [B, width] (no gradient)."""
        self.model.eval()
        return self._values(input_ids, attention_mask, width)

    def update(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        mask_BT: Tensor,
        old_values_BT: Tensor,
        returns_BT: Tensor,
    ) -> dict[str, float]:
        """Train on one round's returns; returns the logged metrics."""
        start = time.perf_counter()
        self.model.train()
        width = mask_BT.shape[1]
        returns_BT = returns_BT.float()
        losses = []
        for _ in range(self.epochs):
            order = torch.randperm(input_ids.shape[0], device=input_ids.device)
            for rows in order.split(self.minibatch):
                mask = mask_BT[rows]
                if not bool(mask.any()):
                    continue
                v = self._values(input_ids[rows], attention_mask[rows], width)
                loss = value_loss(v, old_values_BT[rows], returns_BT[rows], mask, self.value_clip)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if self.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
                self.optimizer.step()
                losses.append(float(loss.detach()))
        kept = mask_BT.bool()
        residual = (returns_BT - old_values_BT)[kept]
        target_var = float(returns_BT[kept].var()) if int(kept.sum()) > 1 else math.nan
        explained = 1.0 - float(residual.var()) / target_var if target_var > 0 else math.nan
        return {
            "critic/value_loss": sum(losses) / len(losses) if losses else math.nan,
            "critic/explained_variance": explained,
            "critic/value_mean": float(old_values_BT[kept].mean()) if bool(kept.any()) else 0.0,
            "critic/seconds": time.perf_counter() - start,
        }


def value_loss(
    values_BT: Tensor, old_values_BT: Tensor, returns_BT: Tensor, mask_BT: Tensor, clip: float
) -> Tensor:
    """PPO's clipped value loss, the token mean over ``mask_BT`` (``clip`` 0: plain MSE / 2).

    >>> value_loss(torch.tensor([[2.0]]), torch.tensor([[0.0]]), torch.tensor([[1.0]]),
    ...            torch.tensor([[True]]), 0.5)
    tensor(0.5000)
    """
    squared = (values_BT - returns_BT) ** 2
    if clip > 0:
        clipped = old_values_BT + (values_BT - old_values_BT).clamp(-clip, clip)
        squared = torch.maximum(squared, (clipped - returns_BT) ** 2)
    mask = mask_BT.to(squared.dtype)
    return 0.5 * (squared * mask).sum() / mask.sum().clamp_min(1.0)
