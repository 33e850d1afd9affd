"""What one sandboxed command may touch: writable folders, hidden secrets, read-only guards, hosts.

The policy is plain data built from the settings and the workspace (:func:`policy_for`); a
command's approved ``needs`` (:func:`parse_needs`) widen one call's copy of it
(:meth:`SandboxPolicy.granting`). Paths are resolved here, once, so a symlink in the home folder
(``~/.ssh -> /data/keys``) hides its target and a workspace reached through a symlink is bound
where it really is.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import ipaddress
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mtagent import paths
from mtagent.config import Settings
from mtagent.config_sections import SANDBOX_HIDDEN_HOME_PATHS, SANDBOX_PROTECTED_PATHS

NEED_NETWORK = "network"
NEED_WRITE = "write"
NEED_UNSANDBOXED = "unsandboxed"
MAX_NEEDS = 16


class NeedError(ValueError):
    """A ``needs`` entry the shell tool does not understand (the model is told the forms)."""


@dataclass(frozen=True, slots=True)
class Needs:
    """What a command asks for beyond the sandbox, approved by the user before it runs."""

    hosts: tuple[str, ...] = ()
    writes: tuple[Path, ...] = ()
    unsandboxed: bool = False

    def __bool__(self) -> bool:
        return bool(self.hosts or self.writes or self.unsandboxed)

    def describe(self) -> str:
        """One line for the approval question: why this command asks."""
        parts = []
        if self.unsandboxed:
            parts.append("to run outside the sandbox (your whole file system, secrets and network)")
        if self.hosts:
            parts.append("network to " + ", ".join(self.hosts))
        if self.writes:
            parts.append("write access to " + ", ".join(str(p) for p in self.writes))
        return "this command asks for " + "; ".join(parts)


def _valid_host(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    name = name.strip("[]")
    if not name or len(host) > 253 or any(c.isspace() or c in "/@?#\\" for c in host):
        return False
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return all(part and (part == "*" or part.replace("-", "").replace("_", "").isalnum())
                   for part in name.split("."))


def parse_needs(raw: Sequence[str] | None, workspace_root: Path) -> Needs:
    """``["network:pypi.org", "write:~/.cache/pip", "unsandboxed"]`` → :class:`Needs`; anything else
    is a :class:`NeedError` naming the forms. A relative write path is the workspace's."""
    if not raw:
        return Needs()
    if len(raw) > MAX_NEEDS:
        raise NeedError(f"at most {MAX_NEEDS} needs per command")
    hosts: list[str] = []
    writes: list[Path] = []
    unsandboxed = False
    for item in raw:
        kind, _, value = str(item).strip().partition(":")
        kind, value = kind.strip().lower(), value.strip()
        if kind == NEED_UNSANDBOXED and not value:
            unsandboxed = True
        elif kind == NEED_NETWORK and value and _valid_host(value):
            hosts.append(value.lower().rstrip("."))
        elif kind == NEED_WRITE and value and "\x00" not in value:
            path = Path(os.path.expanduser(value))
            writes.append(Path(os.path.realpath(path if path.is_absolute() else workspace_root / path)))
        else:
            raise NeedError(f"needs entry {item!r} is not one of 'network:HOST', 'write:PATH', 'unsandboxed'")
    return Needs(tuple(dict.fromkeys(hosts)), tuple(dict.fromkeys(writes)), unsandboxed)


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """The confinement of one command. ``writable``: folders bound read-write (the workspace's roots
    and the user's ``sandbox.allow_write``); ``hidden``: existing secret paths replaced by an empty,
    read-only file or folder; ``protected``: existing paths inside a writable folder kept read-only;
    ``allow_hosts``: host patterns the proxy lets through."""

    writable: tuple[Path, ...]
    hidden: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()
    allow_hosts: tuple[str, ...] = ()

    def granting(self, needs: Needs) -> SandboxPolicy:
        """This policy widened by one call's approved needs (hosts, writable folders)."""
        writable = tuple(dict.fromkeys([*self.writable, *(p for p in needs.writes if p.is_dir())]))
        hosts = tuple(dict.fromkeys([*self.allow_hosts, *needs.hosts]))
        return dataclasses.replace(self, writable=writable, allow_hosts=hosts)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _existing(candidates: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for path in candidates:
        for spelled in (path, _real(path)):  # the link itself and what it points to
            if spelled not in found and (spelled.exists() or spelled.is_symlink()):
                found.append(spelled)
    return found


def hidden_paths(settings: Settings, home: Path | None = None) -> list[Path]:
    """Every existing path a sandboxed command must not see: the built-in secrets of the home folder,
    mtagent's own home, and ``sandbox.hide_paths``."""
    home = home or Path(os.path.expanduser("~"))
    wanted = [home / rel for rel in SANDBOX_HIDDEN_HOME_PATHS]
    wanted.append(paths.mtagent_home())
    wanted += [Path(os.path.expanduser(p)) for p in settings.sandbox.hide_paths]
    return [p for p in _existing(wanted) if p.is_absolute() and p != Path("/")]


def policy_for(settings: Settings, roots: Sequence[Path], home: Path | None = None) -> SandboxPolicy:
    """The policy of a command run in a workspace of ``roots`` under ``settings``."""
    writable = [_real(r) for r in roots]
    writable += [_real(Path(os.path.expanduser(p))) for p in settings.sandbox.allow_write]
    writable = [p for p in dict.fromkeys(writable) if p.is_dir() and p != Path("/")]
    protected = [p for root in writable for p in _existing(root / rel for rel in SANDBOX_PROTECTED_PATHS)]
    hosts = tuple(h.strip().lower().rstrip(".") for h in settings.sandbox.allow_hosts if _valid_host(h.strip()))
    return SandboxPolicy(tuple(writable), tuple(hidden_paths(settings, home)), tuple(protected), hosts)


def host_allowed(host: str, port: int, patterns: Iterable[str]) -> bool:
    """Whether ``host:port`` matches an allow pattern: ``pypi.org``, ``*.pythonhosted.org`` (its
    subdomains), ``127.0.0.1``, ``[::1]``, any of these with ``:port``."""
    host = host.strip("[]").lower().rstrip(".")
    for pattern in patterns:
        name, want_port = pattern, None
        if pattern.startswith("["):
            name, _, rest = pattern[1:].partition("]")
            want_port = rest[1:] if rest.startswith(":") else None
        elif pattern.count(":") == 1:
            name, want_port = pattern.split(":")
        if want_port is not None and want_port != str(port):
            continue
        if name == host or (name.startswith("*.") and fnmatch.fnmatchcase(host, name) and host != name[2:]):
            return True
    return False
