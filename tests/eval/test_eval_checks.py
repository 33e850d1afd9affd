"""Checks run in the workspace with a time limit that kills the whole process group (#29)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mtagent.eval.checks import run_command


def test_exit_code_decides_and_output_is_kept(tmp_path: Path) -> None:
    (tmp_path / "answer.txt").write_text("42\n")
    ok = run_command("grep -qx 42 answer.txt && echo yes", tmp_path, 10)
    assert ok.ok and ok.exit_code == 0 and "yes" in ok.output
    bad = run_command("echo nope >&2; exit 3", tmp_path, 10)
    assert not bad.ok and bad.exit_code == 3 and "nope" in bad.output


def test_a_hanging_check_is_killed_with_its_children(tmp_path: Path) -> None:
    start = time.monotonic()
    outcome = run_command("sleep 60 & echo $! > child.pid; wait", tmp_path, 1.0)
    assert outcome.timed_out and not outcome.ok and outcome.exit_code is None
    assert time.monotonic() - start < 10
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not _running(child):
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the check's child {child} outlived the time limit")


def _running(pid: int) -> bool:
    """Alive and not a zombie: a killed child re-parented to a PID 1 that reaps late (a container's
    init) stays visible to ``kill(pid, 0)`` as a zombie though it runs nothing."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
