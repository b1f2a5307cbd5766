"""React code rewards (the paper's headline recipe) from a real toolchain.

- :mod:`.checks`: :func:`check_components` (compile, lint, render verdicts with lines) and
  :func:`screenshot_components` (headless Chromium);
- :mod:`.worker`: the sandboxed, long-lived Node workers behind them (``node/``);
- :mod:`.recipe`: :class:`ReactRewardConfig` and :func:`make_react_code_reward`, the TRL reward
  function (line penalties onto tokens, Eqs. 6-7; GRPO baseline with ``line_penalties=False``).

See docs/rewards/react.md.
"""

from botgrpo.rewards.recipes.react.checks import (
    ReactCheck,
    ReactDiagnostic,
    Screenshot,
    check_components,
    default_pool,
    screenshot_components,
)
from botgrpo.rewards.recipes.react.recipe import (
    REACT_LANGUAGES,
    ReactRewardConfig,
    extract_react_block,
    make_react_code_reward,
    score_react_completion,
)
from botgrpo.rewards.recipes.react.worker import (
    NodeWorker,
    WorkerError,
    WorkerPool,
    WorkerStartError,
)

__all__ = [
    "REACT_LANGUAGES",
    "NodeWorker",
    "ReactCheck",
    "ReactDiagnostic",
    "ReactRewardConfig",
    "Screenshot",
    "WorkerError",
    "WorkerPool",
    "WorkerStartError",
    "check_components",
    "default_pool",
    "extract_react_block",
    "make_react_code_reward",
    "score_react_completion",
    "screenshot_components",
]
