"""Tests that kill read-state mutants that survived (see docs/mutation.md)."""

from __future__ import annotations

from pathlib import Path

from mtagent.tools.read_state import FileStamp, ReadState, file_stamp

STAMP = FileStamp(mtime_ns=1_000, size=10, digest="d")


def test_editable_only_after_a_read_of_the_current_content(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    state = ReadState()
    assert "have not read" in (state.check_editable(path, STAMP) or "")
    state.record_read(path, "c1", offset=None, limit=None, stamp=STAMP, start_line=1, num_lines=1)
    assert state.check_editable(path, STAMP) is None
    changed = FileStamp(mtime_ns=2_000_000_000, size=11, digest="e")
    assert "changed on disk" in (state.check_editable(path, changed) or "")


def test_a_write_the_agent_made_is_known_and_a_deletion_forgets_the_file(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    state = ReadState()
    state.record_read(path, "c1", offset=None, limit=None, stamp=STAMP, start_line=1, num_lines=1)
    written = FileStamp(mtime_ns=3_000, size=12, digest="w")
    assert [r.tool_call_id for r in state.record_write(path, written)] == ["c1"]
    assert state.check_editable(path, written) is None  # the agent knows what it wrote
    assert state.record_write(path, written) == []  # already stale: not reported twice
    state.record_write(path, None)  # the file was deleted
    assert "have not read" in (state.check_editable(path, written) or "")


def test_file_stamp_of_a_missing_file_is_none(tmp_path: Path) -> None:
    assert file_stamp(tmp_path / "missing.txt") is None
    (tmp_path / "here.txt").write_text("x")
    assert file_stamp(tmp_path / "here.txt") is not None


def test_files_up_to_16_mib_are_hashed_and_larger_ones_are_not(tmp_path: Path) -> None:
    """The digest tells two quick writes apart; past 16 MiB mtime+size must do (hashing would stall)."""
    edge = tmp_path / "edge.bin"
    with edge.open("wb") as fh:
        fh.truncate(16 * 1024 * 1024)  # sparse: cheap to create
    stamp = file_stamp(edge)
    assert stamp is not None and stamp.digest is not None
    with edge.open("ab") as fh:
        fh.write(b"x")
    stamp = file_stamp(edge)
    assert stamp is not None and stamp.digest is None
