"""``mtagent mcp add / get / remove``: the ``[mcp.servers.NAME]`` tables of a config file, edited as a
user would edit them by hand.

The file is read and written with tomlkit, so the user's comments, order and spacing survive;
tomllib (the standard library) reads but cannot write, and a rewrite from a parsed dict would
drop every comment. A new table is validated like any server entry before anything is written,
and the file is replaced whole (a scratch file, then a rename), never left half-written.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any, Literal

import tomlkit
from pydantic import ValidationError
from tomlkit.exceptions import TOMLKitError

from mtagent import paths
from mtagent.config import McpServerSettings
from mtagent.errors import UsageError

Scope = Literal["user", "project"]
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def config_file(scope: Scope, project_root: Path) -> Path:
    return paths.global_config_path() if scope == "user" else paths.project_config_path(project_root)


def server_table(command: list[str], url: str | None, env: list[str], headers: list[str],
                 cwd: str | None) -> dict[str, Any]:
    """The table for one server from the command line's words; a usage error says what is off."""
    if bool(command) == bool(url):
        raise UsageError("give the server's command after `--` (stdio) or --url URL (streamable HTTP), not both")
    table: dict[str, Any] = {"url": url} if url else {"command": command[0], "args": command[1:]}
    if env:
        table["env"] = _pairs(env, "--env")
    if headers:
        table["headers"] = _pairs(headers, "--header", sep=":")
    if cwd:
        table["cwd"] = cwd
    try:
        McpServerSettings.model_validate(table)
    except ValidationError as exc:
        raise UsageError(f"invalid server: {exc.errors()[0]['msg']}") from exc
    return table


def add_server(path: Path, name: str, table: dict[str, Any], *, replace: bool) -> None:
    _check_name(name)
    doc = _read(path)
    servers = _servers(doc, create=True)
    if name in servers and not replace:
        raise UsageError(f"server {name!r} is already in {path}: `mtagent mcp remove {name}` first, or --replace")
    entry = tomlkit.table()
    for key, value in table.items():
        if isinstance(value, dict):  # env = { K = "v" }, as one writes it by hand
            inline = tomlkit.inline_table()
            inline.update(value)
            value = inline
        entry[key] = value
    servers[name] = entry
    _write(path, doc)


def get_server(path: Path, name: str) -> dict[str, Any] | None:
    servers = _servers(_read(path), create=False)
    entry = servers.get(name) if servers is not None else None
    return entry.unwrap() if entry is not None else None


def remove_server(path: Path, name: str) -> bool:
    doc = _read(path)
    servers = _servers(doc, create=False)
    if servers is None or name not in servers:
        return False
    del servers[name]
    _write(path, doc)
    return True


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise UsageError(f"invalid server name {name!r}: use up to 64 letters, digits, '-' or '_'")


def _pairs(items: list[str], flag: str, sep: str = "=") -> dict[str, str]:
    out = {}
    for item in items:
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            raise UsageError(f"{flag} takes KEY{sep}VALUE, got {item!r}")
        out[key.strip()] = value.strip() if sep == ":" else value
    return out


def _read(path: Path) -> tomlkit.TOMLDocument:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}; fix it by hand first") from exc
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise UsageError(f"{path} is not valid TOML ({exc}); fix it by hand first") from exc


def _servers(doc: tomlkit.TOMLDocument, *, create: bool) -> Any:
    """The ``[mcp.servers]`` table, made (as super-tables, so only ``[mcp.servers.NAME]`` shows) when
    ``create``; None when it is missing and not to be made."""
    table: Any = doc
    for key in ("mcp", "servers"):
        inner = table.get(key)
        if inner is None:
            if not create:
                return None
            inner = tomlkit.table(is_super_table=True)
            table[key] = inner
        table = inner
    if not isinstance(table, dict):
        raise UsageError("[mcp] servers is not a table in the config file; fix it by hand first")
    return table


def _write(path: Path, doc: tomlkit.TOMLDocument) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=".config.", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(tomlkit.dumps(doc))
        if path.exists():
            os.chmod(scratch, path.stat().st_mode & 0o777)
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
