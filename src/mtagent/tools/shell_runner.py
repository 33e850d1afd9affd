"""The leader of one shell call: a child subreaper that ends everything the command started.

Run as ``python -I -S shell_runner.py DRAIN_SECONDS GRACE_SECONDS ARGV...`` (stdlib only: it
runs without site-packages). It marks itself ``PR_SET_CHILD_SUBREAPER`` and runs ``ARGV`` as its child, so
every process the command orphans — ``env -i setsid -f sleep 100``, a double fork, a daemon —
is re-parented to this runner instead of escaping to mtagent or init, whatever it did to its
environment, session or process group. When the command exits, the runner lets what is left
finish writing for up to ``DRAIN_SECONDS`` (a background job's last lines), then SIGKILLs every
process it holds, repeatedly until none is left (a killed process's own orphans come to it too),
and exits with the command's status (a signal death is mirrored). SIGTERM/SIGINT/SIGHUP — the
call's timeout (sent to the whole group), or mtagent dying (``PR_SET_PDEATHSIG``) — give the
command half of ``GRACE_SECONDS`` to end on its own, then sweep the same way and die of that signal
(so mtagent's own SIGKILL after the full grace never finds the runner still sweeping).

In a sandbox (:mod:`mtagent.tools.sandbox`) the runner runs *inside* it, as
``shell_runner.py --bridge SOCKET DRAIN GRACE ARGV...``: it listens on a loopback port of the
sandbox's own network namespace, relays each connection there to mtagent's proxy at the unix socket
``SOCKET``, and gives the command ``HTTP_PROXY``/``HTTPS_PROXY`` (and the lower-case names) pointing
at that port — the only way out of a sandbox without network.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from typing import Any

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


class _Stopped(Exception):
    """Raised by the signal handler to leave a blocking wait."""


_stopped_by: int | None = None


def _on_signal(signum: int, frame: object) -> None:
    global _stopped_by
    if _stopped_by is None:
        _stopped_by = signum
        raise _Stopped


def settle(seconds: float) -> None:
    """Reap children as they end, for up to ``seconds`` or until none is left."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        reap()
        if not children():
            return
        time.sleep(_POLL_SECONDS)


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")
NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")


# socket and threading are imported only with --bridge (a sandboxed call): every call starts this runner.


def _pipe(src: Any, dst: Any) -> None:
    try:
        while True:
            chunk = src.recv(65536)
            if not chunk:
                break
            dst.sendall(chunk)
    except OSError:
        pass
    try:
        dst.shutdown(1)  # SHUT_WR
    except OSError:
        pass


def _relay(client: Any, socket_path: str) -> None:
    import socket
    import threading

    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve_bridge(listener: Any, socket_path: str) -> None:
    import threading

    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(client, socket_path), daemon=True).start()


def open_bridge() -> tuple[Any, int]:
    """A loopback listener of the sandbox's network namespace (its port picked by the kernel)."""
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    return listener, listener.getsockname()[1]


def main(argv: list[str]) -> int:
    bridge = None
    if argv and argv[0] == "--bridge":
        bridge, argv = argv[1], argv[2:]
    drain, grace, command = float(argv[0]), float(argv[1]), argv[2:]
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)  # mtagent died: sweep first, then go
    listener = None
    if bridge is not None:
        listener, port = open_bridge()
        for name in PROXY_VARIABLES:
            os.environ[name] = f"http://127.0.0.1:{port}"
        for name in NO_PROXY_VARIABLES:  # "localhost" in it is the sandbox's own loopback: direct is right
            os.environ[name] = "localhost,127.0.0.1,::1"
    pid = os.fork()
    if pid == 0:
        try:
            for ignored in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; a command must not
                signal.signal(ignored, signal.SIG_DFL)
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    if listener is not None and bridge is not None:
        import threading

        threading.Thread(target=_serve_bridge, args=(listener, bridge), daemon=True).start()
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    for signum in stops:
        signal.signal(signum, _on_signal)
    status = 0
    try:
        _, status = os.waitpid(pid, 0)
        settle(drain)
    except _Stopped:
        settle(grace / 2)
    for signum in stops:
        signal.signal(signum, signal.SIG_IGN)
    sweep()
    if _stopped_by is not None:
        _die_like(_stopped_by)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        _die_like(-code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
