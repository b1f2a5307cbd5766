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
text), so completions run from about 150 to 430 characters. ``sections=N`` (1-8) asks for a
page of N sections instead, each with its own heading and parts: components of 25-60 lines
where one slip among dozens of lines decides the outcome (:mod:`botgrpo.tasks.pages`).

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
from botgrpo.rewards.noise import moved_verdicts
from botgrpo.rewards.text import JS_BREAK, line_contents
from botgrpo.rewards.types import TokenReward
from botgrpo.tasks.base import Example, Score, StepVerdict, repr_leaving_out
from botgrpo.tasks.code import (
    COMPARE_DEFAULTS,
    REACT_DEMO_DEFAULTS,
    code_examples,
    log_code_scores,
)
from botgrpo.tasks.pages import MAX_SECTIONS, page_expected_text, page_lines, sample_page
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


@dataclass(frozen=True, repr=False)
class ReactComponents:
    """Small React components from a spec, verdicts from the React recipe.

    Attributes:
        min_parts: fewest parts besides the title (1-5); with ``sections``, of each section.
        max_parts: most parts besides the title (min_parts-5; 4 keeps completions within
            about 430 characters); with ``sections``, of each section.
        teacher: who writes the demonstrations: slips ``tag``, ``attr``, ``key``, ``hook``,
            ``undefined`` (joined with "+") at a rate; the default slips ``tag+undefined+attr``
            at 0.3; ``Teacher()`` for perfect ones.
        render_timeout_s: seconds each render may take.
        solved_weight: added to the recipe's G in the training reward when the page shows
            what the prompt asked for.
        sections: 0 for one flat component; 1-8 for a page of that many sections, each a
            ``<section>`` with an ``<h2>`` and its own ``min_parts``..``max_parts`` parts
            (:mod:`botgrpo.tasks.pages`): 3 sections of 2-3 parts give components of 25-40
            lines, about 900 characters.
    """

    min_parts: int = 2
    max_parts: int = 4
    teacher: Teacher = field(default_factory=lambda: Teacher("tag+undefined+attr", 0.3))
    render_timeout_s: float = 2.0
    solved_weight: float = 1.0
    name: str = "react"
    sections: int = 0

    SLIPS = ("tag", "attr", "key", "hook", "undefined")
    METRICS = ("compiled", "clean")
    #: What `botgrpo compare` and `botgrpo demo` run on this task (``botgrpo.tasks.code``).
    compare_defaults: ClassVar[dict[str, object]] = COMPARE_DEFAULTS
    demo_defaults: ClassVar[dict[str, object]] = REACT_DEMO_DEFAULTS

    # Harness defaults (``botgrpo compare`` uses them unless told otherwise). The flat
    # component keeps the recipe its shipped warm start was made with (a short anneal once the
    # check loss alone is flat, padded batches). Pages train a fixed 2400 steps of 16 packed
    # demonstrations on the cosine schedule: the "converged" rule stopped them at 605 steps with
    # a check loss of 0.070 (the flat component's warm start ends at 0.014), a model that still
    # miscopied headings and state names. Pages generate with the static KV cache, 1.9x faster
    # than the dynamic one at a thousand tokens.

    @property
    def warm_start_stop(self) -> str:
        """How the warm start decides it is done (WarmStartConfig.stop)."""
        return "converged" if not self.sections else "steps"

    @property
    def max_completion_tokens(self) -> int:
        """The longest completion in tokens (characters, for the tiny model)."""
        return 448 if not self.sections else 200 + 380 * self.sections

    @property
    def max_positions(self) -> int:
        """The tiny model's positions: the longest prompt and completion."""
        return 640 if not self.sections else self.max_completion_tokens + 80 + 90 * self.sections

    @property
    def warm_start_steps(self) -> int:
        """Supervised warm-start steps (the flat component's: at most, it stops when converged;
        a page's: exactly)."""
        return 1500 if not self.sections else 2400

    @property
    def warm_start_batch_size(self) -> int:
        """Demonstrations per warm-start step (a page has three times the tokens)."""
        return 32 if not self.sections else 16

    @property
    def warm_start_patience(self) -> float:
        return 0.0 if not self.sections else 0.2

    @property
    def warm_start_watch_accuracy(self) -> bool:
        return bool(self.sections)

    @property
    def warm_start_packed(self) -> bool:
        return bool(self.sections)

    @property
    def generation_cache(self) -> str:
        """The KV cache rollouts and evaluations generate with (transformers' names)."""
        return "dynamic" if not self.sections else "static"

    def __repr__(self) -> str:  # ``sections`` at 0 left out: the shipped warm start's key
        return repr_leaving_out(self, {"sections": 0})

    def __post_init__(self) -> None:
        if not 1 <= self.min_parts <= self.max_parts <= len(PARTS):
            raise ValueError(
                f"need 1 <= min_parts <= max_parts <= {len(PARTS)}, got "
                f"{self.min_parts}, {self.max_parts}"
            )
        if not (isinstance(self.sections, int) and 0 <= self.sections <= MAX_SECTIONS):
            raise ValueError(
                f"sections must be an integer from 0 (one flat component) to {MAX_SECTIONS}, "
                f"got {self.sections!r}"
            )
        from botgrpo.rewards.sandbox.config import check_timeout  # the sandbox's own cap

        check_timeout("render_timeout_s", self.render_timeout_s)
        if not math.isfinite(self.solved_weight) or self.solved_weight < 0:
            raise ValueError(
                f"solved_weight must be a finite number >= 0 (a bonus for a solved page; 0 "
                f"turns it off), got {self.solved_weight}"
            )
        self.teacher.check_kind(self.name, self.SLIPS)

    def sample(self, rng: random.Random) -> Example:
        """A component spec: a title and 2-5 parts in a fixed order (or a page of sections)."""
        if self.sections:
            prompt, spec = sample_page(
                rng, self.sections, self.min_parts, self.max_parts, TITLES, draw_part, PARTS
            )
            return Example(prompt, " | ".join(expected_text(spec)), {"spec": spec})
        title = rng.choice(TITLES)
        chosen = set(rng.sample(PARTS, rng.randint(self.min_parts, self.max_parts)))
        spec: dict[str, object] = {"title": title}
        bits = []
        for part in PARTS:
            if part in chosen:
                spec[part], text = draw_part(rng, part)
                bits.append(text)
        prompt = f"Component {title}: " + "; ".join(bits) + "\n"
        return Example(prompt, " | ".join(expected_text(spec)), {"spec": spec})

    def demonstration(self, example: Example, rng: random.Random | None = None) -> str:
        """The teacher's component; slips drawn from ``rng`` (default: one stream per prompt)."""
        rng = rng or demonstration_rng(example)
        spec = example.meta["spec"]
        lines = (
            page_lines(spec, self.teacher, rng, PARTS)
            if "sections" in spec
            else component_lines(spec, self.teacher, rng)
        )
        return "```jsx\n" + "\n".join(lines) + "\n```"

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


