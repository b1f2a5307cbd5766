"""The package's layering: every import points down, none closes a circle.

Read from the source (every ``import`` and ``from ... import``, lazy and ``TYPE_CHECKING``
ones included), so an import that reaches up a layer, such as the TRL trainer's script into the
comparison harness, fails here rather than in a review. The rules inside ``botgrpo.rewards``
are ``test_rewards_layout.py``'s.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import botgrpo

ROOT = Path(botgrpo.__file__).parent

#: Bottom to top: a part imports itself or parts of lower layers, never a sibling of its layer.
LAYERS = (
    ("loading",),
    ("botgrpo", "core", "rewards", "metrics", "tiny", "folders", "imports"),
    ("tasks", "viz"),
    ("usage",),
    ("scoring", "shipped"),
    ("models",),
    ("trl", "verl"),
    ("harness",),
    ("cli",),
)
LAYER = {part: i for i, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def imports(path: Path) -> list[tuple[str, int]]:
    """(botgrpo module, line) of every import in ``path``; ``from a.b import c`` names a.b.c
    when that is a module, else a.b."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: a relative import"
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                out.append((name if name in MODULES else node.module, node.lineno))
    return [(m, line) for m, line in out if m.split(".")[0] == "botgrpo"]


def part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "botgrpo"


def test_every_part_has_a_layer():
    assert {part(m) for m in MODULES} == set(LAYER)


def test_no_part_imports_upward_or_sideways():
    crossing = []
    for module, path in MODULES.items():
        for target, line in imports(path):
            mine, theirs = part(module), part(target)
            if mine != theirs and LAYER[theirs] >= LAYER[mine]:
                crossing.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not crossing, "\n".join(crossing)


def test_no_import_cycles():
    graph = {m: {t for t, _ in imports(p) if t in MODULES and t != m} for m, p in MODULES.items()}
    # a package's __init__ re-exporting its modules is not a cycle: drop module -> own package
    for module, targets in graph.items():
        targets -= {t for t in targets if module.startswith(t + ".")}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as err:
        raise AssertionError(f"import cycle: {' -> '.join(err.args[1])}") from None
