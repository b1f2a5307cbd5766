"""Pure-torch math of BoT-GRPO and its baselines: advantage estimators, policy losses,
loss aggregation and KL estimators. Every variant is a registered function with one shared
signature; unknown names fail with the list of valid ones.

>>> import torch
>>> from botgrpo.core import get_advantage_estimator
>>> rewards_BT = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
>>> mask_BT = torch.tensor([[1, 1, 1], [1, 1, 0]])
>>> adv_BT = get_advantage_estimator("bot")(rewards_BT, mask_BT, torch.tensor([0, 0]))
>>> adv_BT.shape
torch.Size([2, 3])
"""

from botgrpo.core import advantages, process, returns  # noqa: F401  (registers the estimators)
from botgrpo.core.aggregation import AGGREGATION_MODES, aggregate_loss
from botgrpo.core.estimators import (
    ADVANTAGE_ESTIMATORS,
    get_advantage_estimator,
    register_advantage_estimator,
)
from botgrpo.core.groups import ZERO_STD_RTOL
from botgrpo.core.kl import KL_ESTIMATORS, kl_penalty
from botgrpo.core.losses import POLICY_LOSSES, get_policy_loss, register_policy_loss

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "AGGREGATION_MODES",
    "KL_ESTIMATORS",
    "POLICY_LOSSES",
    "ZERO_STD_RTOL",
    "aggregate_loss",
    "get_advantage_estimator",
    "get_policy_loss",
    "kl_penalty",
    "register_advantage_estimator",
    "register_policy_loss",
]
