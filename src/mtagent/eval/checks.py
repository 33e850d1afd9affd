"""Running a task's ``setup`` and ``check`` commands: in the workspace, bounded in time, never left behind.

A command runs with ``sh -c`` in its own session (process group). When it outlives its time
limit the whole group is stopped as a shell tool call's is (SIGTERM, a grace, then SIGKILL for
whatever is left: :func:`~mtagent.tools.proctree.kill_group`) — a test runner's children included —
and the outcome says so; the evaluation goes on. Output is kept as a bounded tail (what a reader
needs to see why a check failed), decoded leniently.

A task file comes from others (SWE-bench lines), so its commands get the shell tool's environment,
not the user's whole one: secret-named variables are withheld unless the user's own
``shell.env_passthrough`` names them (:func:`check_environment`). Where the sandbox runs
(:mod:`mtagent.tools.sandbox`, the user's own ``[sandbox]`` settings) they run in it as the shell tool's
commands do: the task's workspace writable, secrets hidden, network only to ``sandbox.allow_hosts``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mtagent.config import load_settings
from mtagent.tools import sandbox
from mtagent.tools.proctree import contained, kill_group
from mtagent.tools.shell import shell_environment

OUTPUT_TAIL_CHARS = 2_000
KILL_GRACE_S = 2.0


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What a check or setup command did: exit code (None when killed), whether it timed out."""

    exit_code: int | None
    timed_out: bool
    seconds: float
    output: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_environment() -> dict[str, str]:
    """The environment of a task's commands: the shell tool's policy (:func:`shell_environment`) under
    the user's own settings (home config, ``MTAGENT_*``) — never the task's ``settings``, with which
    a task line could let a key through."""
    return shell_environment(os.environ, load_settings())


def run_command(command: str, cwd: Path, timeout: float, *, stdin: bytes | None = None,
                env: dict[str, str] | None = None) -> CommandOutcome:
    """Run ``command`` in ``cwd`` (in :func:`check_environment`, plus ``env``); at ``timeout`` seconds
    its process group is killed."""
    start = time.monotonic()
    try:  # the shell tool's sandbox, under the user's own settings
        argv, confined = ["sh", "-c", command], sandbox.call_for(load_settings(), [Path(cwd)])
    except sandbox.SandboxRequired as exc:
        return CommandOutcome(None, False, 0.0, str(exc))
    if confined is not None:
        confined.__enter__()
        argv = confined.argv(contained(argv, KILL_GRACE_S, bridge=confined.bridge))
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE if stdin is not None else
                            subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, env={**check_environment(), **(env or {})})
    timed_out = False
    try:
        out, _ = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc, KILL_GRACE_S)
        try:
            out, _ = proc.communicate(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:  # a process that left the group still holds the pipe
            out = b""
    finally:
        if proc.poll() is None:
            kill_group(proc, KILL_GRACE_S)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=KILL_GRACE_S)
        if confined is not None:
            confined.__exit__(None, None, None)
    text = out.decode("utf-8", "replace") if out else ""
    if confined is not None:
        text = "\n".join([text, *confined.notes()]) if confined.denied else text
    code = None if timed_out else proc.returncode
    return CommandOutcome(code, timed_out, round(time.monotonic() - start, 3), text[-OUTPUT_TAIL_CHARS:])


def apply_patch(patch: str, cwd: Path, timeout: float) -> CommandOutcome:
    """``git apply`` a patch (SWE-bench's test patch) read from stdin, in ``cwd``."""
    return run_command("git apply --whitespace=nowarn -", cwd, timeout, stdin=patch.encode())
