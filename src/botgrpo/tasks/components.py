"""React components from a short spec, judged by the real toolchain (the paper's headline task).

A prompt names a component and its parts; a completion is one fenced ``jsx`` block::

    prompt:      Component Cart: text "Fresh today"; list Apple, Fig; counter "Add"
    completion:  ```jsx
                 export default function Cart() {
                   const [n, setN] = React.useState(0);
                   return <div className="box">
                     <h1>Cart</h1>
                     <p>Fresh today</p>
                     <ul>{["Apple", "Fig"].map((x) => <li key={x}>{x}</li>)}</ul>
                     <button onClick={() => setN(n + 1)}>Add {n}</button>
                   </div>;
                 }
                 ```

Every prompt has a title and 2-4 more parts in this order: ``text``, ``list`` (2-3 items),
``counter`` (a button that counts), ``toggle`` (a button that shows a text), ``note`` (a second
text), so completions run from about 150 to 430 characters.

Verdicts come from the React recipe only (:func:`~botgrpo.rewards.recipes.react.check_components`
and the line penalties of Eqs. 6-7), never from the teacher's record of its slips: a completion
**compiles** when Babel and esbuild accept it and it renders without a runtime error, is
**clean** when it compiles with no error-level diagnostic, and is **solved** when it compiles,
the page is not blank and its visible text shows the title, every text and every item, in
order. The line verdicts (``Score.steps``, one per code line) are -1 on a line with an
error-level diagnostic, else +1.

The default teacher is flawed (:mod:`botgrpo.tasks.teacher`): at each opportunity it slips with
rate 0.3 in kinds the toolchain flags on the line: ``tag`` (``<h1>Cart</h2>``, a compile
error), ``undefined`` (a list item naming ``item`` for ``x``: a lint error and a render
ReferenceError), ``attr`` (``class=`` / ``onclick=``: a lint error), ``key`` (a list item
without ``key``) and ``hook`` (a state hook under a condition).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from botgrpo.rewards.calling import resolve_tokenizer, tokenize_completions
from botgrpo.rewards.text import JS_BREAK, line_contents
from botgrpo.rewards.types import TokenReward
from botgrpo.tasks.base import Example, Score, StepVerdict
from botgrpo.tasks.code import (
    COMPARE_DEFAULTS,
    REACT_DEMO_DEFAULTS,
    code_examples,
    log_code_scores,
)
from botgrpo.tasks.teacher import Teacher, demonstration_rng


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


WORDS = _words(
    "apple pear fig plum lime kiwi date grape melon peach lemon mango "
    "red blue green gold pink gray cat dog owl fox bee ant yak emu"
)
TITLES = _words("Cart Shop Menu Notes Tasks Zoo Farm Garden Store Pantry Closet Board Deck List")
PHRASES = (
    "Fresh today",
    "All in stock",
    "Open late",
    "New this week",
    "Hand picked",
    "Made here",
    "Top picks",
    "Best sellers",
)
LABELS = ("Add", "More", "Next", "Vote", "Like", "Show", "Open", "Tap")
PARTS = ("text", "list", "counter", "toggle", "note")


@dataclass(frozen=True)
class ReactComponents:
    """Small React components from a spec, verdicts from the React recipe.

    Attributes:
        min_parts: fewest parts besides the title (1-5).
        max_parts: most parts besides the title (min_parts-5; 4 keeps completions within
            about 430 characters).
        teacher: who writes the demonstrations: slips ``tag``, ``attr``, ``key``, ``hook``,
            ``undefined`` (joined with "+") at a rate; the default slips ``tag+undefined+attr``
            at 0.3; ``Teacher()`` for perfect ones.
        render_timeout_s: seconds each render may take.
        solved_weight: added to the recipe's G in the training reward when the page shows
            what the prompt asked for.
    """

    min_parts: int = 2
    max_parts: int = 4
    teacher: Teacher = field(default_factory=lambda: Teacher("tag+undefined+attr", 0.3))
    render_timeout_s: float = 2.0
    solved_weight: float = 1.0
    name: str = "react"

    SLIPS = ("tag", "attr", "key", "hook", "undefined")
    METRICS = ("compiled", "clean")
    #: Harness defaults (``botgrpo compare`` uses them unless told otherwise): the longest
    #: completion in tokens, the tiny model's positions, supervised warm-start steps (at most:
    #: it stops when its check loss is flat).
    max_completion_tokens = 448
    max_positions = 640
    warm_start_steps = 1500
    warm_start_stop = "converged"
    #: The shipped warm start's recipe: a short anneal once the check loss alone is flat, on
    #: padded batches (other values train a new warm start).
    warm_start_patience = 0.0
    warm_start_watch_accuracy = False
    warm_start_packed = False
    #: What `botgrpo compare` and `botgrpo demo` run on this task (``botgrpo.tasks.code``).
    compare_defaults: ClassVar[dict[str, object]] = COMPARE_DEFAULTS
    demo_defaults: ClassVar[dict[str, object]] = REACT_DEMO_DEFAULTS

    def __post_init__(self) -> None:
        if not 1 <= self.min_parts <= self.max_parts <= len(PARTS):
            raise ValueError(
                f"need 1 <= min_parts <= max_parts <= {len(PARTS)}, got "
                f"{self.min_parts}, {self.max_parts}"
            )
        if not self.render_timeout_s > 0:
            raise ValueError(f"render_timeout_s must be > 0, got {self.render_timeout_s}")
        if not math.isfinite(self.solved_weight):
            raise ValueError(f"solved_weight must be finite, got {self.solved_weight}")
        self.teacher.check_kind(self.name, self.SLIPS)

    def sample(self, rng: random.Random) -> Example:
        """A component spec: a title and 2-5 parts in a fixed order."""
        title = rng.choice(TITLES)
        chosen = set(rng.sample(PARTS, rng.randint(self.min_parts, self.max_parts)))
        spec: dict[str, object] = {"title": title}
        bits = [title]
        for part in PARTS:
            if part not in chosen:
                continue
            if part in ("text", "note"):
                spec[part] = rng.choice(PHRASES)
                bits.append(f'{part} "{spec[part]}"')
            elif part == "list":
                spec[part] = [w.capitalize() for w in rng.sample(WORDS, rng.randint(2, 3))]
                bits.append("list " + ", ".join(spec[part]))  # type: ignore[arg-type]
            elif part == "counter":
                spec[part] = rng.choice(LABELS)
                bits.append(f'counter "{spec[part]}"')
            else:
                spec[part] = [rng.choice(LABELS), rng.choice(PHRASES)]
                bits.append(f'toggle "{spec[part][0]}" shows "{spec[part][1]}"')  # type: ignore[index]
        prompt = f"Component {title}: " + "; ".join(bits[1:]) + "\n"
        return Example(prompt, " | ".join(expected_text(spec)), {"spec": spec})

    def demonstration(self, example: Example, rng: random.Random | None = None) -> str:
        """The teacher's component; slips drawn from ``rng`` (default: one stream per prompt)."""
        rng = rng or demonstration_rng(example)
        return (
            "```jsx\n"
            + "\n".join(component_lines(example.meta["spec"], self.teacher, rng))
            + "\n```"
        )

    def score(self, example: Example, completion: str) -> Score:
        """Compiled, clean and solved from the React toolchain (one completion)."""
        return self.score_batch([example], [completion])[0]

    def score_batch(self, examples: Sequence[Example], completions: Sequence[str]) -> list[Score]:
        """:meth:`score` of many completions, checked at once in the worker pool (each
        distinct code once)."""
        from botgrpo.rewards.recipes.react import check_components
        from botgrpo.rewards.recipes.react.recipe import extract_react_block

        blocks = [extract_react_block(c) for c in completions]
        codes = sorted({b.code for b in blocks if b is not None and b.code.strip()})
        checks = dict(
            zip(codes, check_components(codes, timeout_s=self.render_timeout_s), strict=True)
        )
        out = []
        for ex, completion, block in zip(examples, completions, blocks, strict=True):
            check = checks.get(block.code) if block is not None else None
            out.append(score_check(ex, completion, block, check))
        return out

    def reward_function(self, tokenizer, config=None):
        """The React recipe's token reward with this task's outcome (see :mod:`.code`)."""
        return make_react_task_reward(self, tokenizer, config)


