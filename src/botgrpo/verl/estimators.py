"""botgrpo's advantage estimators with verl's estimator signature.

verl (0.9.x, ``verl.trainer.ppo.ray_trainer.compute_advantage``) calls a registered estimator as::

    advantages_BT, returns_BT = fn(token_level_rewards=[B, T], response_mask=[B, T],
                                   config=<algorithm DictConfig>, index=<uid per row>)

in the Ray TaskRunner, on the whole training batch (so groups are complete: no gather). The
wrappers turn the uids into group ids and call :mod:`botgrpo.core` (the math exists only there);
returns equal advantages, as verl's GRPO does. Options come from ``algorithm.botgrpo``:

    algorithm.botgrpo.eps      added to the std of normalised estimators (default 1e-6)
    algorithm.botgrpo.options  further estimator options, e.g. {} (checked by botgrpo.core)
    algorithm.botgrpo.require_token_rewards  fail unless botgrpo's agent loop manager wrote the
                               rewards (default true; false when your own loop writes per-token rows)

``pure`` and ``grpo_process`` read step structure (and ``pure`` the outcome apart from the token
rewards); verl's estimator call carries neither, so under verl they fail with that explanation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from botgrpo.core import get_advantage_estimator

#: Estimators registered in verl that read the per-token rewards alone.
TOKEN_ESTIMATORS = ("bot", "bot_uniform")
#: Estimators registered in verl that need step structure verl does not pass (they explain so).
STEP_ESTIMATORS = ("pure", "grpo_process")
#: Keys of the ``algorithm.botgrpo`` section.
OPTION_KEYS = ("eps", "options", "require_token_rewards")

DEFAULT_EPS = 1e-6

# Set by botgrpo.verl.agent_loop when its manager (which writes per-token rewards) is created in
# this process: verl builds the agent loop manager and computes advantages in the same TaskRunner.
_HOOK_ACTIVE = {"value": False}


def mark_token_rewards_active() -> None:
    """Record that this process's agent loop writes per-token rewards (called by the manager)."""
    _HOOK_ACTIVE["value"] = True


def group_ids_from_index(index: Sequence[Any], device: torch.device | None = None) -> Tensor:
    """int64 [B] group ids from verl's per-row uids (any hashable; rows sharing a uid form a
    group; a tensor of ids is read by value)."""
    if isinstance(index, Tensor):
        index = index.tolist()
    dense: dict[Any, int] = {}
    ids = [dense.setdefault(_hashable(uid), len(dense)) for uid in list(index)]
    return torch.tensor(ids, dtype=torch.int64, device=device)


def _hashable(uid: Any) -> Any:
    """A uid as a dictionary key by value (numpy and torch scalars as Python numbers)."""
    item = getattr(uid, "item", None)
    return item() if callable(item) and getattr(uid, "ndim", None) == 0 else uid


def read_options(config: Any, name: str) -> tuple[float, dict[str, Any], bool]:
    """(eps, extra options, require_token_rewards) from ``config.botgrpo`` (the algorithm config)."""
    section = _section(config)
    unknown = sorted(set(section) - set(OPTION_KEYS))
    if unknown:
        raise ValueError(
            f"algorithm.botgrpo has unknown key(s) {', '.join(unknown)}; accepted: "
            f"{', '.join(OPTION_KEYS)}"
        )
    eps = section.get("eps", DEFAULT_EPS)
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 <= eps < math.inf:
        raise ValueError(f"algorithm.botgrpo.eps must be a finite number >= 0, got {eps!r}")
    options = section.get("options") or {}
    if not isinstance(options, Mapping):
        raise ValueError(
            f"algorithm.botgrpo.options must be a mapping of {name!r}'s options, got "
            f"{type(options).__name__}"
        )
    accepted = tuple(getattr(get_advantage_estimator(name), "options", ()))
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        where = " (eps is algorithm.botgrpo.eps)" if "eps" in unknown else ""
        raise ValueError(
            f"algorithm.botgrpo.options has unknown option(s) {', '.join(map(str, unknown))} "
            f"for {name!r}{where}; it accepts "
            + (", ".join(accepted) if accepted else "none: leave options out")
        )
    require = section.get("require_token_rewards", True)
    if not isinstance(require, bool):
        raise ValueError(
            f"algorithm.botgrpo.require_token_rewards must be true or false, got {require!r}"
        )
    return float(eps), dict(options), require


def _section(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    section = config.get("botgrpo", None) if hasattr(config, "get") else None
    if section is None:
        return {}
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(section):
            return dict(OmegaConf.to_container(section, resolve=True))
    except ImportError:  # pragma: no cover - omegaconf ships with verl
        pass
    return dict(section)


def make_token_estimator(name: str) -> Callable[..., tuple[Tensor, Tensor]]:
    """verl estimator ``name`` (``bot`` or ``bot_uniform``) calling ``botgrpo.core``."""
    core_fn = get_advantage_estimator(name)

    def estimator(
        token_level_rewards: Tensor,
        response_mask: Tensor,
        config: Any = None,
        index: Sequence[Any] | None = None,
        **unused: Any,
    ) -> tuple[Tensor, Tensor]:
        eps, options, require = read_options(config, name)
        if require and not _HOOK_ACTIVE["value"]:
            raise RuntimeError(_NO_HOOK.format(name=name))
        if index is None:
            raise ValueError(
                f"advantage estimator {name!r} needs group ids: verl passes them as index= "
                "(data.non_tensor_batch['uid']), which this batch lacks"
            )
        group_B = group_ids_from_index(index, token_level_rewards.device)
        adv_BT = core_fn(token_level_rewards, response_mask, group_B, eps=eps, **options)
        adv_BT = adv_BT.to(token_level_rewards.dtype)
        return adv_BT, adv_BT

    estimator.__name__ = estimator.__qualname__ = f"botgrpo_{name}"
    estimator.__doc__ = f"botgrpo.core's {name!r} with verl's estimator signature.\n\n" + (
        core_fn.__doc__ or ""
    )
    return estimator


_NO_HOOK = (
    "advantage estimator {name!r} reads per-token rewards, but this process's agent loop manager "
    "is not botgrpo's, so token_level_rewards holds verl's one score on the last token: set "
    "+actor_rollout_ref.rollout.agent.agent_loop_manager_class="
    "botgrpo.verl.agent_loop.BoTAgentLoopManager (and the +botgrpo reward section), or, if your "
    "own agent loop writes per-token rm_scores, +algorithm.botgrpo.require_token_rewards=false"
)


def make_step_estimator(name: str) -> Callable[..., tuple[Tensor, Tensor]]:
    """verl estimator ``name`` (``pure``, ``grpo_process``) that explains why it cannot run."""

    def estimator(**kwargs: Any) -> tuple[Tensor, Tensor]:
        raise ValueError(
            f"advantage estimator {name!r} reads step structure (which tokens form each step"
            f"{' and the outcome apart from the step rewards' if name == 'pure' else ''}), but "
            "verl calls estimators with token_level_rewards, response_mask and the uids only; "
            f"under verl use bot or bot_uniform, or train {name!r} with botgrpo's TRL trainer "
            f"(botgrpo train --preset {name})"
        )

    estimator.__name__ = estimator.__qualname__ = f"botgrpo_{name}"
    return estimator
