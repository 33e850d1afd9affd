"""Path confinement: a corpus of escape attempts, all refused, nothing touched outside the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from mtagent.config import Settings
from mtagent.errors import WorkspacePathError
from mtagent.tools import ToolSession, Workspace, default_tools
from mtagent.tools.workspace import IGNORED_DIRS, MAX_COMPONENT_BYTES, MAX_PATH_CHARS, is_ignored_dir

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


# ── sharp checks: the exact boundaries of the spelling checks, extra roots, the race-free accessors (#22) ───

@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "notes.txt").write_text("outside notes\n")
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    (root / "out").symlink_to(tmp_path / "outside")
    return Workspace.create(root)


def refused(ws: Workspace, raw: object) -> str:
    with pytest.raises(WorkspacePathError) as info:
        ws.resolve(raw)  # type: ignore[arg-type]
    return str(info.value)


def test_the_path_length_limit_is_exact(ws: Workspace) -> None:
    longest = "a/" * ((MAX_PATH_CHARS - 2) // 2) + "ab"
    assert len(longest) == MAX_PATH_CHARS == 4096
    assert ws.resolve(longest) == ws.root / longest
    assert "is 4,097 chars long (limit 4,096)" in refused(ws, longest + "c")


def test_the_component_length_limit_is_exact_in_bytes(ws: Workspace) -> None:
    assert MAX_COMPONENT_BYTES == 255
    assert ws.resolve("x" * 255) == ws.root / ("x" * 255)
    assert ws.resolve("é" * 127 + "x") == ws.root / ("é" * 127 + "x")  # 255 bytes
    message = refused(ws, "é" * 128)  # 256 bytes in 128 characters
    assert "is longer than 255 bytes" in message
    message = refused(ws, "x" * 300)
    assert f"a component of path {'x' * 80!r}… is longer than 255 bytes" in message


def test_ascii_boundaries_of_the_control_character_check(ws: Workspace) -> None:
    assert ws.resolve("my file.txt") == ws.root / "my file.txt"  # space (32) is plain
    assert ws.resolve("a~b.txt") == ws.root / "a~b.txt"  # '~' (126) inside a name is plain
    assert ws.resolve("notes:v2.txt") == ws.root / "notes:v2.txt"
    for raw in ("a\x1fb", "a\x7fb", "a\x01b"):
        assert "contains a control character; retype the path" in refused(ws, raw), raw
    assert "invisible or control character U+0080" in refused(ws, "a\x80b")  # C1 controls too


def test_unicode_checks_name_the_character(ws: Workspace) -> None:
    assert ws.resolve("données/résumé.md") == ws.root / "données" / "résumé.md"
    assert "invisible or control character U+202E" in refused(ws, "a\u202eb")
    assert "invisible or control character U+00A0" in refused(ws, "a\u00a0b")  # no-break space
    assert "invisible or control character U+3000" in refused(ws, "a\u3000b")  # ideographic space
    assert "U+2215" in refused(ws, "src\u2215app.py") and "path punctuation" in refused(ws, "src\u2215app.py")
    assert "U+FF0E" in refused(ws, "src/app\uff0epy")  # folds to '.'


def test_each_spelling_refusal_says_why(ws: Workspace) -> None:
    assert "path is empty" in refused(ws, "  ")
    assert "starts with '~'" in refused(ws, "~/x")
    assert "backslash" in refused(ws, "src\\app.py")
    assert "Windows drive" in refused(ws, "c:foo")
    assert "NUL byte" in refused(ws, "a\x00b")
    assert "must be a string, got int" in refused(ws, 7)


def test_paths_resolve_from_strings_and_path_objects(ws: Workspace) -> None:
    assert ws.resolve(Path("src/app.py")) == ws.root / "src" / "app.py"
    assert ws.resolve(str(ws.root)) == ws.root
    assert ws.resolve(".") == ws.root


def test_outside_and_symlink_refusals_name_the_roots(ws: Workspace, tmp_path: Path) -> None:
    message = refused(ws, "../outside/notes.txt")
    assert f"is outside the workspace; tools may only touch files under {ws.root}." in message
    message = refused(ws, "out/notes.txt")
    assert f"leads outside the workspace through a symlink (to {tmp_path / 'outside' / 'notes.txt'})" in message
    assert message.endswith(f"tools may only touch files under {ws.root}")
    assert "check for symlink loops" in refused(ws, "loop_a")


def test_a_relative_extra_root_is_taken_from_the_workspace_root(ws: Workspace, tmp_path: Path) -> None:
    extended = Workspace.create(ws.root, ["../outside", "missing-folder"])
    assert extended.extra_roots == (tmp_path / "outside",)  # the missing one is dropped
    assert extended.roots == (ws.root, tmp_path / "outside")
    assert extended.resolve("../outside/notes.txt") == tmp_path / "outside" / "notes.txt"
    message = refused(extended, "/etc/passwd")
    assert f"under {ws.root}, {tmp_path / 'outside'}." in message
    assert extended.relative(tmp_path / "outside" / "notes.txt") == str(tmp_path / "outside" / "notes.txt")
    assert extended.relative(ws.root / "src" / "app.py") == "src/app.py"


def test_a_root_given_through_a_symlink_resolves_and_a_file_root_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    assert Workspace.create(tmp_path / "alias").root == tmp_path / "real"
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspacePathError, match="is not a folder"):
        Workspace.create(tmp_path / "file")


def test_the_file_accessors_open_lstat_and_list_inside_the_roots(ws: Workspace) -> None:
    app = ws.resolve("src/app.py")
    with ws.open_read(app) as (fh, st):
        assert fh.read() == b"print('hi')\n"
        assert st.st_size == 12
    stat = ws.lstat(app)
    assert stat is not None and stat.st_size == 12
    assert ws.lstat(ws.resolve("src/missing.py")) is None
    opened = ws.open_write(ws.resolve("new/dir/out.txt"))
    os.write(opened.fd, b"written")
    os.close(opened.fd)
    assert (ws.root / "new" / "dir" / "out.txt").read_bytes() == b"written"
    fd = ws.open_dir(ws.resolve("src"))
    try:
        assert os.listdir(fd) == ["app.py"]
    finally:
        os.close(fd)


def test_the_root_is_a_folder_for_lstat_and_open(ws: Workspace) -> None:
    import stat as stat_mod

    from mtagent.safe_open import NotRegularFile

    root_stat = ws.lstat(ws.root)
    assert root_stat is not None and stat_mod.S_ISDIR(root_stat.st_mode)
    with pytest.raises(NotRegularFile) as info:
        ws.open_read(ws.root).__enter__()
    assert info.value.is_dir and "is a folder, not a file" in str(info.value)
    with pytest.raises(NotRegularFile) as info:
        ws.open_read(ws.resolve("src")).__enter__()
    assert info.value.is_dir and str(info.value) == "src is a folder, not a file"


def test_a_created_file_gets_the_usual_permissions(ws: Workspace) -> None:
    import stat as stat_mod

    mask = os.umask(0o022)
    try:
        opened = ws.open_write(ws.resolve("made.txt"))
        os.close(opened.fd)
    finally:
        os.umask(mask)
    assert stat_mod.S_IMODE((ws.root / "made.txt").stat().st_mode) == 0o644


def test_a_folder_swapped_for_a_symlink_after_resolving_is_a_workspace_error(ws: Workspace, tmp_path: Path) -> None:
    target = ws.resolve("src/app.py")
    (ws.root / "src").rename(ws.root / "src_moved")
    (ws.root / "src").symlink_to(ws.root / "src_moved")
    with pytest.raises(WorkspacePathError, match="changed while it was being opened"):
        ws.open_read(target).__enter__()
