"""``botgrpo.rewards.react``: the React recipe's public names (see
:mod:`botgrpo.rewards.recipes.react`)."""

from botgrpo.rewards.recipes.react import *  # noqa: F403
from botgrpo.rewards.recipes.react import __all__  # noqa: F401
