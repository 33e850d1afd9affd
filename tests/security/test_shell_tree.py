"""A shell call's whole process tree ends with the call (issue #13): setsid children, daemons,
timeouts, and a SIGKILL of mtagent itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from interrupts import alive

from mtagent.tools.shell import run_command

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process-tree containment is Linux-only")


def _wait_pid(pidfile: Path, seconds: float = 5.0) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = pidfile.read_text().strip() if pidfile.exists() else ""
        if text:
            return int(text)
        time.sleep(0.02)
    raise AssertionError(f"{pidfile} never written")


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


ESCAPES = {
    "setsid": "setsid sh -c 'echo $$ > {pf}; exec sleep 300' > /dev/null 2>&1 &",
    "double_fork": "( ( setsid sh -c 'echo $$ > {pf}; exec sleep 300' > /dev/null 2>&1 & ) & )",
    "nohup": "nohup setsid sh -c 'echo $$ > {pf}; exec sleep 300' > /dev/null 2>&1 &",
}

# issue #27: a descendant that clears its environment (no marker), leaves group and session, and
# is orphaned at once (`setsid -f`) was re-parented to mtagent and outlived the call.
CLEARED = {
    "env_i_setsid_f": "env -i setsid -f sh -c 'echo $$ > {pf}; exec sleep 300'",
    "env_i_setsid_f_quiet": "env -i setsid -f sh -c 'echo $$ > {pf}; exec sleep 300' > /dev/null 2>&1",
    "env_i_double_fork": "env -i sh -c '( setsid sh -c \"echo \\$\\$ > {pf}; exec sleep 300\" > /dev/null 2>&1 & )'",
}
LEAVERS = {**ESCAPES, **CLEARED}


@pytest.mark.parametrize("how", list(LEAVERS))
def test_children_that_leave_the_group_do_not_outlive_the_call(tmp_path: Path, how: str) -> None:
    pf = tmp_path / "pid"
    command = LEAVERS[how].format(pf=pf) + f"\nwhile [ ! -s {pf} ]; do sleep 0.02; done; echo started"
    run = run_command(command, str(tmp_path), timeout=20, max_capture_bytes=1 << 20, kill_grace=1)
    assert "started" in run["output"] and run["exit_code"] == 0, run
    pid = _wait_pid(pf)
    assert _gone_within(pid, 3), f"{how}: pid {pid} outlived the call"


def test_children_that_leave_the_group_do_not_outlive_a_timeout(tmp_path: Path) -> None:
    pf = tmp_path / "pid"
    command = ESCAPES["setsid"].format(pf=pf) + "\nsleep 60"
    run = run_command(command, str(tmp_path), timeout=1.0, max_capture_bytes=1 << 20, kill_grace=0.5)
    assert run["timed_out"]
    assert _gone_within(_wait_pid(pf), 3)


def test_shell_children_die_when_mtagent_is_sigkilled(tmp_path: Path) -> None:
    pf_group, pf_escaped = tmp_path / "group", tmp_path / "escaped"
    command = (f"sh -c 'echo $$ > {pf_group}; exec sleep 300' & "
               + ESCAPES["setsid"].format(pf=pf_escaped) + "\nsleep 300")
    script = ("import sys; from mtagent.tools.shell import run_command; "
              f"run_command(sys.argv[1], {str(tmp_path)!r}, timeout=300, max_capture_bytes=1<<20, kill_grace=1)")
    agent = subprocess.Popen([sys.executable, "-c", script, command], start_new_session=True)
    try:
        in_group, escaped = _wait_pid(pf_group, 15), _wait_pid(pf_escaped, 15)
        os.kill(agent.pid, signal.SIGKILL)
        agent.wait()
        assert _gone_within(in_group, 5), "a child in the shell's group survived mtagent's SIGKILL"
        assert _gone_within(escaped, 5), "a setsid child survived mtagent's SIGKILL"
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()


def test_the_runner_keeps_exit_codes_signals_and_late_background_output(tmp_path: Path) -> None:
    assert run_command("exit 7", str(tmp_path), timeout=10, max_capture_bytes=1 << 20, kill_grace=1)["exit_code"] == 7
    killed = run_command("kill -TERM $$", str(tmp_path), timeout=10, max_capture_bytes=1 << 20, kill_grace=1)
    assert killed["exit_code"] == -signal.SIGTERM
    late = run_command("(sleep 0.2; echo late) & echo now", str(tmp_path), timeout=10, max_capture_bytes=1 << 20,
                       kill_grace=1)
    assert late["output"].split() == ["now", "late"] and late["duration_s"] < 5


def test_a_timed_out_command_gets_part_of_the_grace_to_clean_up(tmp_path: Path) -> None:
    done = tmp_path / "cleaned"
    command = f"trap 'sleep 0.3; echo bye > {done}; exit 3' TERM; echo ready; while :; do sleep 0.05; done"
    run = run_command(command, str(tmp_path), timeout=1.0, max_capture_bytes=1 << 20, kill_grace=2.0)
    assert run["timed_out"] and done.read_text().strip() == "bye"