def draw_part(rng: random.Random, part: str) -> tuple[object, str]:
    """One part's value and its words in the prompt."""
    if part in ("text", "note"):
        value = rng.choice(PHRASES)
        return value, f'{part} "{value}"'
    if part == "list":
        items = [w.capitalize() for w in rng.sample(WORDS, rng.randint(2, 3))]
        return items, "list " + ", ".join(items)
    if part == "counter":
        value = rng.choice(LABELS)
        return value, f'counter "{value}"'
    pair = [rng.choice(LABELS), rng.choice(PHRASES)]
    return pair, f'toggle "{pair[0]}" shows "{pair[1]}"'


def expected_text(spec) -> list[str]:
    """The texts a solved page shows, in order: the title, texts, items, counter and toggle
    labels (of each section in turn, after its heading, on a page)."""
    if "sections" in spec:
        return page_expected_text(spec, lambda section: expected_text(section)[1:])
    out = [spec.get("title", spec.get("heading"))]
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
    lines = line_contents(block.code, breaks=JS_BREAK)
    bad_lines = {  # past the end (an error at the end of input): the last line, as the recipe
        min(max(int(d.line), 1), len(lines))
        for d in check.diagnostics
        if d.severity in ("fatal", "error") and d.line is not None
    }
    clean = compiled and not any(d.severity in ("fatal", "error") for d in check.diagnostics)
    solved = compiled and check.blank is False and shows(check.text, example.meta["spec"])
    steps = tuple(
        StepVerdict(block.start + start, block.start + end, -1 if k + 1 in bad_lines else 1)
        for k, (start, end) in enumerate(lines)
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
            raw = [v.verdict for v in score.steps]  # the line verdicts, before the decay
            if "line_moves" in base.info:  # noisy lines: the verdicts the reward gave
                raw = moved_verdicts(raw, base.info["line_moves"])
            info = {**base.info, "solved": score.solved, "raw_verdicts": raw, **score.metrics}
            info["verdict_spans"] = [(v.start, v.end) for v in score.steps]
            out.append(TokenReward(outcome=base.outcome + bonus, local=base.local, info=info))
            scores.append(score)
        times = {"extract": t1 - t0, "check": t2 - t1, "score": time.perf_counter() - t2}
        log_code_scores(columns, scores, len(codes), times)
        return out

    reward.__name__ = reward.__qualname__ = name
    reward.local_bound = cfg.lines.bound  # type: ignore[attr-defined]
    return reward
