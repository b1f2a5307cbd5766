"""Engine-neutral scoring: reward functions' answers -> per-token rewards of a batch.

Every integration (TRL's trainer, verl's agent loop) turns reward-function answers into token
rewards through this package, so one reward function gives the same r_t everywhere:

- :mod:`botgrpo.scoring.entries`: check one function's answer and split each entry into an outcome
  part and a token part;
- :mod:`botgrpo.scoring.token_batch`: assemble the padded [B, T] rewards and run an estimator;
- :mod:`botgrpo.scoring.score`: call the functions directly (engines without a reward loop);
- :mod:`botgrpo.scoring.loading`: resolve ``reward_funcs`` entries into callables.
"""

from botgrpo.scoring.entries import RewardBatch, split_entries
from botgrpo.scoring.loading import BUILTIN_REWARDS, load_reward_funcs
from botgrpo.scoring.score import (
    RewardSpec,
    ascore_completions,
    score_completions,
    token_batch_from_answers,
)
from botgrpo.scoring.token_batch import TokenBatch, build_token_batch, token_advantages

__all__ = [
    "BUILTIN_REWARDS",
    "RewardBatch",
    "RewardSpec",
    "TokenBatch",
    "ascore_completions",
    "build_token_batch",
    "load_reward_funcs",
    "score_completions",
    "split_entries",
    "token_advantages",
    "token_batch_from_answers",
]
