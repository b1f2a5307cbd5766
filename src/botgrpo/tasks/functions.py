"""Small Python functions from a signature and example calls, judged in the sandbox.

A prompt gives a function's name, signature and 2-3 example calls; a completion is one fenced
``python`` block::

    prompt:      def count_above(nums, t):
                 count_above([3, 8, 1], 2) == 2
                 count_above([5], 9) == 0
    completion:  ```python
                 def count_above(nums, t):
                     n = 0
                     for x in nums:
                         if x > t:
                             n += 1
                     return n
                 ```

Seven function families (``FAMILIES``); parameter names vary per prompt, so a completion must
use the prompt's names. Verdicts come from the Python recipe only
(:func:`~botgrpo.rewards.recipes.python.make_python_code_reward`: pyflakes, the syntax error's
line, the failing test's traceback line, tests in the sandbox), never from the teacher's
record of its slips. A completion **compiles** when it parses and no test raises inside it (a
syntax or runtime error), is **clean** when it compiles with no error-level diagnostic, and is
**solved** when every test passes (the prompt's examples and three more, one of them on the
boundary of the function's comparison). Line verdicts
(``Score.steps``): -1 on the syntax error's line, an error-level diagnostic's line or a
traceback line, else +1.

The default teacher slips with rate 0.3 at each opportunity in kinds the recipe flags: ``colon``
(a ``def``/``for``/``if`` line without its colon: a syntax error on the line), ``name`` (a
name never assigned: pyflakes' undefined name and a NameError on the line), ``off_by_one`` (a
wrong comparison or range bound: a failing test).

``helpers=N`` (2-6) asks for a longer function instead, built from N helpers of distinct
families, each with its loop and branch: 16-48 lines (about 8 per helper) where one slip
among dozens decides whether it runs (:mod:`botgrpo.tasks.programs`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from botgrpo.rewards.calling import resolve_tokenizer, tokenize_completions
from botgrpo.rewards.noise import moved_verdicts
from botgrpo.rewards.text import line_contents
from botgrpo.rewards.types import TokenReward
from botgrpo.tasks.base import Example, Score, StepVerdict, repr_leaving_out
from botgrpo.tasks.code import COMPARE_DEFAULTS, DEMO_DEFAULTS, code_examples, log_code_scores
from botgrpo.tasks.programs import MAX_HELPERS, program_lines, sample_program
from botgrpo.tasks.teacher import Teacher, demonstration_rng

LIST_NAMES = ("nums", "xs", "items", "values", "data")
NUM_NAMES = ("t", "k", "limit", "v", "m")


def _ints(rng: random.Random, n: int) -> list[int]:
    return [rng.randint(0, 9) for _ in range(n)]


# Each family: (signature params, body lines with {a} = list name and {b} = number name, the
# reference function, an input drawer, the off-by-one slip: (right text, wrong text)).
FAMILIES = {
    "count_above": (
        "{a}, {b}",
        [
            "    n = 0",
            "    for x in {a}:",
            "        if x > {b}:",
            "            n += 1",
            "    return n",
        ],
        lambda a, b: sum(x > b for x in a),
        lambda rng: (_ints(rng, rng.randint(0, 5)), rng.randint(0, 9)),
        (" > ", " >= "),
    ),
    "sum_evens": (
        "{a}",
        [
            "    total = 0",
            "    for x in {a}:",
            "        if x % 2 == 0:",
            "            total += x",
            "    return total",
        ],
        lambda a: sum(x for x in a if x % 2 == 0),
        lambda rng: (_ints(rng, rng.randint(0, 5)),),
        (" == 0", " == 1"),
    ),
    "max_item": (
        "{a}",
        [
            "    best = {a}[0]",
            "    for x in {a}:",
            "        if x > best:",
            "            best = x",
            "    return best",
        ],
        max,
        lambda rng: (_ints(rng, rng.randint(1, 5)),),
        (" > best", " < best"),
    ),
    "first_at_least": (
        "{a}, {b}",
        [
            "    for i in range(len({a})):",
            "        if {a}[i] >= {b}:",
            "            return i",
            "    return -1",
        ],
        lambda a, b: next((i for i, x in enumerate(a) if x >= b), -1),
        lambda rng: (_ints(rng, rng.randint(0, 5)), rng.randint(0, 9)),
        (" >= ", " > "),
    ),
    "sum_to": (
        "{b}",
        [
            "    total = 0",
            "    for i in range(1, {b} + 1):",
            "        total += i",
            "    return total",
        ],
        lambda b: b * (b + 1) // 2,
        lambda rng: (rng.randint(0, 12),),
        ("{b} + 1)", "{b})"),
    ),
    "clamp": (
        "x, {b}",
        [
            "    if x < 0:",
            "        return 0",
            "    if x > {b}:",
            "        return {b}",
            "    return x",
        ],
        lambda x, b: min(max(x, 0), b),
        lambda rng: (rng.randint(-5, 15), rng.randint(1, 9)),
        ("x > {b}", "x < {b}"),
    ),
    "count_equal": (
        "{a}, {b}",
        [
            "    n = 0",
            "    for x in {a}:",
            "        if x == {b}:",
            "            n += 1",
            "    return n",
        ],
        lambda a, b: sum(x == b for x in a),
        lambda rng: (_ints(rng, rng.randint(0, 6)), rng.randint(0, 9)),
        (" == ", " != "),
    ),
}

# A case on the boundary of each family's comparison, so a wrong comparison fails a test.
BOUNDARY = {
    "count_above": lambda rng: ([rng.randint(0, 4)] * 2 + [9], None),
    "sum_evens": lambda rng: ([1, 2, 3, 4], None),
    "max_item": lambda rng: ([rng.randint(0, 4), 9, 8], None),
    "first_at_least": lambda rng: ([1, 5, 5, 7], 5),
    "sum_to": lambda rng: (rng.randint(1, 6), None),
    "clamp": lambda rng: (rng.randint(1, 4), rng.randint(6, 9)),  # inside: `x < b` fails
    "count_equal": lambda rng: ([3, 3, 1], 3),
}


def _boundary_args(family: str, rng: random.Random) -> tuple:
    first, second = BOUNDARY[family](rng)
    if family in ("count_above",):
        return (first, first[0])
    if second is None:
        return (first,)
    return (first, second)


@dataclass(frozen=True, repr=False)
class PythonFunctions:
    """Small functions from a signature and examples, verdicts from the Python recipe.

    Attributes:
        examples: example calls shown in the prompt (2-3); three more are tested.
        teacher: who writes the demonstrations: slips ``colon``, ``name``, ``off_by_one``
            (joined with "+") at a rate; the default slips all three at 0.3.
        test_timeout_s: seconds the sandboxed tests of one completion may take.
        helpers: 0 for one small function; 2-6 for a function that returns the results of
            that many helpers, each written out (:mod:`botgrpo.tasks.programs`): 3 helpers
            give 24-26 lines, about 480 characters (2: 16-18, 6: 48).
    """

    examples: int = 2
    teacher: Teacher = field(default_factory=lambda: Teacher("colon+name+off_by_one", 0.3))
    test_timeout_s: float = 5.0
    name: str = "python"
    helpers: int = 0

    SLIPS = ("colon", "name", "off_by_one")
    METRICS = ("compiled", "clean")
    #: What `botgrpo compare` and `botgrpo demo` run on this task (``botgrpo.tasks.code``).
    compare_defaults: ClassVar[dict[str, object]] = COMPARE_DEFAULTS
    demo_defaults: ClassVar[dict[str, object]] = DEMO_DEFAULTS

    # Harness defaults (``botgrpo compare`` uses them unless told otherwise). The small
    # function keeps the recipe its shipped warm start was made with (a short anneal once the
    # check loss alone is flat, padded batches). Functions of helpers train the React pages'
    # recipe, a fixed 2400 steps of 16 packed demonstrations on the cosine schedule: on the
    # pages the recipe for new tasks (loss and token accuracy flat over a fifth of the steps
    # run) stopped at 605 steps with a model that had not learned to copy the prompt
    # (docs/results/code-regime.md). They generate with the static KV cache.

    @property
    def warm_start_stop(self) -> str:
        """How the warm start decides it is done (WarmStartConfig.stop)."""
        return "converged" if not self.helpers else "steps"

    @property
    def max_completion_tokens(self) -> int:
        """The longest completion in tokens (characters, for the tiny model)."""
        return 192 if not self.helpers else 160 + 200 * self.helpers

    @property
    def max_positions(self) -> int:
        """The tiny model's positions: the longest prompt and completion."""
        return 320 if not self.helpers else self.max_completion_tokens + 120 + 60 * self.helpers

    @property
    def warm_start_steps(self) -> int:
        """Supervised warm-start steps (the small function's: at most, it stops when converged;
        a function of helpers': exactly)."""
        return 1500 if not self.helpers else 2400

    @property
    def warm_start_batch_size(self) -> int:
        return 32 if not self.helpers else 16

    @property
    def warm_start_patience(self) -> float:
        return 0.0 if not self.helpers else 0.2

    @property
    def warm_start_watch_accuracy(self) -> bool:
        return bool(self.helpers)

    @property
    def warm_start_packed(self) -> bool:
        return bool(self.helpers)

    @property
    def generation_cache(self) -> str:
        """The KV cache rollouts and evaluations generate with (transformers' names)."""
        return "dynamic" if not self.helpers else "static"

    def __repr__(self) -> str:  # ``helpers`` at 0 left out: the shipped warm start's key
        return repr_leaving_out(self, {"helpers": 0})

    def __post_init__(self) -> None:
        if not 2 <= self.examples <= 3:
            raise ValueError(f"examples must be 2 or 3, got {self.examples}")
        if not (
            isinstance(self.helpers, int)
            and (self.helpers == 0 or 2 <= self.helpers <= MAX_HELPERS)
        ):
            raise ValueError(
                f"helpers must be 0 (one small function) or an integer from 2 to {MAX_HELPERS}, "
                f"got {self.helpers!r}"
            )
        from botgrpo.rewards.sandbox.config import check_timeout  # the sandbox's own cap

        check_timeout("test_timeout_s", self.test_timeout_s)
        self.teacher.check_kind(self.name, self.SLIPS)

    def sample(self, rng: random.Random) -> Example:
        """A family, parameter names and example calls (with their results); or a function
        of ``helpers`` helpers."""
        if self.helpers:
            prompt, tests, meta = sample_program(
                rng, self.helpers, self.examples, FAMILIES, _boundary_args
            )
            return Example(prompt, tests, meta)
        family = rng.choice(sorted(FAMILIES))
        params, _, reference, draw, _ = FAMILIES[family]
        names = {"a": rng.choice(LIST_NAMES), "b": rng.choice(NUM_NAMES)}
        calls = []
        for k in range(self.examples + 3):
            args = _boundary_args(family, rng) if k == self.examples else draw(rng)
            calls.append((", ".join(map(repr, args)), reference(*args)))
        signature = f"def {family}({params.format(**names)}):"
        shown = [f"{family}({args}) == {result!r}" for args, result in calls[: self.examples]]
        prompt = "\n".join([signature, *shown]) + "\n"
        tests = "\n".join(f"assert {family}({args}) == {result!r}" for args, result in calls)
        meta = {"family": family, "names": names, "signature": signature, "test": tests}
        return Example(prompt, tests, meta)

    def demonstration(self, example: Example, rng: random.Random | None = None) -> str:
        """The teacher's function; slips drawn from ``rng`` (default: one stream per prompt)."""
        rng = rng or demonstration_rng(example)
        meta = example.meta
        lines = (
            program_lines(meta, self.teacher, rng, function_lines)
            if "helpers" in meta
            else function_lines(meta, self.teacher, rng)
        )
        return "```python\n" + "\n".join(lines) + "\n```"

    def score(self, example: Example, completion: str) -> Score:
        """Compiled, clean and solved from the Python recipe (one completion)."""
        return self.score_batch([example], [completion])[0]

    def score_batch(self, examples: Sequence[Example], completions: Sequence[str]) -> list[Score]:
        """:meth:`score` of many completions, tests run in parallel in the sandbox (each
        distinct code and test pair once)."""
        return [
            score_python_check(c, block, analysis, tests)
            for c, (block, analysis, tests) in zip(
                completions, python_checks(self, examples, completions), strict=True
            )
        ]

    def reward_function(self, tokenizer, config=None):
        """The Python recipe's token reward with this task's outcome (see :mod:`.code`)."""
        return make_python_task_reward(self, tokenizer, config)


