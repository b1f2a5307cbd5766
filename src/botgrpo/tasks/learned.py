"""A task judged by a learned verifier: its step verdicts replaced by a PRM's.

:class:`LearnedVerdicts` wraps a task whose reward is built from its step verdicts and replaces
every step's verdict by the one a step verdict source gives (a
:class:`~botgrpo.rewards.prm.ProcessRewardModel`, or any object with ``judge_many``), read on
the problem's prompt and the text of each step the task found. The outcome, the spans, the
format and the task's metrics are the task's own, so outcome-only methods see exactly the
clean task, and evaluations (which read :func:`botgrpo.tasks.noise.clean_task`) the exact
verdicts. ``botgrpo compare --step-verifier prm:PATH`` trains with it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from botgrpo.tasks.base import Example, Score, Task, VerdictWrapper, check_task, score_all

#: The spec prefix of a PRM folder (token_classification layout, CPU, default threshold).
PRM_PREFIX = "prm:"


class LearnedVerdicts(VerdictWrapper):
    """``task`` with its step verdicts from ``verifier`` (see the module docstring)."""

    def __init__(self, task: Task, verifier: Any, spec: str = "") -> None:
        check_task(task)
        if callable(getattr(task, "reward_function", None)):
            raise ValueError(
                f"task {task.name!r} trains with its own reward function (the code tasks' line "
                "recipes), whose verdicts a step verifier does not reach; use a task whose "
                "reward comes from its step verdicts (chain, columns, jsonl:PATH, ...)"
            )
        if not callable(getattr(verifier, "judge_many", None)):
            raise ValueError("a step verifier needs judge_many(problems, steps_lists)")
        self.clean, self.verifier, self.spec = task, verifier, spec

    def __repr__(self) -> str:
        return f"LearnedVerdicts({self.clean!r}, {self.spec!r})"

    def fingerprint(self) -> str:
        from botgrpo.tasks.base import task_fingerprint

        return f"{task_fingerprint(self.clean)}|{self.spec}"

    def score(self, example: Example, completion: str) -> Score:
        return self.score_batch([example], [completion])[0]

    def score_batch(self, examples: Sequence[Example], completions: Sequence[str]) -> list[Score]:
        scores = score_all(self.clean, examples, completions)
        todo = [i for i, s in enumerate(scores) if s.steps]
        if not todo:
            return scores
        problems = [examples[i].prompt for i in todo]
        steps = [[completions[i][s.start : s.end] for s in scores[i].steps] for i in todo]
        verdicts = self.verifier.judge_many(problems, steps)
        out = list(scores)
        for i, judged in zip(todo, verdicts, strict=True):
            new = tuple(
                dataclasses.replace(s, verdict=int(v))
                for s, v in zip(scores[i].steps, judged, strict=True)
            )
            out[i] = dataclasses.replace(scores[i], steps=new)
        return out


def with_step_verifier(task: Task, spec: str | None) -> Task:
    """``task`` judged by the verifier of ``spec`` (``prm:PATH``: a PRM folder in the
    token_classification layout, on the CPU); ``task`` itself when ``spec`` is empty."""
    if not spec:
        return task
    if not spec.startswith(PRM_PREFIX) or not spec[len(PRM_PREFIX) :]:
        raise ValueError(f"step verifier {spec!r}: write prm:PATH (a PRM folder)")
    from botgrpo.rewards.prm import ProcessRewardModel

    path = spec[len(PRM_PREFIX) :]
    prm = ProcessRewardModel({"model": path, "device": "cpu", "batch_size": 64})
    return LearnedVerdicts(task, prm, spec)


__all__ = ["PRM_PREFIX", "LearnedVerdicts", "with_step_verifier"]
