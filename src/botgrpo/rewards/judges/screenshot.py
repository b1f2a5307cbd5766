"""A screenshot judge: a vision model scores a rendered page 0-10 (the paper's optional
screenshot signal for React, arXiv 2610.09804 App. D: score / 10, added to the outcome).

The page image goes as an OpenAI-style ``image_url`` content part holding a base64 PNG data
URL, so any OpenAI-compatible vision endpoint (vLLM, SGLang, OpenAI, ...) serves. The answer is
read like the code judge's (``SCORE: 7`` or JSON ``{"score": 7}``; flagged lines, if any, are
ignored). Failure policy as for every judge: a failed request or an answer without a score
gives score 0 with ``ok`` False, never an exception.

>>> messages = screenshot_messages("A counter button.", b"\\x89PNG...")
>>> [part["type"] for part in messages[1]["content"]]
['text', 'image_url']
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from botgrpo.rewards.judges.judge import _Judge
from botgrpo.rewards.judges.parsing import parse_code_answer
from botgrpo.rewards.judges.results import CodeVerdict

__all__ = ["SCREENSHOT_SYSTEM_PROMPT", "ScreenshotJudge", "screenshot_messages"]

SCREENSHOT_SYSTEM_PROMPT = (
    "You review screenshots of web pages produced by React components. Judge how well the "
    "page fulfils the task: the content and controls it asks for, a sensible layout, legible "
    "text, no broken or empty areas. A blank or nearly blank page scores 0."
)
SCREENSHOT_INSTRUCTIONS = (
    "Answer with one line 'SCORE: <0-10>' (10: the page fully does what the task asks, looks "
    "finished; 0: blank, broken or unrelated)."
)


def screenshot_messages(task: str, png: bytes) -> list[dict[str, Any]]:
    """Chat messages asking for a 0-10 score of the page screenshot ``png`` for ``task``."""
    url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    text = f"Task:\n{task.strip()}\n\nThe page's screenshot follows.\n\n{SCREENSHOT_INSTRUCTIONS}"
    return [
        {"role": "system", "content": SCREENSHOT_SYSTEM_PROMPT},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        },
    ]


class ScreenshotJudge(_Judge):
    """Scores a page screenshot 0-10 with a vision model.

    ``ScreenshotJudge(config).judge_screenshot(task, png) -> CodeVerdict`` (``score`` and
    ``ok``; no lines); ``judge_many`` judges a batch with at most ``config.max_concurrency``
    requests in flight. Pass it as ``screenshot_judge`` to
    :func:`botgrpo.rewards.recipes.react.make_react_code_reward`.
    """

    def judge_screenshot(self, task: str, png: bytes) -> CodeVerdict:
        """The score of the screenshot ``png`` (PNG bytes) of a page written for ``task``."""
        if not isinstance(task, str):
            raise TypeError(
                f"ScreenshotJudge.judge_screenshot: task must be a str, not {type(task).__name__}"
            )
        if not isinstance(png, bytes | bytearray) or not png:
            raise TypeError("ScreenshotJudge.judge_screenshot: png must be the PNG's bytes")
        return self._judge(
            screenshot_messages(task, bytes(png)),
            parse=lambda text: _score_only(parse_code_answer(text, 0)),
            neutral=CodeVerdict.neutral,
        )

    def judge_many(self, tasks: Sequence[str], pngs: Sequence[bytes]) -> list[CodeVerdict]:
        """:meth:`judge_screenshot` for each ``(tasks[i], pngs[i])``, results in input order."""
        return self._map(self.judge_screenshot, tasks, pngs)


def _score_only(verdict: CodeVerdict) -> CodeVerdict:
    """A screenshot has no lines: drop any the judge flagged."""
    if not verdict.ok:
        return verdict
    return CodeVerdict(score=verdict.score, ok=True, raw=verdict.raw, problems=verdict.problems)
