"""Judges from plain options, so a YAML recipe or ``reward_func_kwargs`` can name one.

A recipe's judge argument (``step_verifier``, ``code_judge``, ``screenshot_judge``) may be a
mapping of :class:`~botgrpo.rewards.judges.config.JudgeConfig` fields instead of a judge
object; options it does not give are read from the ``BOTGRPO_JUDGE_*`` environment (the API key
belongs there, not in a config file):

>>> judge = as_judge({"base_url": "http://127.0.0.1:8000/v1", "model": "m"}, "code", "code_judge")
>>> type(judge).__name__, judge.config.model
('CodeJudge', 'm')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from botgrpo.rewards.judges.config import JudgeConfig
from botgrpo.rewards.judges.judge import CodeJudge, StepJudge
from botgrpo.rewards.judges.screenshot import ScreenshotJudge

#: What each kind of judge argument builds.
JUDGE_KINDS = {"step": StepJudge, "code": CodeJudge, "screenshot": ScreenshotJudge}

#: The recipes' judge arguments and the kind of judge each takes.
JUDGE_ARGUMENTS = {"step_verifier": "step", "code_judge": "code", "screenshot_judge": "screenshot"}


def judge_config(options: Mapping[str, Any], where: str) -> JudgeConfig:
    """The JudgeConfig ``options`` describe (the rest from ``BOTGRPO_JUDGE_*``); ``where`` names
    the argument in the one-line error a bad option gets."""
    fields = sorted(f.name for f in dataclasses.fields(JudgeConfig))
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise ValueError(
            f"{where}: unknown judge option {', '.join(map(repr, unknown))}; "
            f"a judge takes {', '.join(fields)}"
        )
    try:
        return JudgeConfig.from_env(**options)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: {err}") from None


def as_judge(value: Any, kind: str, where: str) -> Any:
    """``value`` itself, or the ``kind`` judge ("step", "code" or "screenshot") its options
    describe when it is a mapping."""
    if isinstance(value, Mapping):
        return JUDGE_KINDS[kind](judge_config(value, where))
    return value
