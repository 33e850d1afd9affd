"""A session's static context is built once and built again exactly when something it read changed.

:meth:`SystemContext.messages` runs on every model call; it re-checks the stat of each file the
last build read or looked for (context files, rule folders, includes, memory files) instead of
reading them all again. A build whose files were modified within two seconds is never trusted
(the same tick may hide a second edit), so these tests age what they write (mtime an hour back).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from mtagent.context.opener.system import SessionTools, SystemContext
from mtagent.context.static import memory
from mtagent.context.static.tiers import StaticContext

OLD = time.time_ns() - 3600 * 10**9


@tool
def read_file(file_path: str) -> str:
    """Read a file with line numbers."""
    return ""


def _aged(*paths: Path) -> None:
    for path in paths:
        os.utime(path, ns=(OLD, OLD))


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    _aged(path)
    return path


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per time the static context is read from disk."""
    calls: list[int] = []
    real = StaticContext.build

    def counted(self: StaticContext, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(StaticContext, "build", counted)
    return calls


def _context(root: Path, tools: SessionTools | None = None) -> SystemContext:
    static = StaticContext(root, today=dt.date(2026, 11, 29), os_name="Linux 6.1 (x86_64)")
    return SystemContext(static, root, tools or SessionTools())


def _text(context: SystemContext) -> str:
    return "\n".join(str(m.content) for m in context.messages())


def test_unchanged_files_are_not_read_again(tmp_path: Path, builds: list[int]) -> None:
    _write(tmp_path / "CONTEXT.md", "Rule v1")
    context = _context(tmp_path)
    assert all("Rule v1" in _text(context) for _ in range(3))
    assert len(builds) == 1


def test_an_edit_that_keeps_size_and_mtime_reaches_the_next_call(tmp_path: Path, builds: list[int]) -> None:
    rule = _write(tmp_path / "CONTEXT.md", "Rule v1")
    context = _context(tmp_path)
    assert "Rule v1" in _text(context)
    _write(rule, "Rule v2")  # same size, same (restored) mtime: only the change time tells
    assert "Rule v2" in _text(context)
    rule.write_text("Rule v3, now longer")
    assert "Rule v3" in _text(context)


def test_a_recently_modified_file_is_read_again_on_every_call(tmp_path: Path, builds: list[int]) -> None:
    (tmp_path / "CONTEXT.md").write_text("fresh")  # modified now: a second edit may share its tick
    context = _context(tmp_path)
    _text(context), _text(context)
    assert len(builds) == 2


def test_files_that_appear_later_are_read(tmp_path: Path, builds: list[int]) -> None:
    rules = tmp_path / ".mtagent" / "rules"
    _write(rules / "style.md", "Use tabs.")
    (rules / "sub").mkdir()
    _aged(rules / "sub", rules, tmp_path / ".mtagent")
    context = _context(tmp_path)
    assert "Use tabs." in _text(context) and len(builds) == 1
    _write(tmp_path / "CONTEXT.local.md", "Local rule.")
    assert "Local rule." in _text(context)
    (rules / "sub" / "deep.md").write_text("Deep rule.")  # a file in a listed sub-folder
    assert "Deep rule." in _text(context)
    _write(tmp_path / ".mtagent" / "CONTEXT.md", "Second context file.")
    assert "Second context file." in _text(context)


def test_an_edited_include_reaches_the_next_call(tmp_path: Path, builds: list[int]) -> None:
    _write(tmp_path / "CONTEXT.md", "See @docs/style.md for style.")
    style = _write(tmp_path / "docs" / "style.md", "Wrap at 100.")
    context = _context(tmp_path)
    assert "Wrap at 100." in _text(context)
    _write(style, "Wrap at 120.")
    assert "Wrap at 120." in _text(context) and len(builds) == 2


def test_a_saved_memory_reaches_the_next_call(tmp_path: Path, builds: list[int]) -> None:
    context = _context(tmp_path)
    assert "bench with make bench" not in _text(context)
    memory.save_memory("bench with make bench", "project", tmp_path)
    assert "bench with make bench" in _text(context)
    memory.save_memory("likes tables", "global")
    assert "likes tables" in _text(context)


def test_a_memory_leaves_the_call_after_it_expires(tmp_path: Path, builds: list[int]) -> None:
    expires = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
    index = memory.memory_path("project", tmp_path)
    _write(index, f"- deploys are frozen <!-- expires={expires.isoformat()} -->\n- kernels live in src/k\n")
    context = _context(tmp_path)
    assert "deploys are frozen" in _text(context) and len(builds) == 1
    time.sleep(max(0.0, (expires - dt.datetime.now(dt.UTC)).total_seconds()) + 0.05)
    text = _text(context)
    assert "deploys are frozen" not in text and "kernels live in src/k" in text


def test_a_path_scoped_rule_switches_on_when_a_tool_call_names_its_file(tmp_path: Path, builds: list[int]) -> None:
    rules = tmp_path / ".mtagent" / "rules"
    _write(rules / "migrations.md", '---\npaths: ["db/migrations/**"]\n---\nMigrations are never edited by hand.\n')
    _aged(rules, tmp_path / ".mtagent")
    context = _context(tmp_path)
    assert "Migrations are never" not in _text(context)
    context.touch([HumanMessage("please look at db/migrations/0003.sql")])  # text names no file
    context.touch([AIMessage("", tool_calls=[{"name": "read_file", "args": {"file_path": "src/app.py"}, "id": "c1"}])])
    assert "Migrations are never" not in _text(context) and len(builds) == 1  # no rule woke: no rebuild
    context.touch([AIMessage("", tool_calls=[{"name": "read_file", "args": {"file_path": "db/migrations/0003.sql"},
                                               "id": "c2"}])])
    assert "Migrations are never" in _text(context) and len(builds) == 2


def test_a_changed_tool_list_rebuilds_the_prompt(tmp_path: Path, builds: list[int]) -> None:
    tools = SessionTools()
    context = _context(tmp_path, tools)
    assert "- read_file" not in _text(context)
    tools.tools.append(read_file)
    assert "## Tools\n- read_file: Read a file with line numbers." in _text(context)
    tools.list_tools = False
    assert "## Tools" not in _text(context) and len(builds) == 3