def function_lines(meta, teacher: Teacher, rng: random.Random) -> list[str]:
    """The teacher's function, one string per line, slipping at each opportunity."""
    slip = teacher.slips
    _, body, _, _, (right, wrong) = FAMILIES[meta["family"]]
    names = meta["names"]
    signature = meta["signature"]
    lines = [signature[:-1] if slip("colon", rng) else signature]
    assigned: list[str] = []
    for template in body:
        line = template.format(**names)
        stripped = line.strip()
        if stripped.endswith(":") and slip("colon", rng):
            line = line[:-1]
        if right.format(**names) in line and slip("off_by_one", rng):
            line = line.replace(right.format(**names), wrong.format(**names), 1)
        if stripped.startswith("return ") and assigned and slip("name", rng):
            line = line.replace(f"return {assigned[0]}", "return result", 1)
        if " = " in stripped and not stripped.startswith(("for ", "if ")):
            assigned.append(stripped.split(" = ")[0])
        lines.append(line)
    return lines


def score_python_check(completion: str, block, analysis, tests) -> Score:
    """A :class:`Score` from the Python recipe's parts for one completion."""
    if block is None or analysis is None or analysis.empty:
        return Score(0.0, (), False, None, {"compiled": 0.0, "clean": 0.0})
    bad = set()
    if analysis.syntax is not None:
        bad.add(analysis.syntax.line)
    bad.update(d.line for d in analysis.diagnostics if d.severity in ("fatal", "error"))
    failing = tests.failing_lines if tests is not None else ()
    bad.update(failing)
    compiled = analysis.syntax is None and not failing
    clean = compiled and not any(d.severity in ("fatal", "error") for d in analysis.diagnostics)
    solved = compiled and tests is not None and tests.total > 0 and tests.passed == tests.total
    lines = line_contents(block.code)
    bad = {min(max(int(line), 1), len(lines)) for line in bad}  # as the recipe's penalties
    steps = [
        StepVerdict(block.start + a, block.start + b, -1 if k + 1 in bad else 1)
        for k, (a, b) in enumerate(lines)
    ]
    metrics = {"compiled": float(compiled), "clean": float(clean)}
    return Score(float(solved), tuple(steps), True, None, metrics)


