"""The layout rules of docs/ARCHITECTURE.md, checked on the source (``ast``, nothing is imported).

* **No import cycles** between modules of ``src/mtagent``. Every import counts — module level,
  function level (a lazy import is still a dependency, only hidden) and under ``if TYPE_CHECKING:``
  (an annotation that needs a module above is a dependency too; hiding it there only closes the
  cycle where no test runs it). ``from pkg import name`` is an edge to ``pkg.name`` when that is a
  module, else to ``pkg`` (its ``__init__``).
* **Layers**, bottom up: ``config/paths/errors/events/redaction`` → ``session/`` → ``context/`` →
  ``tools/``, ``replay/``, ``integrations/`` → ``agent/`` → ``ui/``, ``cli/``. No import runs back up;
  the engine (``context/``) and storage (``session/``) never import LangGraph.
* **Size**: no module over 500 lines, no class over 250 lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "mtagent"
MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 250

BASE = {"config", "config_sections", "config_ranges", "config_file", "trust", "trust_scope", "paths", "errors", "events", "redaction", "safe_open", "confine", "terminal_text",
        "pricing",
        "safe_open", "confine",
        "__init__", "py"}
# What each area may not import (its own layer and those below are allowed).
FORBIDDEN: dict[str, set[str]] = {
    "base": {"session", "context", "tools", "replay", "integrations", "agent", "eval", "ui", "cli", "testing"},
    "session": {"context", "tools", "replay", "integrations", "agent", "eval", "ui", "cli", "testing"},
    "context": {"tools", "replay", "integrations", "agent", "eval", "ui", "cli", "testing"},
    "tools": {"replay", "integrations", "agent", "eval", "ui", "cli", "testing"},
    "replay": {"integrations", "agent", "eval", "ui", "cli", "testing"},
    "integrations": {"replay", "agent", "eval", "ui", "cli", "testing"},
    "agent": {"eval", "ui", "cli", "testing"},
    "eval": {"ui", "cli", "testing"},  # beside agent/: only ui/ and cli/ import it
    "ui": {"testing"},  # mtagent.testing serves the tests; production code never imports it
    "cli": {"testing"},
    "testing": {"eval", "ui", "cli"},
}
NO_LANGGRAPH = {"base", "session", "context"}


def _modules() -> dict[str, Path]:
    root = SRC / PACKAGE
    out: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, *, typing: bool = True) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement (also those in functions); ``typing=False`` leaves out the ones under
    ``if TYPE_CHECKING:`` (what runs)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if not typing and isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, *, typing: bool = True, source: str | None = None) -> set[str]:
    """Modules (inside and outside the package) ``module`` imports — with ``TYPE_CHECKING`` ones
    unless ``typing=False``. ``source``: the module's text instead of its file (the checker's tests)."""
    tree = ast.parse(source if source is not None else MODULES[module].read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in _imports(tree, typing=typing):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
            continue
        target = _resolve(module, node)
        for alias in node.names:
            sub = f"{target}.{alias.name}"
            out.add(sub if sub in MODULES else target)
    return out


GRAPH = {module: {t for t in imports_of(module) if t in MODULES and t != module} for module in MODULES}


def area(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in BASE:
        return "base"
    return parts[1]


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_sees_imports_and_cycles():
    assert "mtagent.context.window" in GRAPH["mtagent.context.engine_session"]
    assert "mtagent.session.schema" in GRAPH["mtagent.session.transcript"]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert area("mtagent.config") == "base" and area("mtagent.context.meter") == "context"


def test_type_checking_and_function_level_imports_close_cycles_too():
    """A cycle hidden under ``if TYPE_CHECKING:`` or inside a function is still a cycle."""
    hidden = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mtagent.agent.turns import Turn\n"
              "def f():\n    from mtagent.cli.app import app\n")
    found = imports_of("mtagent.session.store", source=hidden)
    assert {"mtagent.agent.turns", "mtagent.cli.app"} <= found
    assert "mtagent.agent.turns" not in imports_of("mtagent.session.store", source=hidden, typing=False)
    graph = {m: set(t) for m, t in GRAPH.items()}
    graph["mtagent.session.store"] |= {t for t in found if t in MODULES}
    assert any("mtagent.session.store" in c for c in find_cycles(graph))


def test_there_are_no_import_cycles():
    cycles = find_cycles(GRAPH)
    assert not cycles, "import cycles (break each at its real seam):\n" + "\n".join(" ↔ ".join(c) for c in cycles)


def test_no_import_runs_against_the_layers():
    wrong = []
    for module, targets in sorted(GRAPH.items()):
        banned = FORBIDDEN.get(area(module), set())
        wrong += [f"{module} → {t}" for t in sorted(targets) if area(t) in banned]
        if area(module) in NO_LANGGRAPH:
            wrong += [f"{module} → {t}" for t in sorted(imports_of(module)) if t.split(".")[0] == "langgraph"]
    assert not wrong, "imports against the layers (see docs/ARCHITECTURE.md):\n" + "\n".join(wrong)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_and_classes_stay_small(module):
    path = MODULES[module]
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(SRC)} has {lines} lines (max {MAX_MODULE_LINES}): split it"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            assert size <= MAX_CLASS_LINES, (
                f"class {node.name} in {path.relative_to(SRC)} has {size} lines (max {MAX_CLASS_LINES})")


def names_meaning_two_things(trees: dict[str, ast.AST]) -> dict[str, list[str]]:
    """Class names defined in more than one module (a reader meets one name and must ask which)."""
    where: dict[str, list[str]] = {}
    for module, tree in trees.items():
        for node in getattr(tree, "body", []):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(module)
    return {name: modules for name, modules in where.items() if len(modules) > 1}


def test_no_class_name_means_two_things():
    trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in MODULES.items()}
    assert names_meaning_two_things(trees) == {}
    assert names_meaning_two_things({"a": ast.parse("class Frame: ..."),
                                     "b": ast.parse("class Frame(Protocol): ...")}) == {"Frame": ["a", "b"]}
