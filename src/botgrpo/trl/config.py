"""``BoTGRPOConfig``: TRL's ``GRPOConfig`` plus the token-reward and method options.

Every option below carries its documentation in its field's ``help`` (shown by ``botgrpo train
--help`` and appended to the class docstring), written once. The knobs a preset sets default to
``None`` ("let the preset decide"); see :mod:`botgrpo.trl.presets`.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from trl import GRPOConfig

from botgrpo.core import ADVANTAGE_ESTIMATORS, get_advantage_estimator
from botgrpo.trl.presets import PRESET_KNOBS, get_preset, resolve_preset
from botgrpo.usage import check_basic_field_types

#: TRL's loss aggregations (GRPOTrainer refuses any other name, but only at the first step).
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")

#: transformers 5 renamed gradient_checkpointing to activation_checkpointing; older releases
#: (verl's environment) have only the old name.
_HAS_ACTIVATION_CHECKPOINTING = "activation_checkpointing" in {f.name for f in fields(GRPOConfig)}


@dataclass
class BoTGRPOConfig(GRPOConfig):
    """Configuration of :class:`~botgrpo.trl.BoTGRPOTrainer` (a ``trl.GRPOConfig``).

    All of TRL's GRPO options keep their meaning. Added or changed options:
    """

    _VALID_DICT_FIELDS: ClassVar[list[str]] = [*GRPOConfig._VALID_DICT_FIELDS, "advantage_options"]

    # ---- method ------------------------------------------------------------------------------
    preset: str | None = field(
        default="bot",
        metadata={
            "help": "Method preset: one of grpo, dr_grpo, dapo, gspo, pure, bot, bot_uniform, reinforce_pp, "
            "otb (optimal token baseline), ppo (with a learned critic). It sets the "
            "advantage estimator and TRL's loss_type, epsilon, epsilon_high, "
            "importance_sampling_level, beta, scale_rewards and dynamic_sampling the way the method's "
            "paper does (table: docs/trainer/presets.md). Options set explicitly win over the preset "
            "(with a warning). None: no preset, TRL's own defaults and the bot estimator."
        },
    )
    advantage_estimator: str | None = field(
        default=None,
        metadata={
            "help": "Core advantage estimator turning token rewards [B, T] into advantages [B, T]: one of "
            f"{', '.join(ADVANTAGE_ESTIMATORS)}. None: the preset's."
        },
    )
    advantage_options: dict[str, Any] | str | None = field(
        default=None,
        metadata={
            "help": "Extra keyword options of the estimator, e.g. {'form': 'strict'} for pure. The grpo "
            "estimator's `scale` comes from scale_rewards unless given here."
        },
    )
    advantage_eps: float = field(
        default=1e-6,
        metadata={
            "help": "eps in A = (r - mu) / (sigma + eps) of the normalised estimators (>= 0)."
        },
    )

    # ---- token rewards (BoT-GRPO Eq. 4: r_t = w_g * G + w_s * S_t + b_format) -------------------
    w_g: float = field(
        default=3.0,
        metadata={
            "help": "Weight of the global outcome G. Scalar rewards (TRL's ordinary reward functions) are "
            "outcomes too: a scalar s enters as w_g * s. Paper value 3.0."
        },
    )
    w_s: float = field(
        default=0.5,
        metadata={
            "help": "Weight of the bounded local signal S_t of token rewards. Paper value 0.5 (robust for "
            "0.1, 0.5, 1.0). The paper's rule: the global term must dominate, w_g >> w_s * local_bound."
        },
    )
    local_bound: float = field(
        default=1.0,
        metadata={
            "help": "Bound B on |S_t|: a token reward whose local signal exceeds it is an error naming the "
            "reward function and completion. Use inf to disable the check."
        },
    )

    # ---- dynamic sampling (DAPO) ---------------------------------------------------------------
    dynamic_sampling: bool | None = field(
        default=None,
        metadata={
            "help": "Drop groups that carry no signal (all advantages 0: for outcome estimators, all outcomes "
            "equal) and refill the batch with groups from freshly generated prompts (DAPO). Each "
            "process must hold whole groups. None: the preset's (on for dapo)."
        },
    )
    dynamic_sampling_max_rounds: int = field(
        default=3,
        metadata={
            "help": "Most generation rounds per batch under dynamic sampling (the first included). If the "
            "batch is still short, the remaining places keep zero-signal groups (advantage 0) and "
            "the shortfall is logged as bot/dynamic_sampling/padded_groups."
        },
    )

    # ---- the learned critic of preset ppo (advantage_estimator gae) ----------------------------
    critic_model: str | None = field(
        default=None,
        metadata={
            "help": "Starting weights of the ppo preset's value model (a token-classification head "
            "with one output on this model's backbone). None: a copy of the policy."
        },
    )
    critic_learning_rate: float | None = field(
        default=None,
        metadata={"help": "The critic's AdamW learning rate. None: learning_rate."},
    )
    critic_warmup_steps: int = field(
        default=0,
        metadata={
            "help": "Optimizer steps during which only the critic learns (the policy's advantages "
            "are 0), so the policy does not follow an untrained value model."
        },
    )
    critic_epochs: int = field(
        default=1, metadata={"help": "Passes of critic updates over each round's rollouts."}
    )
    value_clip: float = field(
        default=0.2,
        metadata={
            "help": "c of PPO's clipped value loss max((V - R)^2, (V_old + clip(V - V_old, -c, c) - "
            "R)^2) / 2; 0: unclipped."
        },
    )

    # ---- TRL knobs set by presets (None = the preset's value) ----------------------------------
    loss_type: str | None = field(
        default=None,
        metadata={
            "help": "TRL loss aggregation: grpo (seq-mean-token-mean, BoT-GRPO Eq. 3), dapo (token-mean), "
            "dr_grpo (constant normaliser), bnpo, cispo, sapo, luspo, vespo. None: the preset's."
        },
    )
    epsilon: float | None = field(
        default=None, metadata={"help": "Lower clip range of the ratio. None: the preset's."}
    )
    epsilon_high: float | None = field(
        default=None,
        metadata={
            "help": "Upper clip range of the ratio (None: the preset's; presets without clip-higher use "
            "epsilon)."
        },
    )
    importance_sampling_level: str | None = field(
        default=None,
        metadata={"help": "Ratio level: token (GRPO) or sequence (GSPO). None: the preset's."},
    )
    beta: float | None = field(
        default=None,
        metadata={
            "help": "KL coefficient to the reference model (0: no reference). None: the preset's."
        },
    )
    scale_rewards: str | None = field(
        default=None,
        metadata={
            "help": "Std used by the grpo estimator: group, batch or none (True/False mean group/none). "
            "None: the preset's."
        },
    )

    # ---- TRL defaults adjusted -----------------------------------------------------------------
    bf16: bool | None = field(
        default=None,
        metadata={
            "help": "bf16 mixed precision. None: on where the accelerator supports it (an Ampere+ "
            "GPU, XPU, NPU), else off, so the same config runs on a CPU (TRL's own default, on "
            "everywhere, fails there)."
        },
    )
    gradient_checkpointing: bool | None = field(
        default=None,
        metadata={
            "help": "Deprecated alias of activation_checkpointing (transformers 5); set that "
            "instead."
        },
    )
    activation_checkpointing: bool | None = field(
        default=None,
        metadata={
            "help": "Recompute activations in the backward pass to save memory (~20%% slower). "
            "None: on (TRL's default) unless the deprecated gradient_checkpointing is given. "
            "Turn it off for small models."
        },
    )

    def __post_init__(self) -> None:
        if isinstance(self.scale_rewards, bool):
            self.scale_rewards = "group" if self.scale_rewards else "none"
        check_basic_field_types(self)  # e.g. a YAML list or 1.5 where an int belongs
        if self.activation_checkpointing is None and self.gradient_checkpointing is None:
            self.activation_checkpointing = True  # TRL's default, without the deprecated name
        if not _HAS_ACTIVATION_CHECKPOINTING and self.gradient_checkpointing is None:
            self.gradient_checkpointing = bool(self.activation_checkpointing)
        if self.bf16 is None and not self.fp16:
            self.bf16 = not self.use_cpu and _bf16_accelerator()
        if isinstance(self.scale_rewards, bool):
            self.scale_rewards = "group" if self.scale_rewards else "none"
        if self.preset is not None and str(self.preset).lower() == "none":
            self.preset = None
        given = {knob: getattr(self, knob) for knob in PRESET_KNOBS}
        for knob, value in resolve_preset(self.preset, given).items():
            setattr(self, knob, value)
        if isinstance(self.advantage_options, str):
            self.advantage_options = _parse_mapping("advantage_options", self.advantage_options)
        self._validate()
        super().__post_init__()

    def _validate(self) -> None:
        estimator = get_advantage_estimator(self.advantage_estimator)
        options = self.advantage_options or {}
        if not isinstance(options, dict):
            raise ValueError(f"advantage_options must be a mapping, got {options!r}")
        unknown = sorted(set(options) - set(getattr(estimator, "options", ())))
        if unknown:
            raise ValueError(
                f"advantage_options {unknown} are not options of estimator "
                f"{self.advantage_estimator!r}; it accepts: "
                f"{', '.join(getattr(estimator, 'options', ())) or 'none'}"
            )
        tensors = sorted(k for k in options if k.endswith(("_BT", "_B")))
        if tensors:
            raise ValueError(
                f"advantage_options {tensors} are per-batch tensors, not settings; leave them "
                "out (the trainer supplies the ones it computes each round)"
            )
        _check_option_values(estimator, self.advantage_estimator, options)
        if self.critic_learning_rate is not None:
            _check_number("critic_learning_rate", self.critic_learning_rate, positive=True)
        _check_number("value_clip", self.value_clip, positive=False)
        for name in ("critic_warmup_steps", "critic_epochs"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or value < (name == "critic_epochs")
            ):
                raise ValueError(
                    f"{name} must be a whole number >= {int(name == 'critic_epochs')}, got {value!r}"
                )
        _check_number("w_g", self.w_g, positive=True)
        _check_number("w_s", self.w_s, positive=False)
        _check_number("advantage_eps", self.advantage_eps, positive=False)
        if not (self.local_bound > 0):
            raise ValueError(f"local_bound must be > 0 (inf disables), got {self.local_bound}")
        if self.w_s * self.local_bound >= self.w_g and self.w_s > 0:
            warnings.warn(
                f"w_s * local_bound = {self.w_s * self.local_bound:g} >= w_g = {self.w_g:g}: the "
                "BoT-GRPO paper requires the global term to dominate (w_g >> w_s * B); noisy "
                "local signals then stall training",
                UserWarning,
                stacklevel=3,
            )
        for name in ("learning_rate", "temperature"):
            _check_number(name, getattr(self, name), positive=True)
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_completion_length is not None and self.max_completion_length < 1:
            raise ValueError(
                f"max_completion_length must be >= 1 token, got {self.max_completion_length}"
            )
        if self.loss_type == "dr_grpo" and self.max_completion_length is None:
            raise ValueError(
                "loss_type dr_grpo divides by max_completion_length, which is None; set "
                "max_completion_length or another loss_type"
            )
        if self.min_p is not None and not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must be in [0, 1], got {self.min_p}")
        scheduler = getattr(self.lr_scheduler_type, "value", self.lr_scheduler_type)
        scheduler_kwargs = self.lr_scheduler_kwargs or {}
        if isinstance(scheduler_kwargs, str):  # a flag's JSON, parsed by transformers later
            try:
                scheduler_kwargs = json.loads(scheduler_kwargs)
            except ValueError:
                scheduler_kwargs = {}
        if scheduler in ("cosine_with_min_lr", "cosine_warmup_with_min_lr") and not (
            isinstance(scheduler_kwargs, dict)
            and ("min_lr" in scheduler_kwargs or "min_lr_rate" in scheduler_kwargs)
        ):
            raise ValueError(
                f"lr_scheduler_type {scheduler} needs min_lr or min_lr_rate in "
                "lr_scheduler_kwargs, e.g. --lr_scheduler_kwargs '{\"min_lr_rate\": 0.1}'"
            )
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"seed must be in [0, 2**32 - 1], got {self.seed}")
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError(
                f"max_steps must be >= 1 (or -1 to train num_train_epochs), got {self.max_steps}"
            )
        if self.max_steps == -1 and not self.num_train_epochs > 0:
            raise ValueError(
                f"num_train_epochs must be > 0 when max_steps is -1, got {self.num_train_epochs}"
            )
        for name in (
            "per_device_train_batch_size",
            "per_device_eval_batch_size",
            "gradient_accumulation_steps",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("beta", "epsilon", "epsilon_high"):
            value = getattr(self, name)
            if value is not None:
                _check_number(name, value, positive=False)
        if self.importance_sampling_level not in (None, "token", "sequence"):
            raise ValueError(
                f"importance_sampling_level {self.importance_sampling_level!r} is not token or "
                "sequence"
            )
        if self.scale_rewards not in (None, "group", "batch", "none"):
            raise ValueError(
                f"scale_rewards {self.scale_rewards!r} is not one of group, batch, none"
            )
        for weight in self.reward_weights or ():
            if not (isinstance(weight, int | float) and math.isfinite(weight)):
                raise ValueError(f"reward_weights must be finite numbers, got {weight!r}")
        if self.num_iterations < 1:
            raise ValueError(f"num_iterations must be >= 1, got {self.num_iterations}")
        if self.steps_per_generation is not None and self.steps_per_generation < 1:
            raise ValueError(f"steps_per_generation must be >= 1, got {self.steps_per_generation}")
        _check_number("repetition_penalty", self.repetition_penalty, positive=True)
        if not 0 <= self.top_entropy_quantile <= 1:
            raise ValueError(
                f"top_entropy_quantile must be in [0, 1], got {self.top_entropy_quantile}"
            )
        if self.top_k is not None and self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 = off), got {self.top_k}")
        if self.loss_type is not None and self.loss_type not in LOSS_TYPES:
            raise ValueError(f"loss_type {self.loss_type!r} is not one of {', '.join(LOSS_TYPES)}")
        if self.num_generations is not None and self.num_generations < 2:
            raise ValueError(
                f"num_generations must be >= 2 (group statistics need two rollouts), got "
                f"{self.num_generations}"
            )
        if self.dynamic_sampling and self.advantage_estimator in ("otb", "reinforce_pp", "gae"):
            raise ValueError(
                f"dynamic_sampling does not combine with advantage estimator "
                f"{self.advantage_estimator!r}: it keeps groups with a nonzero advantage, and a "
                "return estimator's baseline (per position or per batch) leaves one even when a "
                "group's rewards are all equal, so nothing would be dropped"
            )
        if self.dynamic_sampling_max_rounds < 1:
            raise ValueError(
                f"dynamic_sampling_max_rounds must be >= 1, got {self.dynamic_sampling_max_rounds}"
            )
        if self.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError(
                "BoTGRPOConfig supports multi_objective_aggregation='sum_then_normalize' only: "
                "token rewards of all reward functions are summed (with reward_weights) before "
                "the advantage estimator normalises them"
            )

    @property
    def preset_row(self):
        """The :class:`~botgrpo.trl.presets.Preset` in use, or None without a preset."""
        return None if self.preset is None else get_preset(self.preset)


def _parse_mapping(name: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(
            f'{name} must be a JSON object, e.g. \'{{"form": "strict"}}\': {err}'
        ) from err
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object, got {text!r}")
    return value


def _check_option_values(estimator, name: str, options: dict[str, Any]) -> None:
    """Run the estimator once on a two-rollout dummy group with ``options``, so an option value
    it refuses (e.g. scale='x') fails now, not at the first training step."""
    import torch

    if not options:
        return
    dummy: dict[str, Any] = {}
    accepted = set(getattr(estimator, "options", ()))
    if "steps_BT" in accepted and "steps_BT" not in options:
        dummy["steps_BT"] = torch.zeros(2, 2, dtype=torch.long)
    if "outcome_B" in accepted and "outcome_B" not in options:
        dummy["outcome_B"] = torch.tensor([0.0, 1.0])
    for key in ("values_BT", "logp_BT", "sum_pi_sq_BT"):  # what the trainer supplies itself
        if key in accepted and key not in options:
            dummy[key] = torch.full((2, 2), 0.5) if key != "logp_BT" else torch.full((2, 2), -0.5)
    try:
        estimator(
            torch.tensor([[0.0, 1.0], [1.0, 0.0]]),
            torch.ones(2, 2, dtype=torch.bool),
            torch.zeros(2, dtype=torch.long),
            **dummy,
            **options,
        )
    except ValueError as err:
        raise ValueError(f"advantage_options for {name!r}: {err}") from None


def _bf16_accelerator() -> bool:
    """Whether an accelerator that runs bf16 is present (transformers' own test)."""
    from transformers.utils import is_torch_bf16_gpu_available, is_torch_xla_available

    return bool(is_torch_bf16_gpu_available() or is_torch_xla_available())


def _check_number(name: str, value: float, *, positive: bool) -> None:
    ok = isinstance(value, int | float) and math.isfinite(value)
    ok = ok and (value > 0 if positive else value >= 0)
    if not ok:
        raise ValueError(
            f"{name} must be a finite number {'> 0' if positive else '>= 0'}, got {value!r}"
        )


def _document_options(cls: type) -> None:
    own = {"preset", "advantage_estimator", "advantage_options", "advantage_eps", "w_g", "w_s"}
    own |= {"local_bound", "dynamic_sampling", "dynamic_sampling_max_rounds", *PRESET_KNOBS}
    own |= {"bf16", "activation_checkpointing"}
    lines = [
        f"        {f.name}: {f.metadata['help']}"
        for f in fields(cls)
        if f.name in own and "help" in f.metadata
    ]
    cls.__doc__ = (cls.__doc__ or "") + "\n" + "\n".join(lines) + "\n"


_document_options(BoTGRPOConfig)

__all__ = ["BoTGRPOConfig"]
