"""The bubblewrap command line of a sandboxed command, and whether bubblewrap works here at all.

Mount order matters (bwrap applies them in order, a later one covers an earlier one):

1. ``--ro-bind / /``: the whole file system, read-only.
2. a fresh ``/dev`` and ``/proc`` (this pid namespace's processes only), ``/run`` (and a real
   ``/var/run``) as an empty tmpfs — the sockets there (docker, D-Bus, the user's agents) are
   programs outside the sandbox that would act for the command;
3. the private temp folder at ``/tmp``;
4. secrets that *contain* a writable folder (a workspace inside ``$MTAGENT_HOME``, an MCP server's
   own folder), hidden first and made read-only after it, so the folder bound in between is reachable;
5. the writable folders (the workspace's roots) read-write;
6. every other secret hidden (an empty read-only tmpfs for a folder, ``/dev/null`` for a file) —
   after the workspace, so a workspace that *is* the home folder still hides ``~/.ssh``;
7. the protected paths inside the workspace (``.git/hooks``, ``.mtagent`` …) read-only again.

Namespaces: user (where bwrap is not setuid), pid, ipc, uts, net (unless the call may use the
network directly), and ``--new-session`` (no TIOCSTI into a terminal), ``--die-with-parent``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from mtagent.tools.sandbox.policy import SandboxPolicy

PROXY_SOCKET_INSIDE = "/run/mtagent/proxy.sock"
NOT_INSTALLED = "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
_PROBE_TIMEOUT_S = 10.0


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def _contains(outer: Path, inner: Path) -> bool:
    return outer == inner or outer in inner.parents


def _hide(path: Path, *, read_only: bool = True) -> list[str]:
    if path.is_dir() and not path.is_symlink():
        return ["--perms", "0000", "--tmpfs", str(path), *(["--remount-ro", str(path)] if read_only else [])]
    return ["--ro-bind", "/dev/null", str(path)]


def bwrap_argv(policy: SandboxPolicy, private_tmp: Path, inner: list[str], *,
               proxy_socket: Path | None = None, bwrap: str = "bwrap") -> list[str]:
    """``inner`` (the runner and the command) under bubblewrap with ``policy``.

    The network namespace is empty but for loopback (a call granted ``unsandboxed`` runs without the
    sandbox), and ``proxy_socket`` (the host side of mtagent's proxy) is bound at :data:`PROXY_SOCKET_INSIDE`."""
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-user-try", "--unshare-pid",
            "--unshare-ipc", "--unshare-uts", "--unshare-net"]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"]
    var_run = Path("/var/run")
    if var_run.is_dir() and not var_run.is_symlink():
        argv += ["--tmpfs", "/var/run"]
    argv += ["--bind", str(private_tmp), "/tmp"]
    if proxy_socket is not None:
        argv += ["--ro-bind", str(proxy_socket), PROXY_SOCKET_INSIDE]
    outer_secrets = [h for h in policy.hidden if any(_contains(h, w) for w in policy.writable)]
    for secret in outer_secrets:  # made read-only only after the folders inside it are bound
        argv += _hide(secret, read_only=False)
    for folder in policy.writable:
        argv += ["--bind", str(folder), str(folder)]
    for secret in outer_secrets:
        if secret.is_dir() and not secret.is_symlink():
            argv += ["--remount-ro", str(secret)]
    for secret in policy.hidden:
        if secret not in outer_secrets:
            argv += _hide(secret)
    for guarded in policy.protected:
        argv += ["--ro-bind", str(guarded), str(guarded)]
    for needed in _interpreter_paths():  # the runner must start even if mtagent lives under /tmp
        if _contains(Path("/tmp"), needed) or any(_contains(h, needed) for h in policy.hidden):
            argv += ["--ro-bind", str(needed), str(needed)]
    return [*argv, "--", *inner]


@functools.cache
def _interpreter_paths() -> tuple[Path, ...]:
    """What the runner inside needs to start: the interpreter's folders (a virtualenv's and the one its
    ``python`` links to), its standard library, and the package the runner is in. Folders, not files:
    bubblewrap cannot bind a file whose parent folders the private ``/tmp`` does not have (a clone and
    its virtualenv under ``/tmp`` made every sandbox fail to start)."""
    package = Path(__file__).resolve().parents[2]  # mtagent/, with tools/shell_runner.py
    found = [Path(sys.prefix), Path(sys.executable).parent, Path(os.path.realpath(sys.executable)).parent,
             Path(sys.base_prefix).resolve(), package]
    return tuple(p for p in dict.fromkeys(found) if p.is_dir())


@functools.cache
def probe(bwrap: str | None = None) -> str | None:
    """Why the sandbox cannot run here (None when it can): not Linux, no ``bwrap`` on PATH, or bwrap
    failing to build a sandbox (no user namespaces, a container without the rights). Run once per
    process: a tiny sandbox like the real one, running ``true``."""
    if not sys.platform.startswith("linux"):
        return f"no sandbox on {sys.platform} yet (bubblewrap is Linux-only; docs/security.md has the macOS plan)"
    bwrap = bwrap or bwrap_path()
    if bwrap is None:
        return NOT_INSTALLED
    true = shutil.which("true") or "/bin/true"
    tmp = Path(os.environ.get("TMPDIR") or "/tmp")
    argv = bwrap_argv(SandboxPolicy(writable=()), tmp if tmp.is_dir() else Path("/tmp"), [true], bwrap=bwrap)
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start a sandbox ({exc})"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bubblewrap could not start a sandbox ({why[-1] if why else f'exit {done.returncode}'}); " \
               "user namespaces may be off (sysctl kernel.unprivileged_userns_clone=1)"
    return None
