"""Bounded resources (issue #13): paging a 5 GB file streams, edit_file refuses huge files."""

from __future__ import annotations

import resource
import time
from pathlib import Path

from tools.conftest import Kit

from mtagent.config import Settings


def test_paging_a_sparse_5gb_file_stays_small_and_fast(project: Path) -> None:
    kit = Kit(project)
    big = project / "huge.log"
    with big.open("wb") as fh:
        fh.write(b"".join(f"line {i}\n".encode() for i in range(1, 20001)))
        fh.truncate(5 * 1024**3)  # sparse: 5 GB without the disk
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    msg = kit.call("read_file", file_path="huge.log", offset=10, limit=5)
    elapsed = time.monotonic() - started
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert msg.status == "success", msg.content
    assert "    10\tline 10" in msg.content and "    14\tline 14" in msg.content
    assert "Continue with offset=15" in msg.content
    assert grown_mb < 300, f"paging grew memory by {grown_mb:.0f} MB"
    assert elapsed < 20
    whole = kit.call("read_file", file_path="huge.log")
    assert whole.status == "error" and "Read it in pages" in whole.content


def test_a_long_line_in_a_page_is_cut_without_loading_it_whole(project: Path) -> None:
    kit = Kit(project)
    (project / "wide.txt").write_bytes(b"head\n" + b"x" * (30 * 1024 * 1024) + b"\ntail\n")
    msg = kit.call("read_file", file_path="wide.txt", offset=1, limit=3)
    assert msg.status == "success", msg.content[:300]
    assert "line cut: 31,457,280 bytes" in msg.content and "     3\ttail" in msg.content


def test_edit_file_refuses_a_file_over_the_cap_with_a_clear_message(project: Path) -> None:
    kit = Kit(project, Settings.model_validate({"read_file": {"edit_max_bytes": 10_000}}))
    (project / "big.txt").write_text("".join(f"row {i}\n" for i in range(5000)))
    assert kit.call("read_file", file_path="big.txt", offset=1, limit=5).status == "success"
    msg = kit.call("edit_file", file_path="big.txt", old_string="row 1\n", new_string="ROW 1\n")
    assert msg.status == "error" and "edit_max_bytes" in msg.content and "sed -i" in msg.content
