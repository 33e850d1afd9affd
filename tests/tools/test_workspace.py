"""Path confinement: a corpus of escape attempts, all refused, nothing touched outside the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from mtagent.config import Settings
from mtagent.errors import WorkspacePathError
from mtagent.tools import ToolSession, Workspace, default_tools
from mtagent.tools.workspace import IGNORED_DIRS, is_ignored_dir

SENTINEL_TEXT = "TOP SECRET sentinel\n"


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    sentinel = outside / "sentinel.txt"
    sentinel.write_text(SENTINEL_TEXT)
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "link_out").symlink_to(outside)  # a folder link leaving the root
    (root / "file_link_out").symlink_to(sentinel)
    (root / "dangling_out").symlink_to(outside / "new.txt")
    (root / "src" / "link_in").symlink_to(root / "src" / "app.py")  # stays inside: allowed
    (outside / "link_back_in").symlink_to(root / "src" / "app.py")
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    return {"root": root, "outside": outside, "sentinel": sentinel}


def escape_corpus(root: Path, outside: Path) -> list[str]:
    """Paths that must all be refused (≥ 50)."""
    rel_out = os.path.relpath(outside / "sentinel.txt", root)
    return [
        # parent traversal
        "..", "../", "../..", "../outside/sentinel.txt", rel_out, "src/../../outside/sentinel.txt",
        "./../outside/sentinel.txt", "src/../../../etc/passwd", "a/b/c/../../../../outside/x",
        "../" * 30 + "etc/passwd", ".././.././../etc/shadow", "src/./../..",
        # absolute
        "/etc/passwd", "/", "/tmp", str(outside / "sentinel.txt"), str(outside), str(root.parent),
        str(root) + "/../outside/sentinel.txt", "//etc/passwd", "/etc/", "/proc/self/environ",
        str(root) + "_sibling/file",
        # symlinks out
        "link_out/sentinel.txt", "link_out", "file_link_out", "dangling_out", "link_out/new_file.txt",
        "src/../link_out/sentinel.txt", str(outside / "link_back_in"),
        "loop_a",
        # home and drives
        "~", "~/.bashrc", "~root/.ssh/id_rsa", "~/", "C:\\Windows\\system32", "C:/Windows",
        "c:foo", "D:\\", "\\\\server\\share\\x", "..\\..\\outside\\sentinel.txt", "src\\..\\..\\x",
        # NUL and control characters
        "src/app.py\x00.txt", "\x00", "src/\x01app.py", "src/app.py\n", "src/\x7fapp.py",
        # unicode look-alikes and invisibles
        "\uff0e\uff0e/outside/sentinel.txt", "\u2024\u2024/outside", "..\u2215outside", "src\u2044..",
        "\u202e/etc/passwd", "src/\u200bapp.py", "src/app\u00a0.py", "\ufe52\ufe52/x", "\u2025/outside",
        "\uff0f\uff45\uff54\uff43", "src/\ufeffapp.py",
        # empty and very long
        "", "   ", "a/" * 3000 + "x", "x" * 300, "src/" + "y" * 256,
    ]


def test_escape_corpus_is_refused_by_resolve(layout: dict[str, Path]) -> None:
    ws = Workspace.create(layout["root"])
    corpus = escape_corpus(layout["root"], layout["outside"])
    assert len(corpus) >= 50
    accepted = []
    for raw in corpus:
        try:
            ws.resolve(raw)
        except WorkspacePathError as exc:
            assert str(exc), raw
        else:
            accepted.append(raw)
    assert accepted == []


def test_every_tool_refuses_the_corpus_and_touches_nothing_outside(layout: dict[str, Path]) -> None:
    root, outside, sentinel = layout["root"], layout["outside"], layout["sentinel"]
    before = sorted(p.name for p in outside.iterdir())
    tools = {t.name: t for t in default_tools(root, ToolSession(), Settings(), include_memory=False)}
    calls = {
        "read_file": lambda p: {"file_path": p},
        "write_file": lambda p: {"file_path": p, "content": "pwned\n"},
        "edit_file": lambda p: {"file_path": p, "old_string": "TOP", "new_string": "pwned"},
        "grep": lambda p: {"pattern": "SECRET", "path": p},
        "glob": lambda p: {"pattern": "*", "path": p},
        "ls": lambda p: {"path": p},
    }
    for raw in escape_corpus(root, outside):
        for name, make in calls.items():
            msg = tools[name].invoke({"name": name, "args": make(raw), "id": "t", "type": "tool_call"})
            assert isinstance(msg, ToolMessage)
            assert msg.status == "error", (name, raw, msg.content)
            assert "SECRET" not in msg.content, (name, raw)
    assert sentinel.read_text() == SENTINEL_TEXT
    assert sorted(p.name for p in outside.iterdir()) == before


def test_paths_inside_the_root_resolve(layout: dict[str, Path]) -> None:
    root = layout["root"]
    ws = Workspace.create(root)
    assert ws.resolve("src/app.py") == root / "src" / "app.py"
    assert ws.resolve("./src/../src/app.py") == root / "src" / "app.py"
    assert ws.resolve(str(root / "src")) == root / "src"
    assert ws.resolve("src/") == root / "src"
    assert ws.resolve("src/link_in") == root / "src" / "app.py"
    assert ws.resolve("new/dir/file.txt") == root / "new" / "dir" / "file.txt"
    assert ws.resolve("données/résumé.md") == root / "données" / "résumé.md"
    assert ws.relative(ws.resolve(".")) == "."


def test_extra_roots_extend_the_workspace(layout: dict[str, Path]) -> None:
    ws = Workspace.create(layout["root"], [layout["outside"]])
    assert ws.resolve(str(layout["sentinel"])) == layout["sentinel"]
    settings = Settings.model_validate({"agent": {"workspace_extra_roots": [str(layout["outside"])]}})
    tools = {t.name: t for t in default_tools(layout["root"], settings=settings, include_memory=False)}
    assert "TOP SECRET" in tools["read_file"].invoke({"file_path": str(layout["sentinel"])})


def test_refusals_say_what_to_do(layout: dict[str, Path]) -> None:
    ws = Workspace.create(layout["root"])
    with pytest.raises(WorkspacePathError, match="relative to the workspace root"):
        ws.resolve("../x")
    with pytest.raises(WorkspacePathError, match="symlink"):
        ws.resolve("link_out/sentinel.txt")
    with pytest.raises(WorkspacePathError, match="NUL"):
        ws.resolve("a\x00b")
    with pytest.raises(WorkspacePathError, match="U\\+FF0E"):
        ws.resolve("\uff0e\uff0e/x")


def test_ignored_dirs_include_vcs_dependencies_and_virtualenvs(tmp_path: Path) -> None:
    assert {".git", "node_modules", "__pycache__", ".venv"} <= IGNORED_DIRS
    env = tmp_path / "myenv"
    env.mkdir()
    (env / "pyvenv.cfg").write_text("home = /usr\n")
    assert is_ignored_dir(env)
    assert not is_ignored_dir(tmp_path)
