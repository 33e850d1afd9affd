"""read_file (spec 000 M3): limits, paging with line numbers, file_unchanged, stale reads."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mtagent.config import Settings

from .conftest import Kit


def write_lines(path: Path, count: int, width: int = 20) -> None:
    path.write_text("".join(f"line {i:06d} " + "x" * width + "\n" for i in range(1, count + 1)))


def test_big_file_without_range_is_a_clear_error_with_paging_advice(kit: Kit) -> None:
    write_lines(kit.root / "big.log", 20_000)  # ~640 KB
    msg = kit.call("read_file", file_path="big.log")
    assert msg.status == "error"
    assert "big.log is 644.5 KB (20,000 lines), over the 256.0 KB limit" in msg.content
    assert 'read_file(file_path="big.log", offset=1, limit=2000)' in msg.content
    assert "offset=2001" in msg.content


def test_paged_reads_carry_line_numbers_and_say_how_to_continue(kit: Kit) -> None:
    write_lines(kit.root / "big.log", 20_000)
    msg = kit.call("read_file", file_path="big.log", offset=101, limit=3)
    assert msg.status == "success"
    lines = msg.content.splitlines()
    assert lines[:3] == [f"   {n}\tline {n:06d} " + "x" * 20 for n in (101, 102, 103)]
    assert "[Showing lines 101-103 of 20,000. Continue with offset=104.]" in msg.content
    tur = msg.artifact
    assert (tur["file_path"], tur["start_line"], tur["num_lines"], tur["total_lines"]) == ("big.log", 101, 3, 20_000)
    assert tur["content"] == "\n".join(f"line {n:06d} " + "x" * 20 for n in (101, 102, 103))
    assert tur["mtime"] == os.stat(kit.root / "big.log").st_mtime_ns / 1e9


def test_start_and_end_line_are_accepted_as_a_range(kit: Kit) -> None:
    write_lines(kit.root / "f.txt", 50)
    msg = kit.call("read_file", file_path="f.txt", start_line=10, end_line=12)
    assert [line.split("\t")[0].strip() for line in msg.content.splitlines()[:3]] == ["10", "11", "12"]
    assert msg.artifact["num_lines"] == 3
    bad = kit.call("read_file", file_path="f.txt", start_line=5, limit=2)
    assert bad.status == "error" and "not both" in bad.content


def test_small_file_is_read_whole(kit: Kit) -> None:
    (kit.root / "a.py").write_text("import os\n\nprint(os.name)\n")
    msg = kit.call("read_file", file_path="a.py")
    assert msg.content == "     1\timport os\n     2\t\n     3\tprint(os.name)"
    assert msg.artifact["total_lines"] == 3


def test_same_range_and_mtime_returns_file_unchanged(kit: Kit) -> None:
    write_lines(kit.root / "f.txt", 30)
    first = kit.call("read_file", file_path="f.txt", offset=1, limit=10)
    again = kit.call("read_file", file_path="f.txt", offset=1, limit=10)
    assert again.content.startswith("file_unchanged: f.txt (lines 1-10)")
    assert first.tool_call_id in again.content
    assert again.artifact["kind"] == "file_unchanged"
    other_range = kit.call("read_file", file_path="f.txt", offset=11, limit=10)
    assert other_range.content.startswith("    11\t")


def test_changed_file_is_read_again_not_stubbed(kit: Kit) -> None:
    path = kit.root / "f.txt"
    path.write_text("one\n")
    kit.call("read_file", file_path="f.txt")
    path.write_text("two\n")  # same size, maybe the same mtime tick: the digest tells them apart
    msg = kit.call("read_file", file_path="f.txt")
    assert msg.content == "     1\ttwo"


def test_edit_marks_earlier_read_stale(kit: Kit) -> None:
    (kit.root / "m.py").write_text("x = 1\ny = 2\n")
    read = kit.call("read_file", file_path="m.py")
    state = kit.ctx.read_state
    edit = kit.call("edit_file", file_path="m.py", old_string="y = 2", new_string="y = 3")
    assert edit.status == "success"
    assert "1 earlier read(s) of this file are now out of date" in edit.content
    assert edit.artifact["stale_reads"] == [read.tool_call_id]
    # the stale read is no longer answered with a stub
    reread = kit.call("read_file", file_path="m.py")
    assert reread.content == "     1\tx = 1\n     2\ty = 3"
    [recent] = state.recent_reads()
    assert recent.path == str(kit.root / "m.py") and recent.tool_call_id == reread.tool_call_id


def test_external_change_makes_a_read_not_current(kit: Kit) -> None:
    path = kit.root / "ext.txt"
    path.write_text("a\n")
    kit.call("read_file", file_path="ext.txt")
    path.write_text("b\n")
    edit = kit.call("edit_file", file_path="ext.txt", old_string="b", new_string="c")
    assert edit.status == "error" and "changed on disk since you last read it" in edit.content
    assert kit.call("read_file", file_path="ext.txt").content == "     1\tb"  # the new content, not a stub


def test_forgotten_reads_are_returned_in_full_again(kit: Kit) -> None:
    (kit.root / "f.txt").write_text("hello\n")
    read = kit.call("read_file", file_path="f.txt")
    assert kit.ctx.read_state.forget({read.tool_call_id}) == 1
    assert kit.call("read_file", file_path="f.txt").content == "     1\thello"


def test_binary_file_gets_a_clear_message(kit: Kit) -> None:
    (kit.root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    msg = kit.call("read_file", file_path="img.png")
    assert msg.status == "error" and "a PNG image" in msg.content and "not text" in msg.content
    (kit.root / "blob.bin").write_bytes(b"abc\x00def")
    assert "binary data" in kit.call("read_file", file_path="blob.bin").content


def test_undecodable_bytes_become_replacement_chars_with_a_note(kit: Kit) -> None:
    (kit.root / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    msg = kit.call("read_file", file_path="latin.txt")
    assert msg.status == "success"
    assert "caf\ufffd" in msg.content
    assert "not valid UTF-8" in msg.content


def test_token_limit_applies_to_reads_under_the_size_limit(make_kit) -> None:
    kit = make_kit(Settings.model_validate({"read_file": {"max_tokens": 500}}))
    write_lines(kit.root / "t.txt", 400)
    msg = kit.call("read_file", file_path="t.txt")
    assert msg.status == "error"
    assert "over the 500-token read limit" in msg.content and "limit=" in msg.content


def test_missing_file_suggests_close_names(kit: Kit) -> None:
    (kit.root / "config.yaml").write_text("a: 1\n")
    msg = kit.call("read_file", file_path="config.yml")
    assert msg.status == "error" and "Did you mean: config.yaml?" in msg.content
    assert "is a folder" in kit.call("read_file", file_path=".").content


def test_offset_past_end_and_empty_file(kit: Kit) -> None:
    (kit.root / "e.txt").write_text("")
    assert kit.call("read_file", file_path="e.txt").content == "e.txt is empty (0 lines)."
    (kit.root / "s.txt").write_text("a\nb\n")
    msg = kit.call("read_file", file_path="s.txt", offset=10)
    assert msg.status == "error" and "has 2 lines" in msg.content


def test_long_lines_are_cut(make_kit) -> None:
    kit = make_kit(Settings.model_validate({"read_file": {"max_line_chars": 50}}))
    (kit.root / "min.js").write_text("a" * 5000 + "\n")
    msg = kit.call("read_file", file_path="min.js")
    assert "[line cut: 5,000 chars]" in msg.content and len(msg.content) < 200


def test_huge_file_paging_is_streamed_quickly(kit: Kit) -> None:
    path = kit.root / "huge.txt"
    with path.open("w") as fh:
        for i in range(1, 1_000_001):
            fh.write(f"{i}\n")
    started = time.monotonic()
    msg = kit.call("read_file", file_path="huge.txt", offset=999_998, limit=10)
    assert time.monotonic() - started < 5
    assert msg.artifact["total_lines"] == 1_000_000
    assert msg.content.splitlines()[:3] == ["999998\t999998", "999999\t999999", "1000000\t1000000"]


def test_recent_reads_are_oldest_first_one_per_file(kit: Kit) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (kit.root / name).write_text(name + "\n")
    kit.call("read_file", file_path="a.txt")
    kit.call("read_file", file_path="b.txt")
    kit.call("read_file", file_path="c.txt")
    kit.call("read_file", file_path="a.txt", offset=1, limit=1)  # a is now the newest read
    state = kit.ctx.read_state
    assert [r.path.rsplit("/", 1)[1] for r in state.recent_reads()] == ["b.txt", "c.txt", "a.txt"]


def test_reads_cleared_by_microcompact_or_a_compaction_are_returned_in_full_again(make_kit) -> None:
    from mtagent.events import EventBus, EventType

    bus = EventBus()
    kit = make_kit(events=bus)
    (kit.root / "f.txt").write_text("hello\n")
    first = kit.call("read_file", file_path="f.txt")
    assert kit.call("read_file", file_path="f.txt").content.startswith("file_unchanged")
    bus.emit(EventType.MICRO_COMPACTED, trigger="time", cleared_ids=[first.id])
    second = kit.call("read_file", file_path="f.txt")
    assert second.content == "     1\thello"
    assert kit.call("read_file", file_path="f.txt").content.startswith("file_unchanged")
    bus.emit(EventType.COMPACT_BOUNDARY, id="b1", trigger="auto")
    assert kit.call("read_file", file_path="f.txt").content == "     1\thello"


def test_read_file_refuses_a_named_pipe_instead_of_blocking(kit: Kit) -> None:
    os.mkfifo(kit.root / "pipe")
    msg = kit.call("read_file", file_path="pipe")
    assert msg.status == "error" and "not a regular file" in msg.content


def test_an_unreadable_file_reports_the_real_reason(kit: Kit, monkeypatch) -> None:
    (kit.root / "secret.txt").write_text("x\n")
    real = os.open

    def denied(path, *args, **kwargs):  # tests run as root, so chmod cannot deny a read
        if os.fspath(path).endswith("secret.txt"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    msg = kit.call("read_file", file_path="secret.txt")
    assert msg.status == "error" and "Permission denied" in msg.content and "()" not in msg.content
