"""botgrpo: token-level process-reward RL for language models.

BoT-GRPO (arXiv 2610.09804) pools every token of a prompt's K rollouts into one bag, weights
each token by 1/L_k and normalises token rewards inside that bag. The math lives in
:mod:`botgrpo.core`; token rewards in :mod:`botgrpo.rewards`; the TRL trainer in
:mod:`botgrpo.trl`.
"""

__version__ = "0.1.0"
