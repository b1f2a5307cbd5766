"""Throughput of the React rewards: compile + lint + jsdom render against compile + lint only.

A batch of N (default 64) components of about 40 lines (state, effects, lists, handlers; every
second builds on a UI kit the checker stubs: cards, buttons, icons, a toast hook; every fourth
has a lint finding, every eighth throws while rendering) goes through

1. one sandboxed Node worker with DOM render, then the same batch without render (the ratio
   is the cost of the render stage), with the mean milliseconds per stage;
2. the full recipe (``make_react_code_reward``: extraction, checks, line penalties onto tokens)
   on a pool of ``--workers`` workers, in rewards per second per batch;
3. screenshots in headless Chromium with a warm browser.

Also prints the worker's start-up time (spawn in the sandbox until it answers) and the share of
the valid components judged rendered and shown (not blank): every one should be.
Targets (issue 10): >= 20 components/s per worker with render, start-up <= 3 s, screenshot
<= 0.3 s each with a warm browser; (issue 19) every valid component rendered and shown.
Run: .venv/bin/python benchmarks/bench_react.py [--n 64] [--workers 2] [--shots 8]
"""

from __future__ import annotations

import argparse
import statistics
import time

from botgrpo.rewards.recipes.react import (
    WorkerPool,
    check_components,
    make_react_code_reward,
    screenshot_components,
)
from botgrpo.tiny import build_char_tokenizer

TEMPLATE = """import {{ useEffect, useState }} from "react";

const ITEMS = [
  {{ id: 1, title: "Alpha {k}", done: false }},
  {{ id: 2, title: "Beta {k}", done: true }},
  {{ id: 3, title: "Gamma {k}", done: false }},
];

function Row({{ item, onToggle }}) {{
  return (
    <li className="flex items-center gap-2 py-1">
      <input type="checkbox" checked={{item.done}} onChange={{() => onToggle(item.id)}} />
      <span className={{item.done ? "line-through text-gray-400" : "text-gray-900"}}>
        {{item.title}}
      </span>
    </li>
  );
}}

export default function Board{k}() {{
  const [items, setItems] = useState(ITEMS);
  const [filter, setFilter] = useState("all");
  const [ready, setReady] = useState(false);{extra}
  useEffect(() => {{
    setReady(true);
  }}, []);
  const shown = items.filter((i) => filter === "all" || (filter === "done") === i.done);
  const toggle = (id) =>
    setItems((all) => all.map((i) => (i.id === id ? {{ ...i, done: !i.done }} : i)));
  return (
    <main className="p-6 max-w-md mx-auto">
      <h1 className="text-2xl font-bold">Tasks {k}{{ready ? "" : "..."}}</h1>
      <select value={{filter}} onChange={{(e) => setFilter(e.target.value)}}>
        <option value="all">All</option>
        <option value="done">Done</option>
      </select>
      <ul>{{shown.map((item) => <Row key={{item.id}} item={{item}} onToggle={{toggle}} />)}}</ul>
      <p>{{shown.length}} of {{items.length}} shown</p>
    </main>
  );
}}
"""


LIBRARY_TEMPLATE = """import {{ useState }} from "react";
import {{ Card, CardContent, CardHeader, CardTitle }} from "@/components/ui/card";
import {{ Button }} from "@/components/ui/button";
import {{ Badge }} from "@/components/ui/badge";
import {{ CheckCircle, Circle }} from "lucide-react";
import {{ useToast }} from "@/hooks/use-toast";

const ITEMS = [
  {{ id: 1, title: "Alpha {k}", done: false }},
  {{ id: 2, title: "Beta {k}", done: true }},
  {{ id: 3, title: "Gamma {k}", done: false }},
];

export default function Board{k}() {{
  const [items, setItems] = useState(ITEMS);
  const {{ toast }} = useToast();{extra}
  const toggle = (id) => {{
    setItems((all) => all.map((i) => (i.id === id ? {{ ...i, done: !i.done }} : i)));
    toast({{ title: "Updated" }});
  }};
  return (
    <Card className="max-w-md">
      <CardHeader>
        <CardTitle>Tasks {k}</CardTitle>
      </CardHeader>
      <CardContent>
        {{items.map((item) => (
          <div key={{item.id}} className="flex items-center gap-2">
            {{item.done ? <CheckCircle className="h-4 w-4" /> : <Circle className="h-4 w-4" />}}
            <span>{{item.title}}</span>
            {{item.done && <Badge variant="secondary">done</Badge>}}
            <Button size="sm" onClick={{() => toggle(item.id)}}>Toggle</Button>
          </div>
        ))}}
      </CardContent>
    </Card>
  );
}}
"""


