"""``shell``: run a command in the workspace root, in bounded memory and bounded time.

* The command runs under ``bash -c`` (``sh`` where bash is missing) in its own process group,
  with stdin closed and stdout+stderr merged, in the workspace root.
* Output is captured by :class:`BoundedCapture`: the first half of
  ``shell.max_capture_bytes`` and a rolling tail of the other half. A command printing
  gigabytes costs at most that much memory; the omitted middle is reported in bytes.
* On timeout the whole process group gets SIGTERM, then SIGKILL after
  ``shell.kill_grace_seconds``; background children left behind when the command exits are
  killed the same way, so nothing outlives the call holding the pipe; descendants that left
  the group (``setsid``, daemons) are found and killed too, and a watchdog kills the tree if
  mtagent itself dies (:mod:`~mtagent.tools.proctree`).
* The command's environment is the agent's minus every variable the one secret rule takes for a
  secret (:func:`~mtagent.redaction.variable_is_secret`) — by name (``*KEY*``, ``*TOKEN*``,
  ``*PASS*``, ``*PWD*``, ``*CRED*``, ``*AUTH*``, ``*SESSION*``, ``*_URL`` …) or by a value the
  redactor would redact (a key shape, a URL or connection string with a password, a configured
  secret) — and those in ``security.redact_env``, like Codex CLI's default: ``echo $OPENAI_API_KEY
  | rev`` would carry a key past the redactor. ``shell.env_passthrough`` names the ones a command may see.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field

from mtagent.config import Settings
from mtagent.redaction import HANDLES, settings_secrets, variable_is_secret  # noqa: F401 - HANDLES: the rule's exceptions
from mtagent.tools import proctree, sandbox as sandboxing
from mtagent.tools.sandbox import SandboxedCall
from mtagent.tools.base import ToolInputError, WorkspaceTool
from mtagent.tools.text_files import human_size

_READ_CHUNK = 64 * 1024
# After the command exits, its children may still hold the pipe; drain this long, then kill.
_DRAIN_SECONDS = 0.5
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


class BoundedCapture:
    """Keeps the head and a rolling tail of a byte stream, never more than ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.head_limit = max_bytes // 2
        self.tail_limit = max_bytes - self.head_limit
        self.head = bytearray()
        self.head_size = 0
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            self.head_size = len(self.head)
            data = data[room:]
        if not data:
            return
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail_size - len(self.tail[0]) >= self.tail_limit:
            self.tail_size -= len(self.tail.popleft())

    @property
    def omitted(self) -> int:
        return self.total - self.head_size - min(self.tail_size, self.tail_limit)

    def text(self) -> str:
        """The captured text, decoded once; the buffers are released as they are decoded."""
        head = self.head.decode("utf-8", errors="replace")
        self.head.clear()
        joined = b"".join(self.tail)
        self.tail.clear()
        tail = str(memoryview(joined)[max(0, len(joined) - self.tail_limit):], "utf-8", "replace")
        del joined
        if self.omitted:
            # ASCII only: one non-ASCII char would make CPython store the whole text at 2+ bytes/char
            note = (f"\n... [{human_size(self.omitted)} ({self.omitted:,} bytes) omitted from the middle of the "
                    f"output: it exceeded the {human_size(self.head_limit + self.tail_limit)} capture limit] ...\n")
        else:
            note = ""
        text = head + note + tail
        del head, tail
        return _ANSI.sub("", text) if "\x1b" in text else text


