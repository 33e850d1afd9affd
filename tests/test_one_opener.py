"""A session is born in one place (DESIGN principle 11, issue 25): only the opener
(``mtagent.context.opener``) builds a transcript writer, the sink chain, the window manager or an
``EngineSession``; the storage layer (``mtagent.session``) builds writers for it. Every front end —
CLI, middleware thread, subagent child, replay — goes through the opener, so a measurement of one
is a measurement of all.

The scan reads the source (AST), so a new front end that wires its own session fails here before
it drifts from the others."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mtagent"
OPENER = "context/opener/"

# What only the opener may construct (and, for writers, the storage layer it calls).
SESSION_PARTS = frozenset({
    "EngineSession", "ContextWindowManager", "SessionMemoryManager", "RedactingSink", "AuditingSink",
    "IndexingSink", "LockedSink", "recall_sink", "build_engine_session", "open_session_io",
})
WRITERS = frozenset({"TranscriptWriter", "open_writer", "open_session_writer", "open_in_store"})
STORAGE = "session/"


def constructions(tree: ast.AST) -> list[tuple[str, int]]:
    """``(name, line)`` of every call of a session part or writer, by bare name or attribute."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in SESSION_PARTS or name in WRITERS:
            found.append((name, node.lineno))
    return found


def defined(tree: ast.AST) -> set[str]:
    """Names a module defines itself (a part's own module may build it: ``recall_sink`` → ``IndexingSink``)."""
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def offenders(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(OPENER):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = defined(tree)
        for name, line in constructions(tree):
            if name in own or (rel.startswith(STORAGE) and (name in WRITERS or name == "AuditingSink")):
                continue
            out.append(f"{rel}:{line} builds {name}")
    return out


def test_only_the_opener_builds_writers_sink_chains_and_engine_sessions() -> None:
    found = offenders(SRC)
    assert found == [], "a session is built outside mtagent.context.opener:\n" + "\n".join(found)


@pytest.mark.parametrize("source, name", [
    ("from mtagent.session.transcript import TranscriptWriter\nw = TranscriptWriter(p, session_id='x')\n",
     "TranscriptWriter"),
    ("import mtagent.context.engine_session as es\ns = es.EngineSession(w, b, sink, settings=s)\n", "EngineSession"),
    ("from mtagent.redaction import RedactingSink\nsink = RedactingSink(inner, redactor)\n", "RedactingSink"),
    ("w = store.open_writer(project, sid)\n", "open_writer"),
    ("w = store.open_session_writer(project, sid, artifacts)\n", "open_session_writer"),
    ("from mtagent.context import build_engine_session\ne = build_engine_session(sink=[])\n", "build_engine_session"),
])
def test_the_scan_finds_a_front_end_that_wires_its_own_session(tmp_path: Path, source: str, name: str) -> None:
    front_end = tmp_path / "integrations" / "rogue.py"
    front_end.parent.mkdir()
    front_end.write_text(source, encoding="utf-8")
    assert [f.split(" builds ")[1] for f in offenders(tmp_path)] == [name]


def test_the_opener_and_the_storage_layer_may_build_them(tmp_path: Path) -> None:
    (tmp_path / "context" / "opener").mkdir(parents=True)
    (tmp_path / "context" / "opener" / "open.py").write_text("e = EngineSession(w, b, s)\nw = TranscriptWriter(p)\n")
    (tmp_path / "session").mkdir()
    (tmp_path / "session" / "files_store.py").write_text("w = TranscriptWriter(p)\n")
    (tmp_path / "session" / "rogue.py").write_text("e = EngineSession(w, b, s)\n")
    (tmp_path / "context" / "recall").mkdir()
    (tmp_path / "context" / "recall" / "sink.py").write_text(
        "class IndexingSink: ...\ndef recall_sink(i): return IndexingSink(i)\n")
    assert offenders(tmp_path) == ["session/rogue.py:1 builds EngineSession"]
