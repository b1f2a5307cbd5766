"""The rewards package's layering: each part imports only what its ``__init__`` docstring allows.

Read from the source (every ``import`` and ``from ... import`` statement, lazy ones included),
so a new import that crosses a boundary fails here rather than in a review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import botgrpo.rewards

ROOT = Path(botgrpo.rewards.__file__).parent
MACHINERY = {
    "types", "spans", "steps", "code_blocks", "compose", "calling", "configs", "validate", "noise",
}  # fmt: skip
#: The bottom layer every part reads text through (line breaks, blanks): it imports nothing.
TEXT = "text"
#: Modules below the rewards package that any part may use: loading a model so that Ctrl-C ends
#: the process (botgrpo's lowest layer, ``test_layout.py``).
FOUNDATION = {"botgrpo.loading"}


def botgrpo_imports(path: Path) -> set[str]:
    """Every botgrpo module ``path`` imports (``from pkg import mod`` counts as pkg.mod)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] == "botgrpo"}


def part_of(module: str) -> str:
    """ "machinery", a subpackage name, or "outside" for a botgrpo.rewards/botgrpo module."""
    parts = module.split(".")
    if parts[:2] != ["botgrpo", "rewards"] or len(parts) < 3:
        return "outside"
    if parts[2] == TEXT:
        return TEXT
    return "machinery" if parts[2] in MACHINERY else parts[2]


ALLOWED = {
    TEXT: set(),
    "machinery": {"machinery", TEXT},
    "verifiers": {"verifiers", TEXT},
    "judges": {"judges", TEXT},
    "sandbox": {"sandbox"},
    "prm": {"prm", "machinery", TEXT},
    "recipes": {"machinery", "verifiers", "judges", "sandbox", "prm", "recipes", TEXT},
}


def sources(part: str) -> list[Path]:
    if part == "machinery":
        return [ROOT / f"{name}.py" for name in sorted(MACHINERY)]
    if part == TEXT:
        return [ROOT / f"{TEXT}.py"]
    return sorted((ROOT / part).rglob("*.py"))


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_each_part_imports_only_what_it_may(part):
    for path in sources(part):
        crossing = {
            m
            for m in botgrpo_imports(path)
            if part_of(m) not in ALLOWED[part] and FOUNDATION.isdisjoint({m, m.rpartition(".")[0]})
        }
        assert not crossing, f"{path.relative_to(ROOT)} imports {sorted(crossing)}"


def test_every_module_belongs_to_a_part():
    top = {p.stem for p in ROOT.glob("*.py")} - {"__init__"}
    assert top == MACHINERY | {TEXT}
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert packages == set(ALLOWED) - {"machinery", TEXT}


def test_sandbox_scripts_import_nothing_of_botgrpo():
    for name in ("supervisor.py", "bootstrap.py"):
        assert botgrpo_imports(ROOT / "sandbox" / name) == set()


def test_sandbox_modules_form_no_cycle():
    graph = {
        path.stem: {m.split(".")[3] for m in botgrpo_imports(path) if part_of(m) == "sandbox"}
        for path in (ROOT / "sandbox").glob("*.py")
        if path.stem != "__init__"
    }

    def reaches(start: str, target: str, seen: frozenset = frozenset()) -> bool:
        return any(
            nxt == target or (nxt not in seen and reaches(nxt, target, seen | {nxt}))
            for nxt in graph.get(start, ())
        )

    assert not [name for name in graph if reaches(name, name)]


def test_public_names_are_reexported():
    import botgrpo.rewards.judges as judges
    import botgrpo.rewards.sandbox as sandbox

    assert {"run_python", "run_many", "SandboxConfig", "SandboxResult"} <= set(sandbox.__all__)
    assert {"StepJudge", "CodeJudge", "JudgeConfig"} <= set(judges.__all__)
    for name in botgrpo.rewards.__all__:
        assert getattr(botgrpo.rewards, name) is not None
