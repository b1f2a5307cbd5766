"""Method presets: each sets TRL's own knobs (and the advantage estimator) the way its paper does.

A preset is a plain table row. :func:`resolve_preset` fills every knob the user left unset
(``None``) from the row; a knob the user set explicitly and that differs from the row wins, with
a warning naming the knob, the preset's value and the value that wins. The paper-to-config table
with sources lives in ``docs/trainer/presets.md``.

Every preset reads the same reward information (the comparison protocol of the BoT-GRPO paper):
outcome estimators (grpo, dr_grpo, rloo) see the outcome term, bot/bot_uniform see the token
rewards, pure sees step rewards plus the outcome.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Preset:
    """One method's settings of TRL's knobs and of the advantage estimator.

    Attributes:
        advantage_estimator: the core estimator (``botgrpo.core.ADVANTAGE_ESTIMATORS``).
        loss_type: TRL's loss aggregation: "grpo" = seq-mean-token-mean, "dapo" = token-mean
            over the global batch, "dr_grpo" = token sum / (B * max_completion_length).
        epsilon: lower clip range of the importance ratio.
        epsilon_high: upper clip range; None = same as ``epsilon``.
        importance_sampling_level: "token" (PPO/GRPO ratios) or "sequence" (GSPO ratios).
        beta: KL coefficient to the reference policy (0 = no reference model).
        scale_rewards: "group", "batch" or "none": the std used by the grpo estimator.
        dynamic_sampling: drop zero-signal groups and refill the batch (DAPO).
        source: the paper the row follows.
    """

    advantage_estimator: str
    loss_type: str
    epsilon: float
    epsilon_high: float | None
    importance_sampling_level: str
    beta: float
    scale_rewards: str
    dynamic_sampling: bool
    source: str


#: Knobs a preset sets: the config fields resolved by :func:`resolve_preset`.
PRESET_KNOBS: tuple[str, ...] = tuple(f.name for f in fields(Preset) if f.name != "source")

_GRPO = Preset(
    advantage_estimator="grpo",
    loss_type="grpo",
    epsilon=0.2,
    epsilon_high=None,
    importance_sampling_level="token",
    beta=0.04,
    scale_rewards="group",
    dynamic_sampling=False,
    source="DeepSeekMath, arXiv 2402.03300",
)

PRESETS: dict[str, Preset] = {
    "grpo": _GRPO,
    "dr_grpo": Preset(
        advantage_estimator="dr_grpo",
        loss_type="dr_grpo",
        epsilon=0.2,
        epsilon_high=None,
        importance_sampling_level="token",
        beta=0.0,
        scale_rewards="none",
        dynamic_sampling=False,
        source="Dr. GRPO, arXiv 2503.20783",
    ),
    "dapo": Preset(
        advantage_estimator="grpo",
        loss_type="dapo",
        epsilon=0.2,
        epsilon_high=0.28,
        importance_sampling_level="token",
        beta=0.0,
        scale_rewards="group",
        dynamic_sampling=True,
        source="DAPO, arXiv 2503.14476",
    ),
    "gspo": Preset(
        advantage_estimator="grpo",
        loss_type="grpo",
        epsilon=3e-4,
        epsilon_high=4e-4,
        importance_sampling_level="sequence",
        beta=0.0,
        scale_rewards="group",
        dynamic_sampling=False,
        source="GSPO, arXiv 2507.18071",
    ),
    "pure": Preset(
        advantage_estimator="pure",
        loss_type="grpo",
        epsilon=0.2,
        epsilon_high=None,
        importance_sampling_level="token",
        beta=0.001,
        scale_rewards="group",
        dynamic_sampling=False,
        source="PURE, arXiv 2504.15275 (github.com/CJReinforce/PURE)",
    ),
    "bot": Preset(
        advantage_estimator="bot",
        loss_type="grpo",
        epsilon=0.2,
        epsilon_high=None,
        importance_sampling_level="token",
        beta=0.04,
        scale_rewards="group",
        dynamic_sampling=False,
        source="BoT-GRPO, arXiv 2610.09804 (GRPO unchanged but for the advantage)",
    ),
    "reinforce_pp": Preset(
        advantage_estimator="reinforce_pp",
        loss_type="dapo",
        epsilon=0.2,
        epsilon_high=None,
        importance_sampling_level="token",
        beta=0.01,
        scale_rewards="batch",
        dynamic_sampling=False,
        source="REINFORCE++, arXiv 2501.03262 (KL in the loss, as GRPO's, not in the reward)",
    ),
    "otb": Preset(
        advantage_estimator="otb",
        loss_type="dapo",
        epsilon=0.2,
        epsilon_high=None,
        importance_sampling_level="token",
        beta=0.0,
        scale_rewards="none",
        dynamic_sampling=False,
        source="OTB, arXiv 2602.07078 (verl's examples/otb_trainer: token-mean loss, no KL loss)",
    ),
    "ppo": Preset(
        advantage_estimator="gae",
        loss_type="dapo",
        epsilon=0.2,
        epsilon_high=None,
        importance_sampling_level="token",
        beta=0.04,
        scale_rewards="batch",
        dynamic_sampling=False,
        source="PPO with a learned critic and GAE (arXiv 1707.06347, 1506.02438); a baseline",
    ),
    "bot_uniform": Preset(
        advantage_estimator="bot_uniform",
        loss_type="grpo",
        epsilon=0.2,
        epsilon_high=None,
        importance_sampling_level="token",
        beta=0.04,
        scale_rewards="group",
        dynamic_sampling=False,
        source="this project: BoT without the 1/L_k weights (ablation)",
    ),
}

#: TRL's own defaults for the knobs, used when ``preset`` is None.
TRL_DEFAULTS: dict[str, Any] = {
    "advantage_estimator": "bot",
    "loss_type": "dapo",
    "epsilon": 0.2,
    "epsilon_high": None,
    "importance_sampling_level": "token",
    "beta": 0.0,
    "scale_rewards": "group",
    "dynamic_sampling": False,
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; ValueError listing the valid names otherwise."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown preset {name!r}; valid presets: {', '.join(PRESETS)}") from None


def resolve_preset(preset: str | None, given: Mapping[str, Any]) -> dict[str, Any]:
    """Values of every knob in :data:`PRESET_KNOBS`: the explicit ones, else the preset's.

    ``given`` maps knob names to the values the user set, ``None`` meaning "not set". With
    ``preset=None`` unset knobs take TRL's defaults. An explicit value that differs from the
    preset's wins and triggers a ``UserWarning`` naming both.

    >>> resolve_preset("dapo", {"beta": None, "epsilon_high": None})["epsilon_high"]
    0.28
    """
    row = TRL_DEFAULTS if preset is None else vars(get_preset(preset))
    resolved: dict[str, Any] = {}
    estimator = given.get("advantage_estimator") or row["advantage_estimator"]
    for knob in PRESET_KNOBS:
        value = given.get(knob)
        if value is None:
            resolved[knob] = row[knob]
            continue
        if knob == "scale_rewards" and value != row[knob] and not _reads_scale(estimator):
            warnings.warn(
                f"scale_rewards={value!r} has no effect: advantage estimator {estimator!r} takes "
                "no scale (its advantages are normalised as docs/trainer/presets.md says); leave "
                "scale_rewards out, or use the grpo estimator, which reads it",
                UserWarning,
                stacklevel=3,
            )
        elif preset is not None and value != row[knob]:
            warnings.warn(
                f"preset {preset!r} sets {knob}={row[knob]!r} but {knob}={value!r} was given "
                f"explicitly; the explicit value {value!r} wins",
                UserWarning,
                stacklevel=3,
            )
        resolved[knob] = value
    return resolved


def _reads_scale(estimator: str) -> bool:
    """Whether advantage estimator ``estimator`` has a ``scale`` option (scale_rewards)."""
    from botgrpo.core import get_advantage_estimator

    try:
        return "scale" in getattr(get_advantage_estimator(estimator), "options", ())
    except (KeyError, ValueError):
        return True  # an unknown name is refused by the config's own check
