"""LLM judges: step verdicts for math and a score with worst lines for code, over any
OpenAI-compatible chat-completions endpoint (:mod:`~botgrpo.rewards.judges.judge` holds the two
judges, ``screenshot`` the vision judge of rendered pages; ``config``, ``client``, ``cache``, ``prompts``, ``parsing`` and ``results`` their
settings, HTTP calls with retries, on-disk cache, prompts, answer parsers and result types). A
judge is one verdict source among others: the built-in recipes take it as an argument. This
package imports the standard library, httpx and :mod:`botgrpo.rewards.text` (where lines
end) only, nothing else of botgrpo.

>>> config = JudgeConfig(base_url="http://localhost:8000/v1", model="judge")
>>> StepJudge(config).judge_steps("What is 2 + 2?", []).verdicts   # no steps: nothing to ask
()
"""

from botgrpo.rewards.judges.cache import JudgeCache, cache_key
from botgrpo.rewards.judges.client import JudgeClient, JudgeMetrics, backoff_delay
from botgrpo.rewards.judges.config import JudgeConfig
from botgrpo.rewards.judges.judge import CodeJudge, StepJudge
from botgrpo.rewards.judges.parsing import parse_code_answer, parse_step_answer
from botgrpo.rewards.judges.results import CodeVerdict, StepVerdicts
from botgrpo.rewards.judges.screenshot import ScreenshotJudge

__all__ = [
    "CodeJudge",
    "CodeVerdict",
    "JudgeCache",
    "JudgeClient",
    "JudgeConfig",
    "JudgeMetrics",
    "ScreenshotJudge",
    "StepJudge",
    "StepVerdicts",
    "backoff_delay",
    "cache_key",
    "parse_code_answer",
    "parse_step_answer",
]
