"""React verdicts on a corpus of real components: render, blank, and bugs planted at a known line.

Point it at a folder of valid single-file components (``.jsx``/``.tsx``, any depth; the first
folder level names the source, e.g. ``corpus/shadcn/card-demo.tsx``). Each file goes through
``check_components(..., render=True)``; the report gives, per source and overall,

- compiled, rendered without error, and rendered-and-shown (not blank) shares;
- for each planted bug kind, the share of plants blamed on their line by an error-level
  diagnostic (and the share blamed there with no new error on any other line): ``syntax`` (a broken opening tag; within one line), ``undefined`` (an undefined
  identifier in a host element's children), ``hook`` (a hook called in a condition, on a line of
  its own), ``dom-prop`` (``class=`` for ``className=`` on a host element).

Targets (issue 19): rendered >= 95%, not blank >= 90%, every plant kind blamed >= 95%.
The corpus is not shipped; docs/results/react-verdicts.md says how the measured one was built.

Run: .venv/bin/python benchmarks/react_corpus.py CORPUS_DIR [--workers 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from botgrpo.rewards.recipes.react import ReactCheck, WorkerPool, check_components

OPEN_TAG = re.compile(r"^(\s*)<([A-Za-z][\w.]*)(?=[\s>/]|$)")
HOST_OPEN = re.compile(r"^(\s*<([a-z][a-z0-9]*)\b[^<>{}/]*>)")
HOST_CLASS = re.compile(r"^\s*<([a-z][a-z0-9]*)\b[^>]*?\bclassName=")
COMPONENT_START = re.compile(
    r"^(export\s+(default\s+)?)?function\s+[A-Z]\w*\s*\([^()]*\)\s*(:\s*[^{]+)?\{\s*$"
)


@dataclass(frozen=True)
class Plant:
    kind: str
    code: str
    line: int
    """1-based line the bug is on."""
    slack: int
    """How far from `line` a blame may be and still count."""
    inserted: bool = False
    """The bug is a new line (the original's lines from `line` on moved down by one)."""


def _pick(lines: list[str], pattern: re.Pattern[str], rng: random.Random) -> int | None:
    hits = [i for i, text in enumerate(lines) if pattern.search(text)]
    return rng.choice(hits) if hits else None


def plant_syntax(lines: list[str], rng: random.Random) -> Plant | None:
    i = _pick(lines, OPEN_TAG, rng)
    if i is None:
        return None
    broken = OPEN_TAG.sub(lambda m: f"{m.group(1)}<{m.group(2)} =", lines[i], count=1)
    return Plant("syntax", "\n".join([*lines[:i], broken, *lines[i + 1 :]]), i + 1, 1)


def plant_undefined(lines: list[str], rng: random.Random) -> Plant | None:
    i = _pick(lines, HOST_OPEN, rng)
    if i is None:
        return None
    text = HOST_OPEN.sub(lambda m: m.group(1) + "{notDefinedAnywhere42}", lines[i], count=1)
    return Plant("undefined", "\n".join([*lines[:i], text, *lines[i + 1 :]]), i + 1, 0)


def plant_hook(lines: list[str], rng: random.Random) -> Plant | None:
    i = _pick(lines, COMPONENT_START, rng)
    if i is None:
        return None
    hook = "  if (globalThis.neverSet42) { React.useState(0); }"
    return Plant("hook", "\n".join([*lines[: i + 1], hook, *lines[i + 1 :]]), i + 2, 0, True)


def plant_dom_prop(lines: list[str], rng: random.Random) -> Plant | None:
    i = _pick(lines, HOST_CLASS, rng)
    if i is None:
        return None
    text = lines[i].replace("className=", "class=", 1)
    return Plant("dom-prop", "\n".join([*lines[:i], text, *lines[i + 1 :]]), i + 1, 0)


PLANTERS: dict[str, Callable[[list[str], random.Random], Plant | None]] = {
    "syntax": plant_syntax,
    "undefined": plant_undefined,
    "hook": plant_hook,
    "dom-prop": plant_dom_prop,
}


def error_lines(check: ReactCheck) -> set[int]:
    return {
        d.line for d in check.diagnostics if d.severity in ("fatal", "error") and d.line is not None
    }


def blamed(check: ReactCheck, plant: Plant) -> bool:
    """An error-level diagnostic within `plant.slack` lines of the planted line."""
    return any(abs(line - plant.line) <= plant.slack for line in error_lines(check))


def stray(check: ReactCheck, original: ReactCheck, plant: Plant) -> set[int]:
    """Error lines the plant added away from its own line (a cascade onto correct lines)."""
    before = error_lines(original)
    if plant.inserted:
        before = {ln + (ln >= plant.line) for ln in before}
    near = range(plant.line - plant.slack, plant.line + plant.slack + 1)
    return error_lines(check) - before - set(near)


def load(corpus: Path) -> list[tuple[str, str, str]]:
    """(source, relative path, code) for each component file under `corpus`."""
    files = sorted(p for p in corpus.rglob("*") if p.suffix in (".jsx", ".tsx") and p.is_file())
    out = []
    for path in files:
        rel = path.relative_to(corpus)
        source = rel.parts[0] if len(rel.parts) > 1 else "."
        out.append((source, str(rel), path.read_text(encoding="utf-8", errors="replace")))
    return out


def share(numerator: int, denominator: int) -> str:
    return (
        f"{numerator}/{denominator} ({100 * numerator / denominator:.1f}%)" if denominator else "-"
    )


def measure(items: list[tuple[str, str, str]], pool: WorkerPool, seed: int) -> dict:
    rng = random.Random(seed)
    checks = check_components([code for _, _, code in items], pool=pool)
    plants = []
    for (_, rel, code), check in zip(items, checks, strict=True):
        if not check.compiled:
            continue
        lines = code.split("\n")
        for planter in PLANTERS.values():
            plant = planter(lines, rng)
            if plant is not None:
                plants.append((check, rel, plant))
    planted = check_components([p.code for _, _, p in plants], pool=pool)
    by_source: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    misses: list[dict] = []
    for (source, rel, _), check in zip(items, checks, strict=True):
        for key in (source, "all"):
            row = by_source[key]
            row["files"] += 1
            row["compiled"] += check.compiled
            row["rendered"] += check.rendered is True
            row["shown"] += check.rendered is True and check.blank is False
        if check.rendered is not True or check.blank is not False:
            fatal = [d.message for d in check.diagnostics if d.severity == "fatal"][:1]
            misses.append(
                {"file": rel, "rendered": check.rendered, "blank": check.blank, "why": fatal}
            )
    blame: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (original, _, plant), check in zip(plants, planted, strict=True):
        blame[plant.kind]["plants"] += 1
        hit = blamed(check, plant)
        blame[plant.kind]["blamed"] += hit
        blame[plant.kind]["only"] += hit and not stray(check, original, plant)
    return {"sources": by_source, "blame": blame, "misses": misses}


def report(result: dict, seconds: float) -> str:
    rows = [
        "| source | files | compiled | rendered | rendered and shown |",
        "|---|---|---|---|---|",
    ]
    for source, r in sorted(result["sources"].items(), key=lambda kv: (kv[0] == "all", kv[0])):
        rows.append(
            f"| {source} | {r['files']} | {share(r['compiled'], r['files'])} | "
            f"{share(r['rendered'], r['files'])} | {share(r['shown'], r['files'])} |"
        )
    rows += [
        "",
        "| planted bug | plants | blamed on its line | and on no other line |",
        "|---|---|---|---|",
    ]
    for kind in PLANTERS:
        b = result["blame"].get(kind, {"plants": 0, "blamed": 0, "only": 0})
        rows.append(
            f"| {kind} | {b['plants']} | {share(b['blamed'], b['plants'])} | "
            f"{share(b['only'], b['plants'])} |"
        )
    rows.append(f"\n{seconds:.0f} s in all")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path, help="folder of .jsx/.tsx components")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="which candidate line each bug goes on")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        parser.error(f"{args.corpus} is not a folder")
    items = load(args.corpus)
    if not items:
        parser.error(f"{args.corpus} holds no .jsx or .tsx files")
    start = time.perf_counter()
    with WorkerPool(args.workers) as pool:
        result = measure(items, pool, args.seed)
    print(report(result, time.perf_counter() - start))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1, default=dict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
