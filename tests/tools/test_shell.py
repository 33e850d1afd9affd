"""shell: bounded memory for huge output, bounded time with process-group kill."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest

from mtagent.config import Settings
from mtagent.tools.shell import BoundedCapture, run_command

from .conftest import Kit


# These tests read the command's pids on the host: outside the sandbox's pid namespace
# (tests/tools/test_sandbox.py has the same tests inside it).
UNCONFINED = {"mode": "off"}


def _gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z":
            return True  # a zombie is dead; only its exit status is left
        time.sleep(0.05)
    return False


def test_runs_in_workspace_root_with_merged_output_and_exit_code(kit: Kit) -> None:
    msg = kit.call("shell", command="pwd; echo out; echo err >&2; exit 3")
    assert msg.status == "success"
    assert msg.content == f"{kit.root}\nout\nerr\n[exit code 3]"
    assert msg.artifact["exit_code"] == 3 and msg.artifact["timed_out"] is False


def test_100_mb_of_output_is_captured_in_bounded_memory(kit: Kit) -> None:
    """Default settings: a 16 MB capture; the whole call (capture, budget, artifact) stays < 100 MB."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        msg = kit.call("shell", command="yes 'a line of build output' | head -c 100000000; echo; echo DONE")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 20
    assert peak < 100_000_000, f"peak Python memory {peak:,} bytes"
    assert msg.artifact["output_bytes"] == 100_000_000 + len("\nDONE\n")
    assert msg.artifact["capture_omitted_bytes"] == 100_000_006 - Settings().shell.max_capture_bytes
    assert msg.artifact["exit_code"] == 0
    # the model sees a bounded preview; the kept capture (head + tail) is in the artifact
    assert msg.content.startswith('<persisted-output tool="shell"')
    assert len(msg.content) < 6_000
    saved = kit.artifacts.read_text(msg.artifact["artifact"])
    assert "omitted from the middle of the output" in saved and saved.rstrip().endswith("[exit code 0]")
    assert "DONE" in msg.content  # the tail survives both the capture and the preview


def test_a_small_capture_limit_is_honoured(make_kit) -> None:
    kit = make_kit(Settings.model_validate({"shell": {"max_capture_bytes": 1000}}))
    msg = kit.call("shell", command="seq 1 100000")
    assert msg.artifact["capture_omitted_bytes"] == msg.artifact["output_bytes"] - 1000
    assert msg.artifact["original_chars"] < 1300


def test_timeout_kills_the_whole_process_group(make_kit) -> None:
    kit = make_kit(Settings.model_validate({"shell": {"kill_grace_seconds": 0.5}, "sandbox": UNCONFINED}))
    started = time.monotonic()
    msg = kit.call("shell", command="sleep 30 & echo $! > child.pid; echo started; sleep 30", timeout=1)
    elapsed = time.monotonic() - started
    assert elapsed < 5
    assert msg.artifact["timed_out"] is True
    assert "started" in msg.content and "[Timed out after 1s" in msg.content
    assert _gone(int((kit.root / "child.pid").read_text()))


def test_a_command_ignoring_sigterm_is_killed_after_the_grace(make_kit) -> None:
    kit = make_kit(Settings.model_validate({"shell": {"kill_grace_seconds": 0.3}, "sandbox": UNCONFINED}))
    started = time.monotonic()
    msg = kit.call("shell", command="trap '' TERM; echo $$ > me.pid; sleep 30", timeout=0.5)
    assert time.monotonic() - started < 4
    assert msg.artifact["timed_out"] is True
    assert _gone(int((kit.root / "me.pid").read_text()))


def test_background_children_do_not_keep_the_call_alive(make_kit) -> None:
    kit = make_kit(Settings.model_validate({"sandbox": UNCONFINED}))
    started = time.monotonic()
    msg = kit.call("shell", command="sleep 30 & echo $! > bg.pid; echo quick")
    assert time.monotonic() - started < 3
    assert msg.content == "quick\n[exit code 0]"
    assert _gone(int((kit.root / "bg.pid").read_text()))


def test_requested_timeout_is_capped(make_kit) -> None:
    kit = make_kit(Settings.model_validate({"shell": {"max_timeout_seconds": 2}}))
    msg = kit.call("shell", command="true", timeout=999)
    assert "[timeout 999s was capped at 2s]" in msg.content and msg.artifact["timeout_s"] == 2


def test_empty_command_is_an_error(kit: Kit) -> None:
    assert kit.call("shell", command="   ").status == "error"


def test_bounded_capture_keeps_head_and_rolling_tail() -> None:
    cap = BoundedCapture(10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qrstuvwxyz"):
        cap.feed(chunk)
    assert cap.total == 26 and bytes(cap.head) == b"abcde"
    text = cap.text()
    assert text.startswith("abcde\n... [") and text.endswith("\nvwxyz") and cap.omitted == 16


@pytest.mark.parametrize("colour", ["\x1b[31mred\x1b[0m"])
def test_ansi_colour_codes_are_stripped(tmp_path: Path, colour: str) -> None:
    run = run_command(f"printf '{colour}'", str(tmp_path), timeout=5, max_capture_bytes=1000, kill_grace=0.1)
    assert run["output"] == "red"


def test_quick_commands_without_output_all_report_exit_zero(kit: Kit) -> None:
    (kit.root / "a").write_text("x")
    codes = [kit.call("shell", command=f"mkdir -p d{i} && cp a d{i}/b").artifact["exit_code"] for i in range(50)]
    assert codes == [0] * 50


def test_a_command_that_closes_its_output_early_is_waited_for_not_killed(tmp_path: Path) -> None:
    run = run_command("exec >&- 2>&-; sleep 0.3; exit 3", str(tmp_path), timeout=10,
                      max_capture_bytes=1000, kill_grace=0.5)
    assert (run["exit_code"], run["timed_out"]) == (3, False)


def test_a_command_that_closes_its_output_and_hangs_still_times_out(tmp_path: Path) -> None:
    started = time.monotonic()
    run = run_command("exec >&- 2>&-; sleep 30 & echo $! > child.pid; sleep 30", str(tmp_path), timeout=1,
                      max_capture_bytes=1000, kill_grace=0.3)
    assert time.monotonic() - started < 5
    assert run["timed_out"] is True and run["exit_code"] == -15
    assert _gone(int((tmp_path / "child.pid").read_text()))
