"""Which MCP servers a session may start: the user's config, a trusted project's config and ``.mcp.json``.

Sources, in the order a name is looked up (the first wins): ``[mcp.servers.NAME]`` in the user's
own layers (``~/.mtagent/config.toml``, ``MTAGENT_MCP__SERVERS``, arguments), the same table in the
project's ``.mtagent/config.toml``, and the project's ``.mcp.json`` (Claude Code's format,
``{"mcpServers": {"NAME": {"command": …, "args": […], "env": {…}}}}`` or ``{"type": "http",
"url": …, "headers": {…}}``). A repository wrote the last two, so until the user trusts the project
(``mtagent trust``) they are listed as *untrusted* and nothing of theirs ever starts.

Nothing here starts a process or imports the MCP SDK: ``mtagent trust`` and ``mtagent mcp list``
use it to say what *would* run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from mtagent import paths, trust
from mtagent.config import McpServerSettings, Settings, _read_toml
from mtagent.tools import sandbox
from mtagent.tools.mcp.untrusted import clean_text, server_key
from mtagent.tools.sandbox import SandboxPolicy
from mtagent.trust_scope import MAX_MCP_JSON_BYTES, MCP_JSON, read_mcp_json  # noqa: F401  (read the one way)

Source = Literal["user config", "project config", ".mcp.json"]
_JSON_KEYS = {"type", "command", "args", "env", "cwd", "url", "headers"}


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One configured server, where it came from, and whether it may start."""

    name: str
    source: Source
    trusted: bool
    settings: McpServerSettings | None = None
    error: str = ""  # why this entry cannot start (invalid, unsupported transport); "" when it can
    key: str = field(default="")
    workdir: str = ""  # where a stdio server starts (:func:`_workdir`); "" until discovery decides
    sandbox: SandboxPolicy | None = None  # sandbox.mcp_servers: its confinement (its workdir writable)

    @property
    def startable(self) -> bool:
        return self.trusted and self.settings is not None and self.settings.enabled and not self.error

    @property
    def transport(self) -> str:
        if self.settings is None:
            return "?"
        return "stdio" if self.settings.command is not None else "http"

    def describe(self) -> str:
        """What runs (a command line) or where it connects (:attr:`endpoint`; header names, never values)."""
        s = self.settings
        if s is None:
            return "(invalid entry)"
        if s.command is not None:
            line = " ".join(_quote(part) for part in [s.command, *s.args])
            env = f" (env: {', '.join(sorted(s.env))})" if s.env else ""
            return clean_text(line + env, 500)
        headers = f" (headers: {', '.join(sorted(s.headers))})" if s.headers else ""
        return clean_text(f"{self.endpoint}{headers}", 500)

    @property
    def endpoint(self) -> str:
        """An HTTP server's URL without its ``user:password@`` (``/mcp`` shows it, a note the transcript keeps
        names it); "" for a stdio server."""
        url = self.settings.url if self.settings is not None else None
        scheme, sep, rest = str(url or "").partition("://")
        authority, slash, path = rest.partition("/")
        return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}"


def _quote(part: str) -> str:
    return part if part and all(c.isalnum() or c in "-_./:=@+," for c in part) else json.dumps(part)


def _parsed(name: str, raw: Any, source: Source, trusted: bool) -> ServerSpec:
    try:
        if not isinstance(raw, Mapping):
            raise ValueError("must be a table of settings")
        settings = McpServerSettings.model_validate(dict(raw))
    except (ValidationError, ValueError) as exc:
        detail = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        return ServerSpec(name, source, trusted, None, f"invalid server entry: {clean_text(detail, 200)}",
                          server_key(name))
    return ServerSpec(name, source, trusted, settings, "", server_key(name))


def _from_mcp_json(name: str, raw: Any, trusted: bool) -> ServerSpec:
    """An ``.mcp.json`` entry; ``type`` is ``stdio`` (default when ``command`` is given) or ``http``."""
    if not isinstance(raw, Mapping):
        return _parsed(name, raw, ".mcp.json", trusted)
    kind = raw.get("type", "stdio" if "command" in raw else "http")
    unknown = sorted(str(k) for k in raw if k not in _JSON_KEYS)
    if kind not in ("stdio", "http", "streamable-http"):
        return ServerSpec(name, ".mcp.json", trusted, None,
                          f"transport {clean_text(str(kind), 40)!r} is not supported (use stdio or http)",
                          server_key(name))
    if unknown:
        return ServerSpec(name, ".mcp.json", trusted, None,
                          f"unknown key {clean_text(unknown[0], 40)!r} (known: {', '.join(sorted(_JSON_KEYS))})",
                          server_key(name))
    return _parsed(name, {k: v for k, v in raw.items() if k != "type"}, ".mcp.json", trusted)