def python_checks(task, examples: Sequence[Example], completions: Sequence[str]):
    """(block, analysis, tests) per completion: each distinct code analysed once, each distinct
    (code, tests) pair run once in the sandbox (None for code that does not parse)."""
    from botgrpo.rewards.code_blocks import PYTHON_LANGUAGES, extract_code_block
    from botgrpo.rewards.recipes.python import TestOutcome
    from botgrpo.rewards.sandbox import run_python_tests_many
    from botgrpo.rewards.verifiers.python_diagnostics import analyse_python

    blocks = [extract_code_block(c, PYTHON_LANGUAGES) for c in completions]
    analyses = {b.code: analyse_python(b.code) for b in blocks if b is not None}
    pairs = sorted(
        {
            (b.code, ex.meta["test"])
            for b, ex in zip(blocks, examples, strict=True)
            if b is not None and not analyses[b.code].empty and analyses[b.code].syntax is None
        }
    )
    results = run_python_tests_many(
        [code for code, _ in pairs],
        [test for _, test in pairs],
        timeout_s=task.test_timeout_s,
    )
    tests = {
        pair: TestOutcome(r.passed, r.total, tuple(r.failing_lines))
        for pair, r in zip(pairs, results, strict=True)
    }
    out = []
    for block, ex in zip(blocks, examples, strict=True):
        if block is None:
            out.append((None, None, None))
            continue
        out.append((block, analyses[block.code], tests.get((block.code, ex.meta["test"]))))
    return out