def make_components(n: int) -> list[str]:
    """n components of ~40 lines; every 2nd on a stubbed UI kit, every 4th has an unused
    variable, every 8th throws."""
    out = []
    for k in range(n):
        extra = ""
        if k % 4 == 3:
            extra = "\n  const unused = 42;"
        if k % 8 == 7:
            extra = "\n  const broken = null;\n  broken.crash();"
        template = LIBRARY_TEMPLATE if k % 2 else TEMPLATE
        out.append(template.format(k=k, extra=extra))
    return out


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def stage_means(results, stage: str) -> float:
    values = [r.timings_ms[stage] for r in results if stage in r.timings_ms]
    return statistics.fmean(values) if values else float("nan")


def bench_one_worker(codes: list[str]) -> None:
    with WorkerPool(1) as pool:
        _, startup = timed(lambda: pool.workers[0].start())
        check_components(codes[:8], pool=pool)  # warm the JIT
        full, t_full = timed(lambda: check_components(codes, pool=pool))
        _, t_static = timed(lambda: check_components(codes, render=False, pool=pool))
    n = len(codes)
    assert sum(r.rendered is False for r in full) == n // 8, "every 8th component must fail"
    valid = [r for c, r in zip(codes, full, strict=True) if "crash" not in c]
    shown = sum(r.rendered is True and r.blank is False for r in valid)
    print(f"worker start-up (sandbox spawn -> ready): {startup:.2f} s")
    print(f"valid components rendered and shown: {shown}/{len(valid)}")
    print(
        f"1 worker, compile+lint+render: {n / t_full:.1f} components/s  "
        f"compile+lint only: {n / t_static:.1f} components/s  "
        f"ratio (with render / without): {t_full / t_static:.2f}x time"
    )
    print(
        "  mean ms per stage: "
        + "  ".join(f"{s} {stage_means(full, s):.1f}" for s in ("compile", "lint", "render"))
    )


def bench_recipe(codes: list[str], workers: int) -> None:
    import botgrpo.rewards.recipes.react.checks as checks

    tok = build_char_tokenizer()
    texts = [f"Here is the component:\n```jsx\n{c}```\nIt shows a task list." for c in codes]
    ids = [tok(t).input_ids for t in texts]
    prompts = ["Build a task board."] * len(codes)
    with WorkerPool(workers) as pool:
        checks._pool, original = pool, checks._pool
        try:
            for grpo in (False, True):
                reward = make_react_code_reward(tok, {"line_penalties": not grpo})
                reward(prompts=prompts[:8], completions=texts[:8], completion_ids=ids[:8])
                out, seconds = timed(
                    lambda r=reward: r(prompts=prompts, completions=texts, completion_ids=ids)
                )
                name = "GRPO baseline (no line penalties)" if grpo else "BoT-GRPO recipe"
                print(
                    f"{name}, {workers} workers: batch of {len(codes)} in {seconds:.2f} s -> "
                    f"{len(codes) / seconds:.1f} rewards/s; mean outcome "
                    f"{statistics.fmean(t.outcome for t in out):+.3f}"
                )
        finally:
            checks._pool = original


def bench_screenshots(codes: list[str], shots: int) -> None:
    with WorkerPool(1) as pool:
        _, cold = timed(lambda: screenshot_components(codes[:1], pool=pool))
        out, seconds = timed(lambda: screenshot_components(codes[1 : shots + 1], pool=pool))
    assert all(s.png is not None for s in out)
    print(
        f"screenshots 1280x800: first (browser start) {cold:.2f} s; warm browser "
        f"{seconds / shots:.3f} s each over {shots}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shots", type=int, default=8)
    args = parser.parse_args()
    codes = make_components(args.n)
    print(f"react: {args.n} components of {len(codes[0].splitlines())} lines")
    bench_one_worker(codes)
    bench_recipe(codes, args.workers)
    bench_screenshots([c for c in codes if "crash" not in c], args.shots)


if __name__ == "__main__":
    main()
