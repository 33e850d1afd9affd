"""The leader of one shell call: a child subreaper that ends everything the command started.

Run as ``python -I -S shell_runner.py DRAIN_SECONDS ARGV...`` (stdlib only: it runs without
site-packages). It marks itself ``PR_SET_CHILD_SUBREAPER`` and runs ``ARGV`` as its child, so
every process the command orphans — ``env -i setsid -f sleep 100``, a double fork, a daemon —
is re-parented to this runner instead of escaping to mtagent or init, whatever it did to its
environment, session or process group. When the command exits, the runner lets what is left
finish writing for up to ``DRAIN_SECONDS`` (a background job's last lines), then SIGKILLs every
process it holds, repeatedly until none is left (a killed process's own orphans come to it too),
and exits with the command's status (a signal death is mirrored). SIGTERM/SIGINT/SIGHUP — the
call's timeout, or mtagent dying (``PR_SET_PDEATHSIG``) — sweep the same way first.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_SWEEP_ROUNDS = 100
_POLL_SECONDS = 0.02


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def children() -> list[int]:
    """This process's children (the command, its orphans, the orphans' orphans …), zombies included."""
    me = str(os.getpid()).encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
            if stat[stat.rindex(b")") + 2:].split()[1] == me:
                found.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sweep() -> None:
    """SIGKILL every child until none is left, reaping as they die."""
    for _ in range(_SWEEP_ROUNDS):
        reap()
        alive = children()
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.001)
    reap()


def _die_like(signum: int) -> None:
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)


def _on_signal(signum: int, frame: object) -> None:
    sweep()
    _die_like(signum)


def main(argv: list[str]) -> int:
    drain, command = float(argv[0]), argv[1:]
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)  # mtagent died: sweep first, then go
    pid = os.fork()
    if pid == 0:
        try:
            for ignored in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; a command must not
                signal.signal(ignored, signal.SIG_DFL)
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    _, status = os.waitpid(pid, 0)
    until = time.monotonic() + drain
    while time.monotonic() < until:
        reap()
        if not children():
            break
        time.sleep(_POLL_SECONDS)
    sweep()
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        _die_like(-code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
