"""write_file and edit_file: read-before-write, uniqueness, helpful misses, stale reads."""

from __future__ import annotations

import os

from .conftest import Kit


def test_write_creates_new_files_and_parent_folders(kit: Kit) -> None:
    msg = kit.call("write_file", file_path="pkg/sub/new.py", content="a = 1\nb = 2\n")
    assert msg.status == "success" and msg.content.startswith("Created pkg/sub/new.py (2 lines, 12 bytes)")
    assert (kit.root / "pkg/sub/new.py").read_text() == "a = 1\nb = 2\n"
    assert msg.artifact["created"] is True


def test_overwrite_requires_a_read_first(kit: Kit) -> None:
    (kit.root / "keep.txt").write_text("precious\n")
    refused = kit.call("write_file", file_path="keep.txt", content="gone\n")
    assert refused.status == "error" and "read it with read_file first" in refused.content
    assert (kit.root / "keep.txt").read_text() == "precious\n"
    kit.call("read_file", file_path="keep.txt")
    ok = kit.call("write_file", file_path="keep.txt", content="replaced\n")
    assert ok.content.startswith("Overwrote keep.txt")


def test_edit_of_a_never_read_file_is_refused(kit: Kit) -> None:
    (kit.root / "a.py").write_text("x = 1\n")
    msg = kit.call("edit_file", file_path="a.py", old_string="x = 1", new_string="x = 2")
    assert msg.status == "error" and "have not read a.py" in msg.content
    assert (kit.root / "a.py").read_text() == "x = 1\n"


def test_edit_of_a_file_changed_on_disk_since_read_is_refused(kit: Kit) -> None:
    path = kit.root / "a.py"
    path.write_text("x = 1\n")
    kit.call("read_file", file_path="a.py")
    path.write_text("x = 9\n")
    msg = kit.call("edit_file", file_path="a.py", old_string="x = 9", new_string="x = 2")
    assert msg.status == "error" and "changed on disk since you last read it" in msg.content
    assert path.read_text() == "x = 9\n"


def test_consecutive_edits_need_no_reread(kit: Kit) -> None:
    (kit.root / "a.py").write_text("a = 1\nb = 2\n")
    kit.call("read_file", file_path="a.py")
    assert kit.call("edit_file", file_path="a.py", old_string="a = 1", new_string="a = 10").status == "success"
    assert kit.call("edit_file", file_path="a.py", old_string="b = 2", new_string="b = 20").status == "success"
    assert (kit.root / "a.py").read_text() == "a = 10\nb = 20\n"


def test_ambiguous_old_string_reports_count_and_lines(kit: Kit) -> None:
    (kit.root / "d.py").write_text("pass\nx = 1\npass\npass\n")
    kit.call("read_file", file_path="d.py")
    msg = kit.call("edit_file", file_path="d.py", old_string="pass", new_string="return")
    assert msg.status == "error"
    assert "occurs 3 times in d.py (at lines 1, 3, 4)" in msg.content and "replace_all=true" in msg.content
    ok = kit.call("edit_file", file_path="d.py", old_string="pass", new_string="return", replace_all=True)
    assert "replaced 3 occurrences" in ok.content
    assert (kit.root / "d.py").read_text() == "return\nx = 1\nreturn\nreturn\n"


def test_missing_old_string_shows_the_closest_lines(kit: Kit) -> None:
    (kit.root / "c.py").write_text("def compute(a, b):\n    return a + b\n\n\ndef other():\n    pass\n")
    kit.call("read_file", file_path="c.py")
    msg = kit.call("edit_file", file_path="c.py", old_string="def compute(a, c):", new_string="def f():")
    assert msg.status == "error" and "was not found" in msg.content
    assert "     1\tdef compute(a, b):" in msg.content


def test_whitespace_only_mismatch_points_at_the_lines(kit: Kit) -> None:
    (kit.root / "w.py").write_text("if x:\n        y = 1\n")
    kit.call("read_file", file_path="w.py")
    msg = kit.call("edit_file", file_path="w.py", old_string="if x:\n    y = 1", new_string="if x:\n    y = 2")
    assert "matches lines 1-2 if whitespace is ignored" in msg.content


def test_edit_result_shows_a_numbered_snippet(kit: Kit) -> None:
    (kit.root / "s.py").write_text("".join(f"v{i} = {i}\n" for i in range(20)))
    kit.call("read_file", file_path="s.py")
    msg = kit.call("edit_file", file_path="s.py", old_string="v10 = 10", new_string="v10 = 'ten'")
    assert "first at line 11" in msg.content
    assert "    11\tv10 = 'ten'" in msg.content and "     8\tv7 = 7" in msg.content


def test_crlf_files_can_be_edited_with_lf_strings(kit: Kit) -> None:
    (kit.root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    kit.call("read_file", file_path="win.txt")
    msg = kit.call("edit_file", file_path="win.txt", old_string="one\ntwo", new_string="1\n2")
    assert msg.status == "success"
    assert (kit.root / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_empty_old_string_creates_a_file_but_never_clobbers_one(kit: Kit) -> None:
    msg = kit.call("edit_file", file_path="fresh.md", old_string="", new_string="# Title\n")
    assert msg.status == "success" and (kit.root / "fresh.md").read_text() == "# Title\n"
    msg = kit.call("edit_file", file_path="fresh.md", old_string="", new_string="other\n")
    assert msg.status == "error" and "use write_file" in msg.content


def test_identical_strings_and_binary_files_are_refused(kit: Kit) -> None:
    (kit.root / "b.bin").write_bytes(b"\xff\xfe\x00bad")
    assert "identical" in kit.call("edit_file", file_path="b.bin", old_string="a", new_string="a").content
    kit.ctx.read_state.record_write(kit.root / "b.bin", None)
    from mtagent.tools.read_state import stamp_of_open

    with (kit.root / "b.bin").open("rb") as fh:
        stamp = stamp_of_open(fh, os.fstat(fh.fileno()))
    kit.ctx.read_state.record_read(kit.root / "b.bin", "x", offset=None, limit=None, stamp=stamp, start_line=1,
                                   num_lines=1)
    assert "not valid UTF-8" in kit.call("edit_file", file_path="b.bin", old_string="bad", new_string="ok").content


def test_write_marks_earlier_reads_stale(kit: Kit) -> None:
    (kit.root / "r.txt").write_text("v1\n")
    first = kit.call("read_file", file_path="r.txt")
    written = kit.call("write_file", file_path="r.txt", content="v2\n")
    assert written.artifact["stale_reads"] == [first.tool_call_id]
    assert [r.tool_call_id for r in kit.ctx.read_state.recent_reads()] == [first.tool_call_id]


def test_write_under_a_path_that_is_a_file_names_the_blocking_file(kit: Kit) -> None:
    (kit.root / "notes").write_text("x")
    msg = kit.call("write_file", file_path="notes/sub/a.txt", content="y")
    assert msg.status == "error"
    assert "notes is a file, so it cannot hold notes/sub/a.txt" in msg.content