def expected_text(spec) -> list[str]:
    """The texts a solved page shows, in order: the title, texts, items, counter and toggle labels."""
    out = [spec["title"]]
    for part in PARTS:
        if part not in spec:
            continue
        value = spec[part]
        if part == "list":
            out.extend(value)
        elif part == "toggle":
            out.append(value[0])
        else:
            out.append(value)
    return out


def shows(text: str | None, spec) -> bool:
    """Whether a page's visible text shows every expected text of ``spec``, in order."""
    if not text:
        return False
    at = 0
    for piece in expected_text(spec):
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def component_lines(spec, teacher: Teacher, rng: random.Random) -> list[str]:
    """The teacher's component, one string per line, slipping at each opportunity."""
    slip = teacher.slips
    lines = [f"export default function {spec['title']}() {{"]
    for state, setter, init, part in (
        ("n", "setN", "0", "counter"),
        ("on", "setOn", "false", "toggle"),
    ):
        if part in spec:
            hook = f"React.useState({init})"
            call = f"React ? {hook} : [{init}]" if slip("hook", rng) else hook
            lines.append(f"  const [{state}, {setter}] = {call};")
    lines.append(f'  return <div {"class" if slip("attr", rng) else "className"}="box">')
    lines.append(f"    <h1>{spec['title']}</{'h2' if slip('tag', rng) else 'h1'}>")
    for part in PARTS:
        if part not in spec:
            continue
        value = spec[part]
        if part in ("text", "note"):
            lines.append(f"    <p>{value}</{'b' if slip('tag', rng) else 'p'}>")
        elif part == "list":
            items = ", ".join(f'"{w}"' for w in value)
            key = "" if slip("key", rng) else " key={x}"
            child = "item" if slip("undefined", rng) else "x"
            lines.append(f"    <ul>{{[{items}].map((x) => <li{key}>{{{child}}}</li>)}}</ul>")
        else:
            handler = "onclick" if slip("attr", rng) else "onClick"
            if part == "counter":
                lines.append(f"    <button {handler}={{() => setN(n + 1)}}>{value} {{n}}</button>")
            else:
                lines.append(f"    <button {handler}={{() => setOn(!on)}}>{value[0]}</button>")
                lines.append(f"    {{on && <p>{value[1]}</p>}}")
    lines += ["  </div>;", "}"]
    return lines