def make_python_task_reward(task, tokenizer: Any, config=None) -> Callable[..., list[TokenReward]]:
    """The Python recipe's token reward (``config``: a
    :class:`~botgrpo.rewards.recipes.python.PythonRewardConfig` or a mapping of its options):
    G = syntax or lint terms + the share of the task's tests passed."""
    from botgrpo.rewards.configs import config_from_mapping
    from botgrpo.rewards.recipes.python import PythonRewardConfig, score_python_completion

    cfg = config_from_mapping(PythonRewardConfig, config)
    tok = resolve_tokenizer(tokenizer)
    name = f"{task.name}_line_reward"

    def reward(prompts=None, completions: Sequence[Any] = (), completion_ids=None, **columns):
        t0 = time.perf_counter()
        tokens = tokenize_completions(tok, completions, completion_ids, name)
        examples = code_examples(prompts, columns, len(tokens), name)
        t1 = time.perf_counter()
        parts = python_checks(task, examples, [t.text for t in tokens])
        t2 = time.perf_counter()
        out, scores = [], []
        for t, (block, analysis, tests) in zip(tokens, parts, strict=True):
            score = score_python_check(t.text, block, analysis, tests)
            base = score_python_completion(t, cfg, tests=tests, block=block, analysis=analysis)
            raw = [v.verdict for v in score.steps]  # the line verdicts, before the decay
            if "line_moves" in base.info:  # noisy lines: the verdicts the reward gave
                raw = moved_verdicts(raw, base.info["line_moves"])
            info = {**base.info, "solved": score.solved, "raw_verdicts": raw, **score.metrics}
            info["verdict_spans"] = [(v.start, v.end) for v in score.steps]
            out.append(TokenReward(outcome=base.outcome, local=base.local, info=info))
            scores.append(score)
        distinct = len({b.code for b, _, _ in parts if b is not None})
        times = {"extract": t1 - t0, "check": t2 - t1, "score": time.perf_counter() - t2}
        log_code_scores(columns, scores, distinct, times)
        return out

    reward.__name__ = reward.__qualname__ = name
    reward.local_bound = cfg.lines.bound  # type: ignore[attr-defined]
    return reward