def _project_config_servers(project_root: Path) -> dict[str, Any]:
    try:
        layer = _read_toml(paths.project_config_path(project_root))
    except Exception:  # a broken project config is reported by load_settings, not here
        return {}
    table = layer.get("mcp", {})
    servers = table.get("servers", {}) if isinstance(table, dict) else {}
    return servers if isinstance(servers, dict) else {}


def discover_servers(settings: Settings, project_root: Path | None) -> tuple[list[ServerSpec], list[str]]:
    """Every configured server (startable or not) and notes about the sources (a bad .mcp.json).

    ``settings`` is the merged configuration :func:`~mtagent.config.load_settings` gave: it holds a
    project's ``[mcp]`` only when the project is trusted (the trust layer drops it otherwise), so
    an untrusted project's servers are read from its files here only to be *listed*.
    """
    if not settings.mcp.enabled:
        return [], []
    trusted = project_root is not None and trust.is_trusted(project_root)
    project = _project_config_servers(project_root) if project_root is not None else {}
    specs: dict[str, ServerSpec] = {}
    for name, server in settings.mcp.servers.items():
        source: Source = "project config" if trusted and name in project else "user config"
        specs[name] = ServerSpec(name, source, True, server, "", server_key(name))
    if not trusted:
        for name, raw in project.items():
            specs.setdefault(str(name), _parsed(str(name), raw, "project config", False))
    notes: list[str] = []
    if project_root is not None and settings.mcp.project_mcp_json:
        servers, problem = read_mcp_json(project_root)
        if problem:
            notes.append(problem)
        for name, raw in servers.items():  # trusted: this very entry was (not one changed since the check)
            covered = trusted and trust.covers_server(project_root, MCP_JSON, str(name), raw)
            specs.setdefault(str(name), _from_mcp_json(str(name), raw, covered))
    found = [_with_workdir(s, project_root, trusted) for s in _unique_keys(list(specs.values()))]
    return [_sandboxed(s, settings) for s in found], notes


def _sandboxed(spec: ServerSpec, settings: Settings) -> ServerSpec:
    """A stdio server with ``sandbox.mcp_servers`` on, where the sandbox runs, gets its policy: its own
    folder writable, the user's secrets hidden, network only to ``sandbox.allow_hosts``."""
    if not settings.sandbox.mcp_servers or spec.settings is None or spec.settings.command is None or spec.error:
        return spec
    if not spec.workdir or not sandbox.status(settings).active:
        return spec
    return replace(spec, sandbox=sandbox.policy_for(settings, [Path(spec.workdir)]))


def _unique_keys(specs: list[ServerSpec]) -> list[ServerSpec]:
    """Two names that normalize alike (``a.b``, ``a_b``) get distinct tool-name keys."""
    seen: set[str] = set()
    out = []
    for spec in specs:
        key, n = spec.key, 2
        while key in seen:
            key, n = f"{spec.key}_{n}", n + 1
        seen.add(key)
        out.append(spec if key == spec.key else replace(spec, key=key))
    return out


def _with_workdir(spec: ServerSpec, project_root: Path | None, project_trusted: bool) -> ServerSpec:
    """The spec with the folder its stdio server starts in, or with an error saying why it cannot start.

    A user's own server never starts in the project unless the project is trusted *and* the user's
    ``cwd`` names a folder of it: ``python -m pkg`` imports ``pkg`` from the working folder first and
    ``npx`` resolves ``node_modules`` from it, so a cloned repository would run as the user's server.
    """
    s = spec.settings
    if s is None or s.command is None or spec.error:
        return spec
    wanted = Path(s.cwd).expanduser() if s.cwd else None
    if wanted is not None and wanted.is_absolute():
        return replace(spec, workdir=str(wanted))
    if spec.source == "user config":
        if wanted is None:
            return replace(spec, workdir=str(paths.mcp_server_workdir(spec.key)))
        if project_root is None or not project_trusted:
            return replace(spec, error=f"its cwd {clean_text(str(s.cwd), 80)!r} is a folder of the project, which "
                                       "is not trusted: give an absolute cwd in your config, or trust the "
                                       "project (`mtagent trust`)")
    if project_root is None:
        return replace(spec, error="a project's server needs its project folder")
    return replace(spec, workdir=str(project_root / wanted) if wanted is not None else str(project_root))


def project_server_lines(project_root: Path) -> list[str]:
    """``NAME (source): command`` for each server the project itself brings — its config's
    ``[mcp.servers]`` and its ``.mcp.json`` — trusted or not: what trusting it lets run."""
    specs = [_parsed(str(name), raw, "project config", False)
             for name, raw in _project_config_servers(project_root).items()]
    servers, _ = read_mcp_json(project_root)
    specs += [_from_mcp_json(str(name), raw, False) for name, raw in servers.items()]
    return [f"{clean_text(s.name, 64)} ({s.source}): {s.describe() if not s.error else s.error}" for s in specs]
