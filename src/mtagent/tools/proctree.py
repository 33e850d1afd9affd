"""Contain a shell call's whole process tree: nothing it starts outlives the call or mtagent.

A command can leave its process group (``setsid``, double forks, daemons), so killing the group
is not enough. Four layers, Linux-first:

* **Runner.** The call's leader is :mod:`~mtagent.tools.shell_runner` (:func:`contained`): a
  child subreaper that runs the shell as its child, so whatever the command orphans is
  re-parented to it — even ``env -i setsid -f sleep 100``, which clears the marker and leaves
  the group and session — and is SIGKILLed when the command ends (after a short drain) or when
  the call is stopped.
* **Marker.** Every call runs with ``MTAGENT_SHELL_CALL=<random id>`` in its environment, which
  every descendant inherits. At the end of the call (and on timeout) every process whose
  environment carries the id, or whose parent chain leads to the shell, is SIGKILLed — repeated
  until none is left, so a process forking while we kill is caught too.
* **Child subreaper.** mtagent marks itself ``PR_SET_CHILD_SUBREAPER``, so an orphaned
  descendant is re-parented to mtagent rather than to init; it stays visible and is reaped.
* **Watchdog.** A tiny ``sh`` beside the call waits on a pipe from mtagent; if mtagent dies
  (even by SIGKILL) the pipe closes and the watchdog kills the call's process group and every
  marked process. The shell's leader also gets ``PR_SET_PDEATHSIG`` = SIGKILL.

Limits: a descendant that clears its environment *and* leaves the process group *and* is handed
to another subreaper of its own making cannot be found; on systems without ``/proc`` and
``prctl`` only the process group is killed. This is containment of a
command's processes, not a sandbox (docs/security.md).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

MARKER_ENV = "MTAGENT_SHELL_CALL"
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_KILL_ROUNDS = 20
_WATCHDOG = (
    'read _; kill -KILL -- "-$1" 2>/dev/null; '
    'for f in /proc/[0-9]*/environ; do '
    'if grep -qa "' + MARKER_ENV + '=$2" "$f" 2>/dev/null; then p=${f#/proc/}; kill -KILL "${p%/environ}" 2>/dev/null; fi; '
    'done'
)
_subreaper_done = False
RUNNER = Path(__file__).with_name("shell_runner.py")
RUNNER_DRAIN_SECONDS = 0.5  # what is left after the command may finish writing this long


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Mark this process a child subreaper (once); False where unsupported."""
    global _subreaper_done
    if not _subreaper_done:
        _subreaper_done = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    return _subreaper_done


def contained(argv: list[str], grace: float = 1.0, bridge: str | None = None) -> list[str]:
    """``argv`` run under the subreaper runner (where ``/proc`` and ``prctl`` exist), else as is.
    ``grace``: the call's kill grace (the runner lets a stopped command use half of it); ``bridge``:
    in a sandbox, the proxy's unix socket the runner relays a loopback port to."""
    if not sys.platform.startswith("linux") or not Path("/proc/self/stat").exists() or not RUNNER.is_file():
        return argv
    relay = ["--bridge", bridge] if bridge else []
    return [sys.executable, "-I", "-S", str(RUNNER), *relay, str(RUNNER_DRAIN_SECONDS), str(grace), *argv]


def die_with_parent() -> None:
    """``preexec_fn`` for the shell: SIGKILL it when mtagent dies."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def new_marker() -> str:
    return secrets.token_hex(12)


def start_watchdog(pgid: int, marker: str) -> subprocess.Popen[bytes] | None:
    """The process that kills the call's tree if mtagent dies; close its stdin to fire it."""
    if not Path("/proc").is_dir():
        return None
    env = {k: v for k, v in os.environ.items() if k != MARKER_ENV}
    with contextlib.suppress(OSError):
        return subprocess.Popen(["/bin/sh", "-c", _WATCHDOG, "watchdog", str(pgid), marker],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    return None


def stop_watchdog(watchdog: subprocess.Popen[bytes] | None) -> None:
    """Fire the watchdog (it sweeps once more) and reap it."""
    if watchdog is None:
        return
    with contextlib.suppress(OSError, ValueError):
        assert watchdog.stdin is not None
        watchdog.stdin.close()
    try:
        watchdog.wait(timeout=5)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()


def kill_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """Stop ``proc``'s process group: SIGTERM, up to ``grace`` seconds for the leader to end, then
    SIGKILL for whatever of the group is left (a child that ignores SIGTERM, or the leader itself).
    Reaping the leader is the caller's (it holds the pipe)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        if sig == signal.SIGTERM:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):  # the leader is gone; the group too
                os.killpg(proc.pid, signal.SIGKILL)
            return


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        return int(stat[stat.rindex(b")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _has_marker(pid: int, needle: bytes) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def tree_pids(root_pid: int, marker: str) -> set[int]:
    """Live processes of the call: descendants of ``root_pid`` and every process carrying the marker."""
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return set()
    needle = f"{MARKER_ENV}={marker}".encode() + b"\0"
    me = os.getpid()
    parents = {pid: _ppid(pid) for pid in pids}
    found = {pid for pid in pids if pid != me and _has_marker(pid, needle)}
    if root_pid in parents:
        found.add(root_pid)
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in found and pid not in found and pid != me:
                found.add(pid)
                grew = True
    return found


def kill_tree(root_pid: int, marker: str) -> int:
    """SIGKILL every process of the call until none is left; reap those re-parented to us."""
    killed: set[int] = set()
    for _ in range(_KILL_ROUNDS):
        alive = tree_pids(root_pid, marker) - killed_and_gone(killed)
        alive.discard(root_pid)  # the leader is the caller's Popen to reap
        if not alive:
            break
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        _reap(killed)
    _reap(killed)
    return len(killed)


def killed_and_gone(killed: set[int]) -> set[int]:
    """Killed processes that are now zombies (dead, not yet reaped by their parent)."""
    gone = set()
    for pid in killed:
        try:
            state = Path(f"/proc/{pid}/stat").read_bytes()
            if state[state.rindex(b")") + 2:].split()[0] == b"Z":
                gone.add(pid)
        except (OSError, ValueError, IndexError):
            gone.add(pid)
    return gone


def _reap(killed: set[int]) -> None:
    """Reap the killed processes that were re-parented to us (we are their subreaper); only
    pids we killed, so another tool's child is never reaped behind its Popen's back."""
    me = os.getpid()
    for pid in killed:
        if _ppid(pid) == me:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
