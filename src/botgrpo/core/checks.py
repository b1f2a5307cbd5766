"""Input validation shared by every estimator and loss.

Bad input raises ``ValueError`` naming the problem; nothing is silently coerced into a wrong
number. Values at masked positions never matter (they may hold padding garbage, even NaN or
inf): they are selected away (``torch.where``), never multiplied by 0, so they reach neither a
result nor a gradient.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def as_tensor(x: object, name: str) -> Tensor:
    """Turn a tensor, numpy array or nested list into a tensor, naming ``name`` on failure."""
    if isinstance(x, Tensor):
        return x
    try:
        return torch.as_tensor(x)
    except (TypeError, ValueError, RuntimeError) as err:
        kind = getattr(getattr(x, "dtype", None), "kind", None)  # numpy: "U" strings, "O" objects
        if kind in ("U", "S", "O") or (
            isinstance(x, list | tuple) and any(isinstance(v, str) for v in x)
        ):
            raise ValueError(
                f"{name} holds strings; it must hold numbers (group ids as integers: map each "
                "prompt to 0, 1, ...)"
            ) from err
        raise ValueError(f"{name} must be a tensor or array-like, got {type(x).__name__}") from err


def check_mask(mask_BT: object, shape: torch.Size, name: str = "mask_BT") -> Tensor:
    """Return ``mask_BT`` as bool [B, T]; it must be bool or hold only 0 and 1."""
    mask = as_tensor(mask_BT, name)
    if mask.shape != shape:
        raise ValueError(f"{name} has shape {tuple(mask.shape)}, expected {tuple(shape)}")
    if mask.dtype == torch.bool:
        return mask
    if mask.is_complex() or not ((mask == 0) | (mask == 1)).all():
        raise ValueError(f"{name} must be bool or contain only 0 and 1")
    return mask != 0


def check_binary_mask(
    mask_BT: object, shape: torch.Size, name: str = "mask_BT", *, scratch: Tensor | None = None
) -> Tensor:
    """Return ``mask_BT`` itself (no copy) after checking it is bool or holds only 0 and 1.

    Integers are checked by their minimum and maximum. Floats by ``m - m * m``, which is 0
    exactly when m is 0 or 1 (NaN and values outside [0, 1] fail too), computed into
    ``scratch`` (a buffer of the mask's shape, at least as wide as the mask's dtype, that the
    caller overwrites afterwards) when one is given, else chunk by chunk, so no full-size
    temporary is made.
    """
    mask = as_tensor(mask_BT, name)
    if mask.shape != shape:
        raise ValueError(f"{name} has shape {tuple(mask.shape)}, expected {tuple(shape)}")
    if mask.dtype == torch.bool or mask.numel() == 0:
        return mask
    bad = f"{name} must be bool or contain only 0 and 1"
    if mask.is_complex():
        raise ValueError(bad)
    if not mask.is_floating_point():  # integers in [0, 1] are 0 or 1
        low, high = torch.aminmax(mask)
        if not (bool(low >= 0) and bool(high <= 1)):
            raise ValueError(bad)
        return mask
    if scratch is not None and mask.dtype.itemsize <= scratch.dtype.itemsize:
        parts = [torch.addcmul(mask, mask, mask, value=-1, out=scratch)]
    else:
        flat = mask.reshape(-1)
        chunks = (flat[i : i + _CHUNK] for i in range(0, flat.numel(), _CHUNK))
        parts = (torch.addcmul(c, c, c, value=-1) for c in chunks)
    for part in parts:
        low, high = torch.aminmax(part)
        if not (bool(low == 0) and bool(high == 0)):
            raise ValueError(bad)
    return mask


_CHUNK = 1 << 17
"""Elements per chunk of the float mask test without a scratch buffer (stays in cache)."""


def check_group(group_B: object, batch: int) -> Tensor:
    """Return ``group_B`` as int64 [B]; ids must be integers (any values, not contiguous)."""
    group = as_tensor(group_B, "group_B")
    if group.dim() != 1 or group.shape[0] != batch:
        raise ValueError(f"group_B has shape {tuple(group.shape)}, expected ({batch},)")
    if group.dtype == torch.bool or group.is_floating_point() or group.is_complex():
        raise ValueError(
            f"group_B must hold integer group ids, got dtype {group.dtype}; "
            "pass e.g. torch.arange(num_prompts).repeat_interleave(K)"
        )
    return group.long()


def check_finite(values_BT: Tensor, mask_BT: Tensor, name: str) -> None:
    """Raise if a kept (mask=1) entry is NaN or inf, naming the offending rows."""
    bad_B = (~torch.isfinite(values_BT) & mask_BT).any(dim=-1)
    if bad_B.any():
        rows = bad_B.nonzero().flatten().tolist()
        shown = ", ".join(map(str, rows[:10])) + (" ..." if len(rows) > 10 else "")
        raise ValueError(f"{name} contains NaN or inf at unmasked positions in rows [{shown}]")


def check_token_inputs(
    rewards_BT: object, mask_BT: object, group_B: object
) -> tuple[Tensor, Tensor, Tensor]:
    """Validate the shared estimator inputs.

    Returns (rewards, mask, group): a fresh float tensor of the rewards with masked entries set
    to 0 (float32 unless the input is float64; the caller may modify it in place), the mask as
    bool and the group ids as int64. A single reduction checks that nothing is NaN or inf; only
    if something is does the masked, row-by-row check run (garbage under the mask is allowed).
    """
    rewards = as_tensor(rewards_BT, "rewards_BT")
    if rewards.dim() != 2:
        raise ValueError(f"rewards_BT must be 2-D [B, T], got shape {tuple(rewards.shape)}")
    if rewards.is_complex() or rewards.dtype == torch.bool:
        raise ValueError(f"rewards_BT must be a real tensor, got dtype {rewards.dtype}")
    if rewards.dtype != torch.float64:
        rewards = rewards.float()
    mask = check_mask(mask_BT, rewards.shape)
    group = check_group(group_B, rewards.shape[0])
    if bool(torch.isfinite(rewards.sum())):
        return rewards * mask, mask, group
    check_finite(rewards, mask, "rewards_BT")
    return torch.where(mask, rewards, torch.zeros((), dtype=rewards.dtype)), mask, group


def check_token_inputs_as_given(
    rewards_BT: object, mask_BT: object, group_B: object
) -> tuple[Tensor, Tensor, Tensor]:
    """Validate the shapes and dtypes of the shared estimator inputs without copying them.

    Returns (rewards, mask, group): the rewards as given (any real float dtype; other dtypes
    become float32), the mask as given (bool or numbers, shape checked) and the group ids as
    int64. The mask's values and NaN or inf among kept rewards are the estimator's to check
    (:func:`check_binary_mask` with its output buffer as scratch, :func:`check_finite`).
    """
    rewards = as_tensor(rewards_BT, "rewards_BT")
    if rewards.dim() != 2:
        raise ValueError(f"rewards_BT must be 2-D [B, T], got shape {tuple(rewards.shape)}")
    if rewards.is_complex() or rewards.dtype == torch.bool:
        raise ValueError(f"rewards_BT must be a real tensor, got dtype {rewards.dtype}")
    if not rewards.is_floating_point():
        rewards = rewards.float()
    mask = as_tensor(mask_BT, "mask_BT")
    if mask.shape != rewards.shape:
        raise ValueError(f"mask_BT has shape {tuple(mask.shape)}, expected {tuple(rewards.shape)}")
    if mask.is_complex():
        raise ValueError("mask_BT must be bool or contain only 0 and 1")
    return rewards, mask, check_group(group_B, rewards.shape[0])


def check_steps(steps_BT: object, shape: torch.Size, mask_BT: Tensor) -> Tensor:
    """Validate step indices (int, -1 outside any step); masked positions become -1."""
    if steps_BT is None:
        raise ValueError(
            "this estimator needs step structure: pass steps_BT (int [B, T], the step index of "
            "each token, -1 outside any step)"
        )
    steps = as_tensor(steps_BT, "steps_BT")
    if steps.shape != shape:
        raise ValueError(f"steps_BT has shape {tuple(steps.shape)}, expected {tuple(shape)}")
    if steps.is_floating_point() or steps.is_complex() or steps.dtype == torch.bool:
        raise ValueError(f"steps_BT must hold integer step indices, got dtype {steps.dtype}")
    steps = torch.where(mask_BT, steps.long(), torch.full((), -1, dtype=torch.long))
    if (steps < -1).any():
        raise ValueError("steps_BT must be >= -1 at unmasked positions (-1 = outside any step)")
    return steps


def check_nonnegative(name: str, value: float) -> None:
    """Raise unless ``value`` is a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise ValueError(f"option {name} must be a finite number >= 0, got {value!r}")


