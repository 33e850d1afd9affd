"""What a project's trust covers, item by item, and a fingerprint of each: trust binds to contents.

``mtagent trust`` (or the REPL's question) used to bind to a path: a ``git pull`` that turned the
``.mcp.json`` server ``true`` into ``sh -c 'touch PWNED; …'`` and added ``shell = "allow"`` to the
project's config ran on the next ``mtagent run`` without a question. So a decision stores the
fingerprint of everything it let apply (:func:`covered`):

* every key of the project's ``.mtagent/config.toml`` that needs trust (:data:`mtagent.trust.SECURITY_KEYS`,
  which a new sandbox or hook section joins through :func:`mtagent.trust.register_security_keys`,
  and the size and budget keys an untrusted project may only narrow) — its value;
* each MCP server the project brings (its config's ``[mcp.servers]`` and its ``.mcp.json``) — its
  command, args, cwd, transport, URL, env and header *names*, and a digest of the env and header
  values (a changed value is a change; the value itself is never stored or shown);
* each skill (``.mtagent/skills``, ``.claude/skills``) and agent profile (``.mtagent/agents``) —
  a digest of its files, since a trusted project's skill is text the model follows and a trusted
  profile may choose tools and a model.

A later state with an item *added* or *changed* is a new, untrusted state (:func:`changes`); an
item removed only narrows what applies and needs no new decision. Nothing here starts or imports
anything: it reads the project's small files the bounded way config files are read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtagent import safe_open
from mtagent.terminal_text import BIDI_CONTROLS, json_safe

MCP_JSON = ".mcp.json"
# .mcp.json is a few lines; a bigger file (or /dev/zero behind a symlink) is refused, not read
MAX_MCP_JSON_BYTES = 1024 * 1024
SKILL_DIRS = ((".mtagent", "skills"), (".claude", "skills"))
PROFILE_DIR = (".mtagent", "agents")
_MAX_FILE_BYTES = 1024 * 1024  # of one skill or profile file hashed; beyond it the size stands for the rest
_MAX_FILES = 2_000
_INVISIBLE = re.compile(f"[\x00-\x1f\x7f-\x9f{BIDI_CONTROLS}\u2028\u2029\\\\]")


def visible(text: Any) -> str:
    """``text`` on one line, every control character shown: ``\\n`` → ``\\\\n``, ESC → ``\\\\x1b``,
    a bidi override → ``\\\\u202e`` (a backslash is doubled, so nothing can pose as an escape).
    Never cut: what the user is asked to trust is shown whole."""
    def one(match: re.Match[str]) -> str:
        char = match.group()
        named = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
        if char in named:
            return named[char]
        code = ord(char)
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
    return _INVISIBLE.sub(one, str(text))


@dataclass(frozen=True, slots=True)
class CoveredItem:
    """One thing a trust decision covers: a stable ``id``, what to call it, what it shows, its digest."""

    id: str
    label: str
    shows: str
    digest: str


@dataclass(frozen=True, slots=True)
class TrustChange:
    """An item added or changed since the decision (``old`` is "" for an added one)."""

    kind: str  # "added" or "changed"
    label: str
    old: str
    new: str

    def line(self) -> str:
        if self.kind == "added":
            return f"{self.label} added: {self.new}"
        return f"{self.label} changed: was {self.old}, now {self.new}"


def _digest(value: Any) -> str:
    data = value if isinstance(value, bytes) else json.dumps(value, sort_keys=True, default=str).encode()
    return hashlib.sha256(data).hexdigest()


def _quote(part: Any) -> str:
    """One word of a command line, quoted when it is not plain, its control characters :func:`visible`."""
    part = str(part)
    if part and all(c.isalnum() or c in "-_./:=@+," for c in part):
        return part
    return '"' + visible(part).replace('"', '\\"') + '"'


def server_shows(raw: Any) -> str:
    """A server entry as the user is asked about it: the whole command line (or URL), its cwd and the
    names of its env variables and headers — each part :func:`visible`, nothing cut."""
    if not isinstance(raw, Mapping):
        return f"(not a table: {json_safe(json.dumps(raw, default=str, ensure_ascii=False))})"
    parts: list[str] = []
    if raw.get("command") is not None:
        args = raw.get("args") if isinstance(raw.get("args"), list) else ([] if raw.get("args") is None
                                                                           else [raw.get("args")])
        parts.append(" ".join(_quote(p) for p in [raw["command"], *args]))
    if raw.get("url") is not None:
        parts.append(_quote(raw["url"]))
    for key, what in (("env", "env"), ("headers", "headers")):
        if isinstance(raw.get(key), Mapping) and raw[key]:
            parts.append(f"({what}: {', '.join(_quote(k) for k in sorted(map(str, raw[key])))})")
    if raw.get("cwd") is not None:
        parts.append(f"(cwd: {_quote(raw['cwd'])})")
    rest = sorted(str(k) for k in raw if k not in ("command", "args", "url", "env", "headers", "cwd"))
    parts += [f"({visible(k)}: {json_safe(json.dumps(raw[k], default=str, ensure_ascii=False))})" for k in rest]
    return " ".join(parts) or "(empty entry)"


def read_mcp_json(project_root: Path) -> tuple[dict[str, Any], str]:
    """The ``mcpServers`` table of the project's ``.mcp.json`` and a problem ("" when none).

    Opened like a config file: only a regular file, at most :data:`MAX_MCP_JSON_BYTES`, never
    followed into a device or FIFO (a hostile repository's ``.mcp.json`` → ``/dev/zero``).
    """
    path = Path(project_root) / MCP_JSON
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}, ""
    except OSError as exc:
        return {}, f"cannot open {MCP_JSON}: {exc.strerror}"
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return {}, f"{MCP_JSON} is not a regular file; ignored"
        raw = fh.read(MAX_MCP_JSON_BYTES + 1)
    if len(raw) > MAX_MCP_JSON_BYTES:
        return {}, f"{MCP_JSON} is over {MAX_MCP_JSON_BYTES // 1024} KB; ignored"
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}, f"{MCP_JSON} is not valid JSON; ignored"
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return {}, f'{MCP_JSON} has no "mcpServers" object; ignored'
    return servers, ""


def server_digest(raw: Any) -> str:
    """The digest of one server entry as read (command, args, env and header values, cwd, …)."""
    return _digest(raw)


def _server_item(source: str, name: str, raw: Any) -> CoveredItem:
    return CoveredItem(f"mcp:{source}:{name}", f"MCP server {visible(name)} ({source})", server_shows(raw),
                       server_digest(raw))


def config_items(layer: Mapping[str, Any], keys: list[str]) -> list[CoveredItem]:
    """Items for the ``section.key`` names of the project's config ``layer`` that need trust;
    ``mcp.servers`` is one item per server."""
    items = []
    for name in keys:
        section, key = name.split(".", 1)
        value = layer[section][key]
        if (section, key) == ("mcp", "servers") and isinstance(value, Mapping):
            items += [_server_item("project config", str(n), raw) for n, raw in value.items()]
            continue
        shows = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
        items.append(CoveredItem(f"config:{name}", visible(name), json_safe(shows), _digest(value)))
    return items


def _file_digest(root: Path, path: Path) -> str:
    """A digest of one file read through the confined open (never a device, never beyond the cap). A
    symlink counts by what it points at inside the project — a skill's SKILL.md linked to a doc the
    repository later changes changes too — and by where it points when that is outside."""
    target = path
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if root != target and root not in target.parents:
            return _digest(f"outside: {target}")
    try:
        with safe_open.reading((root,), target) as (fh, st):
            data = fh.read(_MAX_FILE_BYTES)  # type: ignore[attr-defined]
            return _digest(data + f"\0size={st.st_size}".encode())
    except Exception as exc:  # a FIFO, a hard link, a race: its refusal is its content
        return _digest(f"unreadable: {type(exc).__name__}")


def _walk(root: Path, folder: Path, depth: int, left: list[int]) -> list[Path]:
    """Files below ``folder`` (under ``root``), sorted, walked through descriptors: a symlinked folder
    is never entered, a symlinked file is listed (its digest says it cannot be read), at most
    ``left[0]`` files and ``depth`` levels."""
    try:
        fd = safe_open.open_dir((root,), folder)
    except Exception:  # missing, a symlink, not a folder: nothing under it applies
        return []
    try:
        entries = []
        for name in sorted(os.listdir(fd)):
            try:
                entries.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode))
            except OSError:
                continue
    finally:
        os.close(fd)
    out: list[Path] = []
    for name, mode in entries:
        if left[0] <= 0:
            break
        if stat.S_ISDIR(mode):
            out += _walk(root, folder / name, depth - 1, left) if depth > 0 else []
        else:
            left[0] -= 1
            out.append(folder / name)
    return out


def _folder_items(root: Path, folder: tuple[str, ...], kind: str, per_entry: bool) -> list[CoveredItem]:
    """One item per skill folder (``per_entry``: every file under ``folder/<name>/``) or per profile
    file (``folder/*.md``), digested by their files' names and contents."""
    base = Path(os.path.realpath(root))
    start = base.joinpath(*folder)
    groups: dict[str, list[tuple[str, str]]] = {}
    for path in _walk(base, start, 8 if per_entry else 0, [_MAX_FILES]):
        rel = path.relative_to(start).parts
        if (per_entry and len(rel) < 2) or (not per_entry and not rel[-1].endswith(".md")):
            continue
        group = rel[0] if per_entry else rel[0].removesuffix(".md")
        groups.setdefault(group, []).append(("/".join(rel), _file_digest(base, path)))
    where = "/".join(folder)
    return [CoveredItem(f"{kind}:{where}/{name}", f"{kind} {visible(name)} ({where})", f"{len(files)} file(s)",
                        _digest(files)) for name, files in sorted(groups.items())]


def covered(project_root: str | os.PathLike[str], layer: Mapping[str, Any], keys: list[str]) -> dict[str, CoveredItem]:
    """Everything a trust decision for ``project_root`` lets apply or run, by item id: the ``keys``
    (``section.key`` names needing trust) of its config ``layer`` as read, its ``.mcp.json``
    servers, skills and agent profiles."""
    root = Path(project_root)
    items = config_items(layer, keys)
    servers, _problem = read_mcp_json(root)
    items += [_server_item(MCP_JSON, str(name), raw) for name, raw in servers.items()]
    for folder in SKILL_DIRS:
        items += _folder_items(root, folder, "skill", per_entry=True)
    items += _folder_items(root, PROFILE_DIR, "agent profile", per_entry=False)
    return {item.id: item for item in items}


def unreadable_config(problem: str) -> CoveredItem:
    """The item standing for a project config that cannot be read (it applies nothing; a new problem
    is still a new state)."""
    return CoveredItem("config:unreadable", "the project config", "(unreadable)", _digest(problem))


def record(items: Mapping[str, CoveredItem]) -> dict[str, dict[str, str]]:
    """The fingerprint as stored with a decision in ``trust.json`` (the user's home)."""
    return {i.id: {"label": i.label, "shows": i.shows, "digest": i.digest} for i in items.values()}


def changes(stored: Mapping[str, Any], now: Mapping[str, CoveredItem]) -> list[TrustChange]:
    """What was added or changed since the fingerprint ``stored``; removals narrow and do not count."""
    out = []
    for item_id, item in now.items():
        before = stored.get(item_id)
        if not isinstance(before, Mapping):
            out.append(TrustChange("added", item.label, "", item.shows))
        elif before.get("digest") != item.digest:
            old = str(before.get("shows", "?"))
            new = item.shows if item.shows != old else f"{item.shows} (its contents changed)"
            out.append(TrustChange("changed", item.label, old, new))
    return out
