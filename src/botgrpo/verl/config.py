"""The ``botgrpo`` section of a verl config: which token reward functions score the rollouts.

Added to verl's Hydra config with ``+botgrpo.<key>=...`` on the command line, or as a top-level
``botgrpo:`` mapping in a YAML config. The names mirror botgrpo's TRL config, so a TRL recipe's
reward settings carry over unchanged::

    +botgrpo.reward_funcs=[math_step_reward]
    +botgrpo.reward_func_kwargs={math_step_reward:{config:{answer_column:ground_truth}}}
    +botgrpo.w_g=3.0 +botgrpo.w_s=0.5 +botgrpo.local_bound=1.0
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class VerlRewardConfig:
    """Token reward functions and weights (BoT-GRPO Eq. 4: r_t = w_g * G + w_s * S_t + b_format)."""

    reward_funcs: list[str] = field(default_factory=list)
    """Reward functions, as in ``botgrpo train``: built-in names (math_step_reward,
    python_code_reward, ...) or import paths 'pkg.module:function' ('()' marks a factory called
    with tokenizer=<the policy's tokenizer>). task_reward is not available: verl rows carry no
    botgrpo task."""
    reward_func_kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Keyword arguments per factory entry, e.g. {math_step_reward: {config: {...}}}."""
    reward_weights: list[float] | None = None
    """One weight per reward function (TRL's reward_weights); None: all 1."""
    w_g: float = 3.0
    """Weight of each rollout's outcome G; scalar rewards count as outcomes (w_g * s). Paper
    value 3.0, as in the TRL config."""
    w_s: float = 0.5
    """Weight of the local signal S_t. Paper value 0.5, as in the TRL config."""
    local_bound: float = 1.0
    """Bound B on |S_t| (a recipe's own bound wins); larger values are an error; inf disables
    the check. 1.0 as in the TRL config."""

    def __post_init__(self) -> None:
        funcs = self.reward_funcs
        if not isinstance(funcs, list) or not all(isinstance(f, str) for f in funcs):
            raise ValueError(
                f"botgrpo.reward_funcs must be a list of names, got {funcs!r}; e.g. "
                "+botgrpo.reward_funcs=[math_step_reward]"
            )
        if not self.reward_funcs:
            raise ValueError(
                "botgrpo.reward_funcs is empty: name the token reward functions, e.g. "
                "+botgrpo.reward_funcs=[math_step_reward]"
            )
        if "task_reward" in self.reward_funcs:
            raise ValueError(
                "botgrpo.reward_funcs: task_reward needs a botgrpo task, which verl's datasets do "
                "not carry; name the task's reward function by import path instead"
            )
        for name in ("w_g", "w_s", "local_bound"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
                raise ValueError(f"botgrpo.{name} must be a number, got {value!r}")
        if self.w_g <= 0 or self.w_s < 0 or self.local_bound <= 0:
            raise ValueError(
                f"botgrpo.w_g must be > 0, w_s >= 0 and local_bound > 0; got w_g={self.w_g}, "
                f"w_s={self.w_s}, local_bound={self.local_bound}"
            )
        if not math.isfinite(self.w_g) or not math.isfinite(self.w_s):
            raise ValueError(
                f"botgrpo.w_g and w_s must be finite (local_bound may be inf); got "
                f"w_g={self.w_g}, w_s={self.w_s}"
            )
        if self.w_s > 0 and self.w_s * self.local_bound >= self.w_g:
            warnings.warn(
                f"botgrpo.w_s * local_bound = {self.w_s * self.local_bound:g} >= w_g = "
                f"{self.w_g:g}: the BoT-GRPO paper requires the global term to dominate "
                "(w_g >> w_s * B); noisy local signals then stall training",
                UserWarning,
                stacklevel=3,
            )
        weights = self.reward_weights
        if weights is not None:
            if not isinstance(weights, list) or len(weights) != len(funcs):
                raise ValueError(
                    f"botgrpo.reward_weights must be a list of one weight per reward function "
                    f"({len(funcs)}), got {weights!r}"
                )
            for weight in weights:
                finite = isinstance(weight, int | float) and math.isfinite(weight)
                if isinstance(weight, bool) or not finite:
                    raise ValueError(
                        f"botgrpo.reward_weights must be finite numbers, got {weight!r}"
                    )
        kwargs = self.reward_func_kwargs
        if not isinstance(kwargs, Mapping) or not all(
            isinstance(v, Mapping) for v in kwargs.values()
        ):
            raise ValueError(
                "botgrpo.reward_func_kwargs must map a reward function's name to its keyword "
                f"arguments, e.g. {{math_step_reward: {{config: {{...}}}}}}; got {kwargs!r}"
            )
        unknown = sorted(set(kwargs) - set(funcs))
        if unknown:
            raise ValueError(
                f"botgrpo.reward_func_kwargs names {', '.join(unknown)}, not in reward_funcs "
                f"({', '.join(funcs)})"
            )

    def check_functions(self) -> None:
        """Import every reward function now (a misspelled name fails at trainer start, not
        in each Ray worker after the model loads); factories are called later, in the workers,
        with the policy's tokenizer."""
        from botgrpo.scoring.loading import resolve_entry

        for entry in self.reward_funcs:
            try:
                resolve_entry(entry)
            except ImportError as err:
                raise ValueError(f"botgrpo.reward_funcs: cannot import {entry!r}: {err}") from None
            except AttributeError as err:
                raise ValueError(f"botgrpo.reward_funcs: {entry!r}: {err}") from None
            except ValueError as err:
                raise ValueError(f"botgrpo.reward_funcs: {err}") from None

    @classmethod
    def from_trainer_config(cls, config: Any) -> VerlRewardConfig:
        """Read the ``botgrpo`` section of verl's whole trainer config (a DictConfig or dict)."""
        section = config.get("botgrpo", None) if hasattr(config, "get") else None
        if section is None:
            raise ValueError(
                "the verl config has no botgrpo section: add the token reward functions, e.g. "
                "+botgrpo.reward_funcs=[math_step_reward] +botgrpo.w_g=3.0 +botgrpo.w_s=0.5"
            )
        return cls.from_mapping(_plain(section))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> VerlRewardConfig:
        """Build from a plain mapping; unknown keys are an error listing the accepted ones."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(
                f"botgrpo section has unknown key(s) {', '.join(unknown)}; accepted: "
                f"{', '.join(known)}"
            )
        values = dict(values)
        funcs = values.get("reward_funcs", [])
        if isinstance(funcs, str):
            values["reward_funcs"] = [funcs]
        elif isinstance(funcs, Sequence):
            values["reward_funcs"] = list(funcs)
        weights = values.get("reward_weights")
        if isinstance(weights, tuple):
            values["reward_weights"] = list(weights)
        return cls(**values)


def _plain(section: Any) -> dict[str, Any]:
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(section):
            return dict(OmegaConf.to_container(section, resolve=True))
    except ImportError:  # pragma: no cover - omegaconf ships with verl
        pass
    return dict(section)
