"""Sharp checks of workspace confinement (tools/workspace.py): the exact boundaries of the
spelling checks, extra roots, and the race-free file accessors (mutation testing, #22)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mtagent.errors import WorkspacePathError
from mtagent.tools.workspace import MAX_COMPONENT_BYTES, MAX_PATH_CHARS, Workspace


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
