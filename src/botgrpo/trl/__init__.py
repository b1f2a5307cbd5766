"""BoT-GRPO inside Hugging Face TRL: a drop-in ``GRPOTrainer`` with token-level advantages.

>>> from botgrpo.trl import BoTGRPOConfig, PRESETS
>>> sorted(PRESETS)
['bot', 'bot_uniform', 'dapo', 'dr_grpo', 'grpo', 'gspo', 'otb', 'ppo', 'pure', 'reinforce_pp']
"""

from botgrpo.trl.config import BoTGRPOConfig
from botgrpo.trl.presets import PRESETS, Preset, get_preset
from botgrpo.trl.trainer import BoTGRPOTrainer

__all__ = ["PRESETS", "BoTGRPOConfig", "BoTGRPOTrainer", "Preset", "get_preset"]
