"""The advantage-estimator registry and its shared, validated signature.

Every estimator is registered with :func:`register_advantage_estimator` and called as::

    adv_BT = fn(rewards_BT, mask_BT, group_B, *, eps=1e-6, gather=None, **options)

- ``rewards_BT``: float [B, T] token rewards (values at masked positions are ignored, even NaN).
- ``mask_BT``: bool or {0, 1} [B, T], 1 on completion tokens.
- ``group_B``: int [B] group ids; rollouts of one prompt share an id. Ids are arbitrary and
  need not be contiguous or sorted.
- ``eps``: added to the std in the denominator of normalised estimators (>= 0).
- ``gather``: optional collective that all-gathers a tensor along dim 0 across processes
  (e.g. ``accelerator.gather``); groups split over processes then get exactly the single-process
  advantages (see :mod:`botgrpo.core.groups`).
- Returns float32 [B, T], exactly 0 at masked positions.

The wrapper validates inputs and option names once, so the registered functions receive a fresh
float rewards tensor (float32, or float64 if given; 0 at masked positions; theirs to modify in
place), a bool mask and int64 group ids. Group statistics are accumulated in float64.
Estimators registered with ``as_given=True`` (the bag estimators, whose cost is all token
passes) instead receive the rewards and the mask exactly as the caller passed them (validated,
not copied: float32 or float64 rewards, a bool or number mask), check the mask's values and
kept entries for NaN and inf themselves, and return the float32 result with masked positions
already 0.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import torch
from torch import Tensor

from botgrpo.core.checks import (
    check_nonnegative,
    check_option_types,
    check_token_inputs,
    check_token_inputs_as_given,
)
from botgrpo.core.registry import Registry

AdvantageEstimator = Callable[..., Tensor]

_REGISTRY: Registry[AdvantageEstimator] = Registry("advantage estimator")

#: Names of every registered advantage estimator, in registration order.
ADVANTAGE_ESTIMATORS: list[str] = []

_SHARED = ("eps", "gather")


def _option_names(fn: Callable) -> tuple[str, ...]:
    params = inspect.signature(fn).parameters.values()
    return tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name not in _SHARED)


def register_advantage_estimator(
    name: str, *, as_given: bool = False
) -> Callable[[AdvantageEstimator], AdvantageEstimator]:
    """Decorator registering ``fn(rewards_BT, mask_BT, group_B, *, eps, gather, **options)``.

    The registered callable validates its inputs, rejects unknown options with a ValueError
    listing the accepted ones, and zeroes masked positions of the float32 result. With
    ``as_given`` the function gets the caller's rewards and mask uncopied (see the module
    docstring) and owns the NaN check and the masking of its result.
    """

    def decorator(fn: AdvantageEstimator) -> AdvantageEstimator:
        accepted = _option_names(fn)

        @functools.wraps(fn)
        def estimator(
            rewards_BT: Tensor,
            mask_BT: Tensor,
            group_B: Tensor,
            *,
            eps: float = 1e-6,
            gather: Callable[[Tensor], Tensor] | None = None,
            **options: object,
        ) -> Tensor:
            unknown = sorted(set(options) - set(accepted))
            if unknown:
                raise ValueError(
                    f"advantage estimator {name!r} got unknown option(s) {', '.join(unknown)}; "
                    f"it accepts: {', '.join(accepted + _SHARED)}"
                )
            check_nonnegative("eps", eps)
            check_option_types(f"advantage estimator {name!r}", fn, options)
            if as_given:
                rewards, mask, group = check_token_inputs_as_given(rewards_BT, mask_BT, group_B)
                adv_BT = _call_padded(fn, rewards, mask, group, eps, gather, options)
                _check_result(name, adv_BT, rewards.shape, None)
                return adv_BT
            rewards, mask, group = check_token_inputs(rewards_BT, mask_BT, group_B)
            adv_BT = _call_padded(fn, rewards, mask, group, eps, gather, options)
            _check_result(name, adv_BT, rewards.shape, None)
            if bool(torch.isfinite(adv_BT.sum())):
                return adv_BT.float() * mask
            out = torch.where(mask, adv_BT, torch.zeros((), dtype=adv_BT.dtype)).float()
            _check_result(name, out, rewards.shape, mask)
            return out

        estimator.options = accepted  # type: ignore[attr-defined]
        _REGISTRY.register(name)(estimator)
        ADVANTAGE_ESTIMATORS.append(name)
        return estimator

    return decorator


def _call_padded(fn, rewards: Tensor, mask: Tensor, group: Tensor, eps, gather, options) -> Tensor:
    """``fn`` on the batch; a batch of zero-length rows gets one masked column for the call
    (so every estimator, and every gather it joins, runs as for any batch) and loses it after."""
    if rewards.dim() == 2 and rewards.shape[1] == 0:
        pad = (rewards.shape[0], 1)
        rewards = torch.zeros(pad, dtype=rewards.dtype, device=rewards.device)
        mask = torch.zeros(pad, dtype=mask.dtype, device=mask.device)
        options = {k: _pad_column(v, pad) for k, v in options.items()}
        return fn(rewards, mask, group, eps=eps, gather=gather, **options)[:, :0]
    return fn(rewards, mask, group, eps=eps, gather=gather, **options)


def _pad_column(value: object, pad: tuple[int, int]) -> object:
    """A per-token option of zero-length rows as one masked column (-1, "no step", for integer
    ones such as ``steps_BT``; 0 otherwise); any other option as it is."""
    if isinstance(value, Tensor) and value.dim() == 2 and tuple(value.shape) == (pad[0], 0):
        fill = 0 if value.is_floating_point() or value.dtype == torch.bool else -1
        return torch.full(pad, fill, dtype=value.dtype, device=value.device)
    return value


def _check_result(name: str, adv_BT: object, shape: torch.Size, mask: Tensor | None) -> None:
    """ValueError unless an estimator returned a tensor of the rewards' shape (a [B] result
    would broadcast along T) and, with ``mask``, a finite value at every kept position."""
    if not isinstance(adv_BT, Tensor) or adv_BT.shape != shape:
        got = tuple(adv_BT.shape) if isinstance(adv_BT, Tensor) else type(adv_BT).__name__
        raise ValueError(
            f"advantage estimator {name!r} returned {got}, expected a tensor of the rewards' "
            f"shape {tuple(shape)}"
        )
    if mask is not None and not bool(torch.isfinite(adv_BT).all()):
        rows = torch.nonzero(~torch.isfinite(adv_BT).all(dim=1)).flatten()[:5].tolist()
        raise ValueError(
            f"advantage estimator {name!r} gave NaN or inf at kept positions of rows {rows}; "
            "check its options (e.g. a temperature too small to divide by)"
        )


def get_advantage_estimator(name: str) -> AdvantageEstimator:
    """Return the estimator registered as ``name``; ValueError listing valid names otherwise."""
    return _REGISTRY.get(name)
