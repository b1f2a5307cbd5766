"""Clipped policy-gradient losses, registered by name, with one shared signature.

    loss, metrics = fn(logp_BT, old_logp_BT, adv_BT, mask_BT, *, eps_low, eps_high,
                       aggregation="seq-mean-token-mean", max_len=None,
                       ref_logp_BT=None, beta=0.0, kl="k3")

With rho = exp(logp - old_logp) and PPO(rho, A) = min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A):

    ppo_clip    l_t = -PPO(rho_t, A_t)                     GRPO (0.2/0.2), DAPO clip-higher (0.2/0.28)
    gspo        l_i = -PPO(s_i, A_i), s_i = exp(mean_t log rho_t), A_i = mean_t A_t   (arXiv 2507.18071)
    gspo_token  l_t = -PPO(s_t, A_t), s_t = sg[s_i] * pi_t / sg[pi_t]   (GSPO-token: per-token A)

plus ``beta`` * KL(pi || pi_ref) per token (estimator ``kl``) when ``ref_logp_BT`` is given, then
aggregated over the batch (see :mod:`botgrpo.core.aggregation`). log rho is computed in
float32 and clamped to [-20, 20] before ``exp`` (as verl does): a ratio that would overflow
(log rho > 88.7 in float32, > 11.1 in fp16) gives a finite loss and a zero gradient on that
token, not a NaN gradient. ``old_logp_BT``, ``adv_BT`` and ``ref_logp_BT`` are detached: the
gradient flows through ``logp_BT`` only, also when the caller passes ``old_logp_BT=logp_BT``
on-policy. Masked positions are replaced
by 0 before anything is computed (selected, not multiplied), so NaN, inf or huge values there
change neither the loss nor any gradient; a NaN or inf at a kept position raises, naming the
tensor and its rows. ``metrics`` holds floats:
clip_frac_low / clip_frac_high (tokens whose clipped branch is active on each side), ratio mean,
min and max, approx_kl (k3 between old and current policy) and kl (to the reference, if any).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from botgrpo.core.aggregation import aggregate_loss
from botgrpo.core.checks import as_tensor, check_mask, check_nonnegative, kept_values
from botgrpo.core.kl import kl_penalty
from botgrpo.core.registry import Registry


@dataclass(frozen=True)
class TokenTerms:
    """What a policy-loss variant computes before KL and aggregation.

    Attributes:
        loss_BT: per-token surrogate loss.
        ratio_BT: the importance ratio that was clipped (per token or broadcast per sequence).
        adv_BT: the advantage that multiplied it (per token or broadcast per sequence).
    """

    loss_BT: Tensor
    ratio_BT: Tensor
    adv_BT: Tensor


Surrogate = Callable[[Tensor, Tensor, Tensor, Tensor, float, float], TokenTerms]
PolicyLoss = Callable[..., tuple[Tensor, dict[str, float]]]

_REGISTRY: Registry[PolicyLoss] = Registry("policy loss")

#: Names of the registered policy losses.
POLICY_LOSSES: list[str] = []


def _clipped_surrogate(ratio: Tensor, adv: Tensor, eps_low: float, eps_high: float) -> Tensor:
    """-min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A)."""
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)
    return -torch.minimum(ratio * adv, clipped * adv)


def register_policy_loss(
    name: str, *, eps_low: float, eps_high: float
) -> Callable[[Surrogate], PolicyLoss]:
    """Register a surrogate ``fn(logp, old_logp, adv, mask, eps_low, eps_high) -> TokenTerms``
    under ``name`` with its paper's default clip range; the registered callable adds validation,
    the KL term, aggregation and metrics."""

    def decorator(surrogate: Surrogate) -> PolicyLoss:
        @functools.wraps(surrogate)
        def policy_loss(
            logp_BT: Tensor,
            old_logp_BT: Tensor,
            adv_BT: Tensor,
            mask_BT: Tensor,
            *,
            eps_low: float = eps_low,
            eps_high: float = eps_high,
            aggregation: str = "seq-mean-token-mean",
            max_len: int | None = None,
            ref_logp_BT: Tensor | None = None,
            beta: float = 0.0,
            kl: str = "k3",
        ) -> tuple[Tensor, dict[str, float]]:
            logp_BT, old_logp_BT, adv_BT = (
                as_tensor(t, name)
                for t, name in (
                    (logp_BT, "logp_BT"),
                    (old_logp_BT, "old_logp_BT"),
                    (adv_BT, "adv_BT"),
                )
            )
            if ref_logp_BT is not None:
                ref_logp_BT = as_tensor(ref_logp_BT, "ref_logp_BT")
            mask = _check_loss_inputs(logp_BT, old_logp_BT, adv_BT, mask_BT)
            for opt, value in (("eps_low", eps_low), ("eps_high", eps_high), ("beta", beta)):
                check_nonnegative(opt, value)
            if ref_logp_BT is not None and ref_logp_BT.shape != logp_BT.shape:
                raise ValueError(
                    f"ref_logp_BT has shape {tuple(ref_logp_BT.shape)}, expected "
                    f"{tuple(logp_BT.shape)}"
                )
            logp_BT, old_logp_BT, adv_BT = (
                kept_values(t, mask, name)
                for t, name in (
                    (logp_BT, "logp_BT"),
                    (old_logp_BT.detach(), "old_logp_BT"),
                    (adv_BT.detach(), "adv_BT"),
                )
            )
            terms = surrogate(logp_BT, old_logp_BT, adv_BT, mask, eps_low, eps_high)
            loss_BT = terms.loss_BT
            kl_BT = None
            if ref_logp_BT is not None:
                ref_logp_BT = kept_values(ref_logp_BT.detach(), mask, "ref_logp_BT")
                kl_BT = kl_penalty(logp_BT, ref_logp_BT, kl)
                loss_BT = loss_BT + beta * kl_BT
            elif beta > 0:
                raise ValueError("beta > 0 needs ref_logp_BT (the reference policy's logprobs)")
            loss = aggregate_loss(loss_BT, mask, aggregation, max_len=max_len)
            metrics = _metrics(terms, logp_BT, old_logp_BT, mask, eps_low, eps_high, kl_BT)
            return loss, metrics

        _REGISTRY.register(name)(policy_loss)
        POLICY_LOSSES.append(name)
        return policy_loss

    return decorator


def get_policy_loss(name: str) -> PolicyLoss:
    """Return the policy loss registered as ``name``; ValueError listing valid names otherwise."""
    return _REGISTRY.get(name)


def _check_loss_inputs(logp: Tensor, old: Tensor, adv: Tensor, mask: Tensor) -> Tensor:
    if logp.dim() != 2:
        raise ValueError(f"logp_BT must be 2-D [B, T], got shape {tuple(logp.shape)}")
    for name, t in (("old_logp_BT", old), ("adv_BT", adv)):
        if t.shape != logp.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(logp.shape)}")
    return check_mask(mask, logp.shape)


#: log rho is clamped to [-LOG_RATIO_BOUND, LOG_RATIO_BOUND] before exp (verl's bound).
LOG_RATIO_BOUND = 20.0


def _ratio(log_ratio: Tensor) -> Tensor:
    """exp(log rho), computed in float32 from a clamped log rho (see the module docstring)."""
    return torch.exp(log_ratio.float().clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND))


def _masked_mean(x: Tensor, mask: Tensor) -> float:
    x = x.float()  # in float32: fp16 sums of ~65k tokens overflow
    kept = torch.where(mask != 0, x, torch.zeros((), dtype=x.dtype, device=x.device))
    return float(kept.sum() / mask.float().sum().clamp_min(1))


@torch.no_grad()
def _metrics(
    terms: TokenTerms,
    logp: Tensor,
    old: Tensor,
    mask: Tensor,
    eps_low: float,
    eps_high: float,
    kl_BT: Tensor | None,
) -> dict[str, float]:
    ratio, adv, m = terms.ratio_BT.detach(), terms.adv_BT, mask.to(logp.dtype)
    kept = ratio[mask] if mask.any() else torch.ones(1)
    out = {
        "clip_frac_low": _masked_mean(((ratio < 1 - eps_low) & (adv < 0)).to(m.dtype), m),
        "clip_frac_high": _masked_mean(((ratio > 1 + eps_high) & (adv > 0)).to(m.dtype), m),
        "ratio_mean": _masked_mean(ratio, m) if mask.any() else 1.0,
        "ratio_min": float(kept.min()),
        "ratio_max": float(kept.max()),
        "approx_kl": _masked_mean(kl_penalty(logp.detach(), old, "k3"), m),
    }
    if kl_BT is not None:
        out["kl"] = _masked_mean(kl_BT.detach(), m)
    return out


@register_policy_loss("ppo_clip", eps_low=0.2, eps_high=0.2)
def ppo_clip(
    logp_BT: Tensor,
    old_logp_BT: Tensor,
    adv_BT: Tensor,
    mask_BT: Tensor,
    eps_low: float,
    eps_high: float,
) -> TokenTerms:
    """Token-level clipped surrogate (PPO/GRPO; DAPO's clip-higher is eps_high = 0.28)."""
    ratio_BT = _ratio(logp_BT - old_logp_BT)
    return TokenTerms(_clipped_surrogate(ratio_BT, adv_BT, eps_low, eps_high), ratio_BT, adv_BT)


def _sequence_means(x_BT: Tensor, mask_BT: Tensor) -> Tensor:
    m = mask_BT.to(x_BT.dtype)
    return (x_BT * m).sum(dim=1) / m.sum(dim=1).clamp_min(1)


@register_policy_loss("gspo", eps_low=3e-4, eps_high=4e-4)
def gspo(
    logp_BT: Tensor,
    old_logp_BT: Tensor,
    adv_BT: Tensor,
    mask_BT: Tensor,
    eps_low: float,
    eps_high: float,
) -> TokenTerms:
    """GSPO (arXiv 2507.18071): sequence ratio s_i = exp(mean_t log rho_t), sequence advantage
    A_i = mean_t A_t (the advantage itself when constant per sequence); the per-sequence loss is
    broadcast to the sequence's tokens so every aggregation mode applies."""
    ratio_B = _ratio(_sequence_means(logp_BT - old_logp_BT, mask_BT))
    adv_B = _sequence_means(adv_BT, mask_BT)
    loss_B = _clipped_surrogate(ratio_B, adv_B, eps_low, eps_high)
    shape = logp_BT.shape
    return TokenTerms(
        loss_B[:, None].expand(shape), ratio_B[:, None].expand(shape), adv_B[:, None].expand(shape)
    )


@register_policy_loss("gspo_token", eps_low=3e-4, eps_high=4e-4)
def gspo_token(
    logp_BT: Tensor,
    old_logp_BT: Tensor,
    adv_BT: Tensor,
    mask_BT: Tensor,
    eps_low: float,
    eps_high: float,
) -> TokenTerms:
    """GSPO-token (arXiv 2507.18071 Eq. 13): s_t = sg[s_i] * pi_t / sg[pi_t] takes per-token
    advantages; its value is the sequence ratio, its gradient flows through each token."""
    ratio_B = _ratio(_sequence_means(logp_BT - old_logp_BT, mask_BT))
    ratio_BT = ratio_B.detach()[:, None] * torch.exp((logp_BT - logp_BT.detach()).float())
    return TokenTerms(_clipped_surrogate(ratio_BT, adv_BT, eps_low, eps_high), ratio_BT, adv_BT)
