"""The library's front door: ``mtagent.context`` names the public API, and the example in
docs/ARCHITECTURE.md — which imports nothing but ``mtagent.context`` — runs."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import mtagent.context as front

DOC = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"


def example() -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- example:front-door -->\s*```python\n(.*?)```", text, re.S)
    assert found, "docs/ARCHITECTURE.md lost its front-door example"
    return found.group(1)


def test_every_public_name_resolves_and_an_unknown_one_is_an_attribute_error():
    for name in front.__all__:
        assert getattr(front, name) is not None, name
    try:
        front.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_the_docs_example_imports_only_the_front_door():
    imported = set()
    for node in ast.walk(ast.parse(example())):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert {m for m in imported if m.startswith("mtagent")} == {"mtagent.context"}
    assert not {m for m in imported if m.startswith(("langchain", "langgraph"))}


def test_the_docs_example_runs(tmp_path):
    script = tmp_path / "example.py"
    script.write_text(example(), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "The build log is saved; the model saw a preview."
    assert lines[1].startswith("Context plan, call 2:")
    for kind in ("context_plan", "event", "tool_result_artifact", "transcript_message"):
        assert kind in lines[2], kind