def _reaped(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """After EOF on the pipe: wait (until the deadline) for the command to exit.

    The pipe closes as the command exits, a moment before the process can be reaped; killing
    it in that moment would report a clean, silent command (``mkdir -p x && cp a b``) as -15.
    A command that closed its output but keeps running is still running: it meets the timeout.
    """
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return True


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C back while a call's processes start, then raise it.

    With a ``preexec_fn`` ``Popen`` runs the ``os.register_at_fork`` hooks (logging's lock), and a
    KeyboardInterrupt raised inside one is only printed as "Exception ignored": the Ctrl-C is lost
    and the turn waits for the command to end; raised later inside ``Popen`` it leaves a started
    child no one holds. So while the block runs, SIGINT is only noted; on leaving it the previous
    handler gets it (raising KeyboardInterrupt where the caller can stop the child). Signal
    handlers run in the main thread only, so elsewhere there is nothing to hold back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # ignored, or the default (the process dies): nothing is swallowed
        yield
        return
    noted: list[tuple[int, Any]] = []
    signal.signal(signal.SIGINT, lambda signum, frame: noted.append((signum, frame)))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if noted:
            previous(*noted[0])


def _pump(proc: subprocess.Popen[bytes], selector: selectors.BaseSelector, capture: BoundedCapture,
          deadline: float) -> bool:
    """Read the call's output into ``capture`` until it ends; True when the deadline stopped it."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    selector.register(fd, selectors.EVENT_READ)
    drain_until: float | None = None
    while True:
        now = time.monotonic()
        if now >= deadline:
            return True
        if drain_until is None and proc.poll() is not None:
            drain_until = now + _DRAIN_SECONDS
        if drain_until is not None and now >= drain_until:
            return False
        limit = min(deadline, drain_until or deadline) - now
        if not selector.select(timeout=min(limit, 0.1)):
            continue
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            continue
        if not chunk:
            return not _reaped(proc, deadline)
        capture.feed(chunk)


def _end_call(proc: subprocess.Popen[bytes], marker: str, timed_out: bool, kill_grace: float) -> None:
    """Stop what is left of the call (all of it on a timeout or a Ctrl-C) and reap its leader."""
    if timed_out or proc.poll() is None:
        proctree.kill_group(proc, kill_grace)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # background children left behind
            os.killpg(proc.pid, signal.SIGKILL)
    proctree.kill_tree(proc.pid, marker)  # setsid/daemonised descendants too
    assert proc.stdout is not None
    proc.stdout.close()
    proc.wait()


def run_command(command: str, cwd: str, *, timeout: float, max_capture_bytes: int,
                kill_grace: float, env: dict[str, str] | None = None,
                sandbox: SandboxedCall | None = None) -> dict[str, Any]:
    """Run ``command``; return exit code, captured text, byte counts, duration and timeout flag.
    With ``sandbox`` (an open :class:`~mtagent.tools.sandbox.SandboxedCall`) the runner and the
    command run inside bubblewrap; its pid namespace dies with the call."""
    shell = shutil.which("bash") or "/bin/sh"
    started = time.monotonic()
    proctree.become_subreaper()
    marker = proctree.new_marker()
    env = {**(os.environ if env is None else env), proctree.MARKER_ENV: marker}
    argv = proctree.contained([shell, "-c", command], kill_grace, bridge=sandbox.bridge if sandbox else None)
    if sandbox is not None:
        argv = sandbox.argv(argv)
        env["TMPDIR"] = "/tmp"  # the private one; the host's TMPDIR may be read-only in there
    proc: subprocess.Popen[bytes] | None = None
    watchdog = None
    capture = BoundedCapture(max_capture_bytes)
    timed_out = False
    selector = selectors.DefaultSelector()
    try:
        with interrupts_held():  # a Ctrl-C in here is raised when the call can still be cleaned up
            proc = subprocess.Popen(
                argv, cwd=cwd, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env=env,
                preexec_fn=proctree.die_with_parent,
            )
            watchdog = proctree.start_watchdog(proc.pid, marker)
        timed_out = _pump(proc, selector, capture, started + timeout)
    finally:
        with interrupts_held():  # a second Ctrl-C must not cut the clean-up short (it is bounded)
            selector.close()
            if proc is not None:
                _end_call(proc, marker, timed_out, kill_grace)
            proctree.stop_watchdog(watchdog)
    return {
        "exit_code": proc.returncode, "timed_out": timed_out, "output": capture.text(),
        "output_bytes": capture.total, "omitted_bytes": capture.omitted,
        "duration_s": round(time.monotonic() - started, 3),
    }


def shell_environment(environ: dict[str, str] | os._Environ[str], settings: Settings) -> dict[str, str]:
    """``environ`` without the variables a command should not see (see the module's docstring): each
    the one secret rule (:func:`~mtagent.redaction.variable_is_secret`) takes for a secret — by name
    (but :data:`~mtagent.redaction.HANDLES`) or by value, a configured secret's value under any name
    included — and those ``security.redact_env`` names, unless ``shell.env_passthrough`` names them."""
    allowed = settings.shell.env_passthrough
    withheld_names = set(settings.security.redact_env)
    known = settings_secrets(settings, environ)

    def passes(name: str, value: str) -> bool:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed):
            return True
        return name not in withheld_names and not variable_is_secret(name, value, known)

    return {name: value for name, value in environ.items() if passes(name, value)}


class ShellArgs(BaseModel):
    command: str = Field(description="The shell command to run (bash), in the workspace root.")
    timeout: float | None = Field(None, gt=0, description="Seconds before the command is stopped (default: settings).")
    needs: list[str] | None = Field(None, max_length=16, description=(
        "Only if the command must leave the sandbox: 'network:HOST', 'write:PATH' or 'unsandboxed'. "
        "The user is asked, with these as the reason."))


class ShellTool(WorkspaceTool):
    name: str = "shell"
    description: str = (
        "Run a shell command in the workspace root and return its combined stdout/stderr and "
        "exit code. Commands are stopped after the timeout. Very long output is saved and "
        "previewed (head, tail and error lines). Avoid interactive commands."
    )
    args_schema: type[BaseModel] = ShellArgs

    def execute(self, call_id: str, command: str, timeout: float | None = None,
                needs: list[str] | None = None) -> tuple[str, dict[str, Any]]:
        ctx = self.context
        limits = ctx.settings.shell
        if not command.strip():
            raise ToolInputError("command is empty")
        if "\x00" in command:
            raise ToolInputError("command contains a NUL byte")
        try:
            wanted = sandboxing.parse_needs(needs, ctx.workspace.root)
            confined = sandboxing.call_for(ctx.settings, ctx.workspace.roots, wanted)
        except (sandboxing.NeedError, sandboxing.SandboxRequired) as exc:
            raise ToolInputError(str(exc)) from exc
        requested = timeout or limits.default_timeout_seconds
        effective = min(requested, limits.max_timeout_seconds)
        env = {**shell_environment(os.environ, ctx.settings), "PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb", "NO_COLOR": "1"}
        with confined or contextlib.nullcontext():
            run = run_command(command, str(ctx.workspace.root), timeout=effective,
                              max_capture_bytes=limits.max_capture_bytes, kill_grace=limits.kill_grace_seconds,
                              env=env, sandbox=confined)
        output = run["output"].rstrip("\n")
        parts = [output] if output else ["(no output)"]
        if run["timed_out"]:
            parts.append(f"[Timed out after {effective:g}s: the command and its process group were stopped. "
                         "Run long jobs in the background with output to a file, or raise timeout "
                         f"(max {limits.max_timeout_seconds:g}s).]")
        else:
            parts.append(f"[exit code {run['exit_code']}]")
        if requested > effective:
            parts.append(f"[timeout {requested:g}s was capped at {effective:g}s]")
        if confined is not None:
            parts += confined.notes()
            hint = None if confined.denied else sandboxing.network_hint(run["output"], run["exit_code"])
            parts += [hint] if hint else []
        result = {"kind": "shell", "command": command, "exit_code": run["exit_code"],
                  "timed_out": run["timed_out"], "duration_s": run["duration_s"],
                  "output_bytes": run["output_bytes"], "capture_omitted_bytes": run["omitted_bytes"],
                  "timeout_s": effective, "sandboxed": confined is not None}
        if confined is not None and confined.denied:
            result["sandbox_denied_hosts"] = confined.denied
        if wanted:
            result["needs"] = list(needs or [])
        return "\n".join(parts), result
