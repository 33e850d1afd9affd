"""Running one command in the sandbox: whether it can run here, its private temp folder, its proxy.

:func:`status` says which mode is on (``sandbox.mode`` and what :func:`~.bwrap.probe` found) and,
the first time the sandbox is wanted but cannot run, writes one line saying so — mtagent then works
as before. :class:`SandboxedCall` wraps one command's argv and owns its proxy for the call's length.
The private temp folder is one per workspace and process (a command's ``/tmp`` survives to the
next command of the session, like a real one) and is removed when mtagent exits.
"""

from __future__ import annotations

import atexit
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtagent.config import Settings
from mtagent.tools.sandbox.bwrap import NOT_INSTALLED, PROXY_SOCKET_INSIDE, bwrap_argv, bwrap_path, probe
from mtagent.tools.sandbox.policy import Needs, SandboxPolicy, policy_for
from mtagent.tools.sandbox.proxy import NetworkProxy, denied_message

_private: dict[str, Path] = {}
_lock = threading.Lock()
_noticed: set[str] = set()


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """``active``: commands run sandboxed; ``mode``: the setting; ``reason``: why it is not active."""

    active: bool
    mode: str
    reason: str | None = None

    def describe(self) -> str:
        if self.active:
            return "sandbox: on (bubblewrap: workspace writable, secrets hidden, network only to sandbox.allow_hosts)"
        if self.mode == "off":
            return "sandbox: off (sandbox.mode = \"off\"): commands run with your full rights"
        return f"sandbox: unavailable — {self.reason}; commands run with your full rights"


def status(settings: Settings, *, notice: bool = True) -> SandboxStatus:
    """Whether commands run sandboxed under ``settings``; the first unavailable answer per reason
    writes one line to stderr (``notice``)."""
    mode = settings.sandbox.mode
    if mode == "off":
        return SandboxStatus(False, mode)
    path = bwrap_path()
    reason = probe(path) if path is not None else NOT_INSTALLED
    if reason is None:
        return SandboxStatus(True, mode)
    found = SandboxStatus(False, mode, reason)
    if notice and reason not in _noticed:
        _noticed.add(reason)
        tail = " (sandbox.mode = \"on\": commands are refused)" if mode == "on" else \
            " (set sandbox.mode = \"off\" to silence this)"
        sys.stderr.write(f"{found.describe()}{tail}\n")
    return found


def _cleanup() -> None:
    for folder in _private.values():
        shutil.rmtree(folder, ignore_errors=True)


def private_tmp(workspace_root: Path) -> Path:
    """The ``/tmp`` of the workspace's sandboxed commands (made on first use, 0700)."""
    key = str(workspace_root)
    with _lock:
        folder = _private.get(key)
        if folder is None or not folder.is_dir():
            if not _private:
                atexit.register(_cleanup)
            folder = _private[key] = Path(tempfile.mkdtemp(prefix="mtagent-sandbox-tmp-"))
        return folder


class SandboxedCall:
    """One command in the sandbox: ``argv(inner)`` is its bubblewrap command line; while the call is
    open (``with``) its proxy serves; ``denied`` lists the hosts refused, ``notes()`` says so."""

    def __init__(self, policy: SandboxPolicy, workspace_root: Path, needs: Needs | None = None) -> None:
        needs = needs or Needs()
        self.policy = policy.granting(needs)
        self.tmp = private_tmp(workspace_root)
        self.proxy: NetworkProxy | None = None
        self.bwrap = bwrap_path() or "bwrap"

    def __enter__(self) -> SandboxedCall:
        self.proxy = NetworkProxy(self.policy.allow_hosts)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proxy is not None:
            self.proxy.close()

    @property
    def bridge(self) -> str | None:
        """Where the runner inside finds the proxy (its ``--bridge`` argument)."""
        return PROXY_SOCKET_INSIDE if self.proxy is not None else None

    def argv(self, inner: list[str]) -> list[str]:
        socket_path = self.proxy.socket_path if self.proxy is not None else None
        return bwrap_argv(self.policy, self.tmp, inner, proxy_socket=socket_path, bwrap=self.bwrap)

    @property
    def denied(self) -> list[str]:
        return list(dict.fromkeys(self.proxy.denied)) if self.proxy is not None else []

    def notes(self) -> list[str]:
        return [f"[sandbox: {denied_message(host)}]" for host in self.denied]


class SandboxRequired(RuntimeError):
    """``sandbox.mode = "on"`` and the sandbox cannot run here: the command is refused."""


_NO_NETWORK = re.compile(r"could not resolve host|temporary failure in name resolution|network is unreachable|"
                         r"name or service not known|getaddrinfo (?:enotfound|eai_again)|"
                         r"failed to establish a new connection", re.IGNORECASE)


def call_for(settings: Settings, roots: Sequence[Path], needs: Needs | None = None) -> SandboxedCall | None:
    """The sandbox of one command in a workspace of ``roots`` (the first is its root), or None when it
    runs unconfined: the sandbox is off, or unavailable under ``auto``, or the user approved its
    ``unsandboxed`` need. :class:`SandboxRequired` when ``mode = "on"`` and it cannot run."""
    needs = needs or Needs()
    found = status(settings)
    if needs.unsandboxed or found.mode == "off":
        return None
    if not found.active:
        if found.mode == "on":
            raise SandboxRequired(f"{found.describe()}; sandbox.mode is \"on\", so commands are refused — "
                                  "install bubblewrap or set sandbox.mode = \"auto\"")
        return None
    return SandboxedCall(policy_for(settings, roots), roots[0], needs)


def network_hint(output: str, exit_code: int | None) -> str | None:
    """A line for a sandboxed command that failed for want of a network it did not go through the
    proxy for (a DNS or connect error in its output)."""
    if exit_code == 0 or not _NO_NETWORK.search(output[-20_000:]):
        return None
    return ("[sandbox: this command has no network of its own; hosts in `sandbox.allow_hosts` are reached "
            "through mtagent's proxy (HTTP_PROXY/HTTPS_PROXY). Add the host to `sandbox.allow_hosts` in your "
            'config, or run the command again with needs: ["network:HOST"] to ask the user]')


def shell_commands(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The shell commands of a turn's tool results, each with whether it ran sandboxed (``run --json``)."""
    found = []
    for message in messages:
        meta = getattr(message, "artifact", None)
        if isinstance(meta, dict) and meta.get("kind") == "shell":
            entry = {"command": meta.get("command"), "exit_code": meta.get("exit_code"),
                     "sandboxed": meta.get("sandboxed") is True}
            if meta.get("sandbox_denied_hosts"):
                entry["denied_hosts"] = meta["sandbox_denied_hosts"]
            found.append(entry)
    return found