def check_positive(name: str, value: float) -> None:
    """Raise unless ``value`` is a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ValueError(f"option {name} must be a finite number > 0, got {value!r}")


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"option {name}={value!r} is not one of {', '.join(choices)}")


def kept_values(values_BT: Tensor, mask_BT: Tensor, name: str) -> Tensor:
    """``values_BT`` with masked positions replaced by 0 (selected, so their gradient is 0 and
    NaN or inf there goes nowhere); raises naming ``name`` and the rows if a kept value is NaN
    or inf. ``mask_BT`` is bool."""
    kept = torch.where(
        mask_BT, values_BT, torch.zeros((), dtype=values_BT.dtype, device=values_BT.device)
    )
    if not bool(torch.isfinite(kept.detach()).all()):
        check_finite(values_BT.detach(), mask_BT, name)
    return kept


_BASIC = (bool, int, float, str)


def _basic_types(hint: object) -> tuple[type, ...] | None:
    """The basic types a hint admits (``bool``, ``int``, ``float``, ``str``, optionally None),
    or None when the hint is anything else (left to the option's own check)."""
    import types
    import typing

    if hint in _BASIC:
        return (hint,)  # type: ignore[return-value]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = typing.get_args(hint)
        if all(m in _BASIC or m is type(None) for m in members):
            return members
    return None


def _admits(value: object, allowed: tuple[type, ...]) -> bool:
    if value is None:
        return type(None) in allowed
    if isinstance(value, bool):
        return bool in allowed  # a bool is an int to Python, never a number here
    if isinstance(value, int):
        return int in allowed or float in allowed
    if isinstance(value, float):
        return float in allowed
    return isinstance(value, str) and str in allowed


def check_option_types(what: str, fn: object, options: dict) -> None:
    """Raise unless each of ``options`` has the basic type ``fn`` annotates it with: a boolean
    option takes True or False (never the string "false", which Python reads as true), a number
    takes an int or float (never a bool or a string), a string takes a string. Options with
    other annotations (tensors, callables) are left to their own checks."""
    import typing

    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError):
        return
    for name, value in options.items():
        allowed = _basic_types(hints.get(name))
        if allowed is not None and not _admits(value, allowed):
            names = " or ".join("None" if t is type(None) else t.__name__ for t in allowed)
            raise ValueError(
                f"{what} option {name} must be {names}, got {value!r} (a {type(value).__name__})"
            )
