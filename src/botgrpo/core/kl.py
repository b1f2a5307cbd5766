"""Per-token KL estimators to a reference policy (Schulman, "Approximating KL divergence").

With log r = logp_ref - logp (sampled from the current policy):
    k1 = -log r                 unbiased, high variance, can be negative
    k2 = 0.5 (log r)^2          biased, low variance
    k3 = (r - 1) - log r        unbiased, low variance, >= 0 (GRPO's choice)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from botgrpo.core.checks import as_tensor
from botgrpo.core.registry import Registry

_KL: Registry[Callable[[Tensor], Tensor]] = Registry("KL estimator")

#: Names of the KL estimators.
KL_ESTIMATORS = ("k1", "k2", "k3")


@_KL.register("k1")
def _k1(log_ratio_BT: Tensor) -> Tensor:
    return -log_ratio_BT


@_KL.register("k2")
def _k2(log_ratio_BT: Tensor) -> Tensor:
    return 0.5 * log_ratio_BT**2


@_KL.register("k3")
def _k3(log_ratio_BT: Tensor) -> Tensor:
    return torch.expm1(log_ratio_BT) - log_ratio_BT


def kl_penalty(logp_BT: Tensor, ref_logp_BT: Tensor, kind: str = "k3") -> Tensor:
    """Per-token KL(pi || pi_ref) estimate [B, T] by name ("k1", "k2" or "k3")."""
    fn = _KL.get(kind)
    logp_BT, ref_logp_BT = as_tensor(logp_BT, "logp_BT"), as_tensor(ref_logp_BT, "ref_logp_BT")
    if logp_BT.shape != ref_logp_BT.shape:
        raise ValueError(
            f"ref_logp_BT has shape {tuple(ref_logp_BT.shape)}, expected {tuple(logp_BT.shape)}"
        )
    return fn(ref_logp_BT - logp_BT)
