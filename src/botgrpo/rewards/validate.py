"""Check what a reward function returned before the trainer uses it.

Accepted per completion (TRL's conventions plus token rewards):

- a :class:`~botgrpo.rewards.types.TokenReward` whose ``local`` has exactly one value per
  completion token (``len(completion_ids[i])``);
- a real number (an outcome-only reward, the same for every token), finite;
- ``None``: "not applicable" to this completion (TRL turns it into NaN and ignores it in the
  weighted sum of reward functions; a row where every function returns None gets a warning).

Everything else raises, naming the function and the completion index, so that no reward can
silently land on the wrong tokens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from botgrpo.rewards.types import TokenReward

__all__ = ["validate_token_rewards"]

RewardOutput = TokenReward | float | None


def validate_token_rewards(
    fn_name: str,
    outputs: Any,
    completion_ids: Sequence[Sequence[int]],
) -> list[RewardOutput]:
    """Validate one reward function's outputs for a batch; returns them as a list.

    Raises:
        TypeError: ``outputs`` is not a list, or an entry is not TokenReward/number/None.
        ValueError: wrong number of outputs, a TokenReward of the wrong length, or a NaN/inf.

    >>> validate_token_rewards("f", [1.0, None], [[5, 6], [7]])
    [1.0, None]
    >>> validate_token_rewards("f", [TokenReward(0.0, [0.0, 0.0, 0.0])], [[5, 6]])
    Traceback (most recent call last):
    ...
    ValueError: reward function 'f', completion 0: TokenReward has 3 token values but the completion has 2 tokens
    """
    if isinstance(outputs, np.ndarray) and outputs.ndim == 1:
        outputs = outputs.tolist()
    if isinstance(outputs, (str, bytes)) or not isinstance(outputs, Sequence):
        raise TypeError(
            f"reward function {fn_name!r} must return a list (one entry per completion), "
            f"got {type(outputs).__name__}"
        )
    outputs = list(outputs)
    if len(outputs) != len(completion_ids):
        raise ValueError(
            f"reward function {fn_name!r} returned {len(outputs)} rewards for "
            f"{len(completion_ids)} completions; return exactly one entry per completion"
        )
    checked: list[RewardOutput] = []
    for i, (out, ids) in enumerate(zip(outputs, completion_ids, strict=True)):
        where = f"reward function {fn_name!r}, completion {i}"
        if out is None:
            checked.append(None)
        elif isinstance(out, TokenReward):
            if out.n_tokens != len(ids):
                raise ValueError(
                    f"{where}: TokenReward has {out.n_tokens} token values but the completion "
                    f"has {len(ids)} tokens"
                )
            checked.append(out)
        elif isinstance(out, (int, float, np.integer, np.floating)) and not isinstance(out, bool):
            if not math.isfinite(float(out)):
                raise ValueError(f"{where}: reward is {float(out)}; rewards must be finite")
            checked.append(float(out))
        else:
            raise TypeError(
                f"{where}: got {type(out).__name__}; expected a TokenReward, a number or None"
            )
    return checked