def score_check(example: Example, completion: str, block, check) -> Score:
    """A :class:`Score` from one :class:`~botgrpo.rewards.recipes.react.ReactCheck`."""
    if block is None or check is None:
        return Score(0.0, (), False, None, {"compiled": 0.0, "clean": 0.0})
    compiled = check.compiled and check.rendered is True
    bad_lines = {
        d.line for d in check.diagnostics if d.severity in ("fatal", "error") and d.line is not None
    }
    clean = compiled and not any(d.severity in ("fatal", "error") for d in check.diagnostics)
    solved = compiled and check.blank is False and shows(check.text, example.meta["spec"])
    steps = tuple(
        StepVerdict(block.start + start, block.start + end, -1 if k + 1 in bad_lines else 1)
        for k, (start, end) in enumerate(line_contents(block.code, breaks=JS_BREAK))
    )
    metrics = {"compiled": float(compiled), "clean": float(clean)}
    return Score(float(solved), steps, True, check.text, metrics)


def make_react_task_reward(task, tokenizer: Any, config=None) -> Callable[..., list[TokenReward]]:
    """The React recipe's token reward (``config``: a
    :class:`~botgrpo.rewards.recipes.react.ReactRewardConfig` or a mapping of its options)
    whose G also gets ``task.solved_weight`` for a solved component; renders are bounded by
    ``task.render_timeout_s``, as in the task's evaluation."""
    from botgrpo.rewards.configs import config_from_mapping
    from botgrpo.rewards.recipes.react import ReactRewardConfig, check_components
    from botgrpo.rewards.recipes.react.recipe import extract_react_block, score_react_completion

    cfg = config_from_mapping(ReactRewardConfig, config)
    tok = resolve_tokenizer(tokenizer)
    name = f"{task.name}_line_reward"

    def reward(prompts=None, completions: Sequence[Any] = (), completion_ids=None, **columns):
        t0 = time.perf_counter()
        tokens = tokenize_completions(tok, completions, completion_ids, name)
        examples = code_examples(prompts, columns, len(tokens), name)
        blocks = [extract_react_block(t.text, cfg.languages) for t in tokens]
        blocks = [b if b is not None and b.code.strip() else None for b in blocks]
        codes = sorted({b.code for b in blocks if b is not None})
        t1 = time.perf_counter()
        ran = check_components(codes, render=cfg.render, timeout_s=task.render_timeout_s)
        checks = dict(zip(codes, ran, strict=True))
        t2 = time.perf_counter()
        out, scores = [], []
        for t, ex, block in zip(tokens, examples, blocks, strict=True):
            check = checks.get(block.code) if block is not None else None
            score = score_check(ex, t.text, block, check)
            base = score_react_completion(t, cfg, check=check, block=block)
            bonus = task.solved_weight * score.outcome
            info = {**base.info, "solved": score.solved, **score.metrics}
            out.append(TokenReward(outcome=base.outcome + bonus, local=base.local, info=info))
            scores.append(score)
        times = {"extract": t1 - t0, "check": t2 - t1, "score": time.perf_counter() - t2}
        log_code_scores(columns, scores, len(codes), times)
        return out

    reward.__name__ = reward.__qualname__ = name
    reward.local_bound = cfg.lines.bound  # type: ignore[attr-defined]
    return reward
