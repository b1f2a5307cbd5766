"""The ``verl.plugins`` entry point: registers botgrpo's estimators in verl's registry.

verl imports every entry point of group ``verl.plugins`` while ``import verl`` runs (unless
``VERL_USE_EXTERNAL_PLUGINS=none`` or a list without ``botgrpo``) and logs a failing plugin only at
DEBUG level. So this module never raises: it records the failure in :data:`LOAD_ERROR`, warns,
and :func:`botgrpo.verl.agent_loop.check_trainer_config` reports it at trainer start.
"""

from __future__ import annotations

import logging

from botgrpo.verl.estimators import (
    STEP_ESTIMATORS,
    TOKEN_ESTIMATORS,
    make_step_estimator,
    make_token_estimator,
)

#: verl releases whose estimator call this plugin was written against.
SUPPORTED_VERL = ("0.9.",)

#: The exception that stopped registration in this process, or None.
LOAD_ERROR: BaseException | None = None

#: Name -> the function registered in verl (set once registration succeeded).
REGISTERED: dict[str, object] = {}

_log = logging.getLogger(__name__)


def register() -> dict[str, object]:
    """Register ``bot``, ``bot_uniform``, ``pure`` and ``grpo_process`` in verl (idempotent)."""
    if REGISTERED:
        return REGISTERED
    import verl
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    version = getattr(verl, "__version__", "unknown")
    if not str(version).startswith(SUPPORTED_VERL):
        raise RuntimeError(
            f"botgrpo's verl plugin supports verl {', '.join(v + 'x' for v in SUPPORTED_VERL)}, "
            f"found verl {version}: install verl==0.9.1 (pip install 'botgrpo[verl]')"
        )
    functions = {name: make_token_estimator(name) for name in TOKEN_ESTIMATORS}
    functions.update({name: make_step_estimator(name) for name in STEP_ESTIMATORS})
    for name, fn in functions.items():
        taken = ADV_ESTIMATOR_REGISTRY.get(name)
        if taken is not None:
            raise RuntimeError(
                f"verl already has an advantage estimator {name!r} ({taken!r}); botgrpo's plugin "
                "cannot register its own under that name"
            )
        register_adv_est(name)(fn)
    REGISTERED.update(functions)
    return REGISTERED


def _load() -> None:
    global LOAD_ERROR
    try:
        register()
    except Exception as err:  # verl would hide it at DEBUG level; keep it for the start check
        LOAD_ERROR = err
        _log.warning("botgrpo's verl plugin did not load: %s", err)


_load()
