"""``file_unchanged`` only for the same file, the same range and the same content on disk.

A planted bug matched a re-read on the offset alone: the same offset with a larger limit got the
stub, and the model never saw the extra lines.
"""

from __future__ import annotations

import os
from pathlib import Path

from mtagent.tools.read_state import FileStamp, ReadState, stamp_of_open

from .conftest import Kit

STAMP = FileStamp(mtime_ns=1_000, size=10, digest="d")


def _state_with_one_read(path: Path, offset: int | None, limit: int | None) -> ReadState:
    state = ReadState()
    state.record_read(path, "call_1", offset=offset, limit=limit, stamp=STAMP, start_line=1, num_lines=10)
    return state


def test_only_the_identical_read_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    state = _state_with_one_read(path, 1, 10)
    assert state.unchanged_read(path, 1, 10, STAMP) is not None
    assert state.unchanged_read(path, 1, 20, STAMP) is None  # same offset, more lines
    assert state.unchanged_read(path, 1, 5, STAMP) is None
    assert state.unchanged_read(path, 1, None, STAMP) is None
    assert state.unchanged_read(path, 2, 10, STAMP) is None
    assert state.unchanged_read(tmp_path / "g.txt", 1, 10, STAMP) is None
    assert state.unchanged_read(path, 1, 10, FileStamp(mtime_ns=2_000, size=10, digest="d")) is None


def test_a_stale_or_forgotten_read_is_not_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    state = _state_with_one_read(path, None, None)
    state.forget({"call_1"})
    assert state.unchanged_read(path, None, None, STAMP) is None
    state = _state_with_one_read(path, None, None)
    state.record_write(path, STAMP)
    assert state.unchanged_read(path, None, None, STAMP) is None


def test_read_file_with_the_same_offset_and_a_larger_limit_returns_the_lines(kit: Kit) -> None:
    (kit.root / "f.txt").write_text("".join(f"row {i}\n" for i in range(1, 31)))
    kit.call("read_file", file_path="f.txt", offset=1, limit=10)
    wider = kit.call("read_file", file_path="f.txt", offset=1, limit=20)
    assert not wider.content.startswith("file_unchanged")
    assert "    20\trow 20" in wider.content and "    21\t" not in wider.content
    narrower = kit.call("read_file", file_path="f.txt", offset=1, limit=5)
    assert not narrower.content.startswith("file_unchanged") and "row 6" not in narrower.content


# ── checks that kill read-state mutants that survived (docs/mutation.md) ────────────────────────────

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


def test_files_up_to_16_mib_are_hashed_and_larger_ones_are_not(tmp_path: Path) -> None:
    """The digest tells two quick writes apart; past 16 MiB mtime+size must do (hashing would stall)."""
    edge = tmp_path / "edge.bin"
    with edge.open("wb") as fh:
        fh.truncate(16 * 1024 * 1024)  # sparse: cheap to create
    with edge.open("rb") as fh:
        assert stamp_of_open(fh, os.fstat(fh.fileno())).digest is not None
    with edge.open("ab") as fh:
        fh.write(b"x")
    with edge.open("rb") as fh:
        assert stamp_of_open(fh, os.fstat(fh.fileno())).digest is None
