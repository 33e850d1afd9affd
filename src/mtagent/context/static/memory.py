"""Long-term memory: facts worth keeping across sessions, stored as plain markdown.

Four namespaces (spec 001, spec 002; namespaces, TTL and keys are spec 003 v1.2):

* **global** — a markdown list under ``## Agent Memories`` in ``~/.mtagent/CONTEXT.md``
  (Tier 1, so it reaches the system prompt every turn). The rest of that file is the user's
  and stays byte-identical: only the lines of the list that change are touched.
* **project** — ``~/.mtagent/projects/<project-hash>/memory/MEMORY.md``, an index whose first
  ``memory.index_max_lines`` lines are loaded; topic files may sit beside it.
* **user** — ``~/.mtagent/memory/USER.md``: the person's own preferences, every project.
* **team** — ``~/.mtagent/projects/<project-hash>/memory/team/MEMORY.md``: what a team shares
  about the project (spec 002's ``memory/team/``); its facts carry org authority.

A fact may carry metadata in a trailing comment (key, expiry, authority, time written —
:mod:`mtagent.context.static.memory_meta`); an expired fact is not injected, and of facts that
share a key only the winner is (:mod:`mtagent.context.static.memory_resolve`).

A fact is one list item. ``~~fact~~ (obsolete)`` marks a fact that no longer holds: it stays
visible to a person but is not injected. Every operation re-reads the file, so hand edits are
respected; writes are atomic (temp file + rename) under a lock file, so the REPL, the CLI and
the ``save_memory`` tool can run at the same time.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mtagent import paths
from mtagent.context.static.memory_meta import FactMeta, defuse_meta, render_meta, split_meta, utcnow
from mtagent.errors import UsageError

Scope = Literal["global", "project", "user", "team"]
SCOPES: tuple[Scope, ...] = ("global", "project", "user", "team")
USER_MEMORY_NAME = "USER.md"
TEAM_DIR = "team"
AGENT_MEMORIES_HEADING = "## Agent Memories"
PROJECT_INDEX_NAME = "MEMORY.md"
PROJECT_INDEX_HEADER = (
    "# Project memory\n\n"
    "_Facts mtagent keeps for this project, one per line. Edit freely; "
    "mark a fact `~~like this~~ (obsolete)` to stop it being used._\n\n"
)
OBSOLETE_SUFFIX = "(obsolete)"
_ITEM_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<bullet>[-*+])[ \t]+(?P<body>.*?)(?P<eol>\r?\n)?$")
_OBSOLETE_RE = re.compile(r"^~~(?P<fact>.+)~~[ \t]*(\(obsolete\))?[ \t]*$", re.IGNORECASE)
_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")


@dataclass(slots=True, frozen=True)
class MemoryEntry:
    """One remembered fact as it stands in its file right now."""

    number: int  # 1-based, in file order, obsolete ones included (what `memory list` shows)
    text: str
    obsolete: bool
    scope: Scope
    line_index: int  # 0-based line in the file
    meta: FactMeta = FactMeta()

    @property
    def namespace(self) -> Scope:
        return self.scope

    @property
    def expired(self) -> bool:
        return self.meta.expired()


@dataclass(slots=True, frozen=True)
class AddResult:
    entry: MemoryEntry
    added: bool  # False when the fact was already remembered
    reactivated: bool = False  # True when an obsolete copy was brought back


def normalize_fact(text: str) -> str:
    """The key duplicates are compared on: case and whitespace do not matter, nor a final '.'."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".").strip().casefold()


def clean_fact(fact: str) -> str:
    """A fact is one line of text; refuse empty ones with a message that says what to do."""
    text = re.sub(r"\s+", " ", fact or "").strip()
    if text.startswith(("- ", "* ", "+ ")):
        text = text[2:].strip()
    if not text:
        raise UsageError("a memory must be a non-empty fact, e.g. `mtagent memory add \"tests run with uv run pytest\"`")
    return defuse_meta(text)  # the fact's content is never its metadata


def parse_namespace(name: object) -> Scope:
    """``name`` when it is exactly one of :data:`SCOPES`, else a short :class:`UsageError`.

    A namespace arrives from the model's tool call or the command line: it only ever *selects*
    one of four fixed files and is never part of a path, and the error echoes at most 40
    characters of it (a 100 KB or NUL-laden name stays a one-line error)."""
    if isinstance(name, str) and name in SCOPES:
        return name  # type: ignore[return-value]
    shown = repr(name)[:40] + ("…" if len(repr(name)) > 40 else "")
    raise UsageError(f"unknown memory namespace {shown}; use one of {', '.join(SCOPES)}")


def memory_path(scope: Scope, project_root: str | os.PathLike[str] | None = None, *,
                home: Path | None = None) -> Path:
    """The file a scope's facts live in. ``home``: the tenant's local home (project and team scopes;
    :func:`mtagent.session.local.local_home`), ``$MTAGENT_HOME`` by default."""
    scope = parse_namespace(scope)
    if scope == "global":
        return paths.global_context_path()
    if scope == "user":
        return paths.mtagent_home() / "memory" / USER_MEMORY_NAME
    if project_root is None:
        raise UsageError(f"{scope} memory needs a project folder; pass --cwd or run inside the project")
    folder = paths.project_memory_dir(project_root, home)
    return (folder / TEAM_DIR if scope == "team" else folder) / PROJECT_INDEX_NAME


def _read_lines(path: Path) -> list[str]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return data.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)


def _write_lines(path: Path, lines: list[str]) -> None:
    paths.ensure_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes("".join(lines).encode("utf-8", errors="surrogateescape"))
    os.replace(tmp, path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise read-modify-write of one memory file across threads and processes."""
    lock_path = paths.ensure_dir(path.parent) / f".{path.name}.lock"
    with open(lock_path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def section_span(lines: list[str], heading: str) -> tuple[int, int] | None:
    """[start, end) of the lines under ``heading`` (exclusive of the heading line itself)."""
    want = _HEADING_RE.match(heading)
    assert want is not None
    level, title = len(want.group(1)), want.group(2).strip().casefold()
    start: int | None = None
    for i, line in enumerate(lines):
        m = _HEADING_RE.match(line.rstrip("\r\n"))
        if not m:
            continue
        if start is None:
            if len(m.group(1)) == level and m.group(2).strip().casefold() == title:
                start = i + 1
        elif len(m.group(1)) <= level:
            return start, i
    return None if start is None else (start, len(lines))


def parse_item(line: str) -> tuple[str, bool] | None:
    m = _ITEM_RE.match(line)
    if not m or m.group("indent"):
        return None
    body = split_meta(m.group("body").strip())[0]
    if not body:
        return None
    obs = _OBSOLETE_RE.match(body)
    if obs:
        return obs.group("fact").strip(), True
    if body.casefold().endswith(OBSOLETE_SUFFIX):
        return body[: -len(OBSOLETE_SUFFIX)].strip(), True
    return body, False


class MemoryFile:
    """The facts of one scope: a markdown list inside one file (or one section of it)."""

    def __init__(self, path: Path, scope: Scope, *, section: str | None = None,
                 header: str = "", max_lines: int | None = None) -> None:
        self.path = path
        self.scope = scope
        self.section = section
        self.header = header
        self.max_lines = max_lines

    def _span(self, lines: list[str]) -> tuple[int, int] | None:
        if self.section is None:
            return (0, len(lines))
        return section_span(lines, self.section)

    def _entries(self, lines: list[str]) -> list[MemoryEntry]:
        span = self._span(lines)
        if span is None:
            return []
        out: list[MemoryEntry] = []
        for i in range(*span):
            parsed = parse_item(lines[i])
            if parsed:
                m = _ITEM_RE.match(lines[i])
                meta = split_meta(m.group("body").strip())[1] if m else FactMeta()
                out.append(MemoryEntry(len(out) + 1, parsed[0], parsed[1], self.scope, i, meta))
        return out

    def entries(self) -> list[MemoryEntry]:
        """Every fact in file order, obsolete ones included; re-read from disk each call."""
        return self._entries(_read_lines(self.path))

    def active(self) -> list[str]:
        """Facts to inject: not obsolete, not expired, within the loaded line limit (the index's 200 lines)."""
        return [e.text for e in self.active_entries()]

    def active_entries(self) -> list[MemoryEntry]:
        now = utcnow()
        return [e for e in self.entries()
                if not e.obsolete and not e.meta.expired(now)
                and (self.max_lines is None or e.line_index < self.max_lines)]

    def add(self, fact: str, meta: FactMeta | None = None) -> AddResult:
        """Remember ``fact``; with ``meta`` (a key or TTL) it is written with its metadata and
        the time, and an existing copy of the same fact takes the new metadata."""
        text = clean_fact(fact)
        key = normalize_fact(text)
        if meta is not None and not meta.empty and meta.at is None:
            meta = FactMeta(meta.key, meta.expires_at, meta.authority, utcnow())
        suffix = render_meta(meta) if meta is not None else ""
        with _locked(self.path):
            lines = _read_lines(self.path)
            for entry in self._entries(lines):
                if normalize_fact(entry.text) != key:
                    continue
                if not entry.obsolete and not suffix:
                    return AddResult(entry, added=False)
                lines[entry.line_index] = _item_line(entry.text, False, lines[entry.line_index], suffix)
                if not entry.obsolete:
                    _write_lines(self.path, lines)
                    return AddResult(self._entries(lines)[entry.number - 1], added=False)
                _write_lines(self.path, lines)
                return AddResult(self._entries(lines)[entry.number - 1], added=False, reactivated=True)
            index = self._insert_at(lines)
            lines.insert(index, f"- {text}{suffix}{_eol(lines)}")
            _write_lines(self.path, lines)
            new = next(e for e in self._entries(lines) if e.line_index == index)
            return AddResult(new, added=True)

    def _insert_at(self, lines: list[str]) -> int:
        """Where a new item goes: after the last item of the list, creating what is missing.

        Mutates ``lines`` only by appending (a header, a missing section heading, a final
        newline), so every existing line keeps its bytes.
        """
        eol = _eol(lines)
        if not lines and self.header:
            lines.extend(self.header.splitlines(keepends=True))
        span = self._span(lines)
        if span is None:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += eol
            if lines and lines[-1].strip():
                lines.append(eol)
            lines.extend([f"{self.section}{eol}", eol])
            return len(lines)
        items = [e.line_index for e in self._entries(lines)]
        if items:
            last = items[-1]
            if not lines[last].endswith("\n"):
                lines[last] += eol
            return last + 1
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += eol
        if self.section is None:
            return len(lines)
        start, end = span
        if start < end and not lines[start].strip():
            return start + 1
        lines.insert(start, eol)
        return start + 1

    def find(self, selector: int | str) -> MemoryEntry:
        """The entry a number (1-based, as listed) or a text names; unique or a UsageError."""
        entries = self.entries()
        where = f"{self.scope} memory"
        if isinstance(selector, int) or (isinstance(selector, str) and selector.strip().isdigit()):
            number = int(selector)
            if not 1 <= number <= len(entries):
                raise UsageError(f"no {where} number {number}; `mtagent memory list` shows {len(entries)} entries")
            return entries[number - 1]
        key = normalize_fact(str(selector))
        if not key:
            raise UsageError("say which memory: its number from `mtagent memory list`, or its text")
        exact = [e for e in entries if normalize_fact(e.text) == key]
        matches = exact or [e for e in entries if key in normalize_fact(e.text)]
        if not matches:
            raise UsageError(f"no {where} matches {selector!r}; `mtagent memory list` shows what is stored")
        if len(matches) > 1:
            listed = "; ".join(f"{e.number}. {e.text}" for e in matches[:5])
            raise UsageError(f"{len(matches)} {where} entries match {selector!r} ({listed}); remove by number")
        return matches[0]

    def remove(self, selector: int | str) -> MemoryEntry:
        """Delete one fact's line; every other line of the file is left as it was."""
        with _locked(self.path):
            entry = self.find(selector)
            lines = _read_lines(self.path)
            del lines[entry.line_index]
            _write_lines(self.path, lines)
            return entry

    def mark_obsolete(self, selector: int | str) -> MemoryEntry:
        """Keep the fact visible to people as ``~~fact~~ (obsolete)``; it is no longer injected."""
        with _locked(self.path):
            entry = self.find(selector)
            if not entry.obsolete:
                lines = _read_lines(self.path)
                lines[entry.line_index] = _item_line(entry.text, True, lines[entry.line_index],
                                                     render_meta(entry.meta))
                _write_lines(self.path, lines)
            return MemoryEntry(entry.number, entry.text, True, entry.scope, entry.line_index, entry.meta)


def _eol(lines: list[str]) -> str:
    for line in lines:
        if line.endswith("\r\n"):
            return "\r\n"
        if line.endswith("\n"):
            return "\n"
    return "\n"


def _item_line(text: str, obsolete: bool, old_line: str, suffix: str = "") -> str:
    m = _ITEM_RE.match(old_line)
    bullet = m.group("bullet") if m else "-"
    eol = "\r\n" if old_line.endswith("\r\n") else ("\n" if old_line.endswith("\n") else "")
    body = f"~~{text}~~ {OBSOLETE_SUFFIX}" if obsolete else text
    return f"{bullet} {body}{suffix}{eol}"


def memory_file(scope: Scope, project_root: str | os.PathLike[str] | None = None,
                *, index_max_lines: int | None = None, home: Path | None = None) -> MemoryFile:
    """The :class:`MemoryFile` of a scope (global: a section of CONTEXT.md; project: MEMORY.md)."""
    path = memory_path(scope, project_root, home=home)
    if scope == "global":
        return MemoryFile(path, "global", section=AGENT_MEMORIES_HEADING)
    if scope == "user":
        return MemoryFile(path, "user", header=USER_INDEX_HEADER)
    if scope == "team":
        return MemoryFile(path, "team", header=TEAM_INDEX_HEADER, max_lines=index_max_lines)
    return MemoryFile(path, "project", header=PROJECT_INDEX_HEADER, max_lines=index_max_lines)


USER_INDEX_HEADER = "# User memory\n\n_Your own preferences, for every project. One fact per line._\n\n"
TEAM_INDEX_HEADER = "# Team memory\n\n_What the team shares about this project. One fact per line._\n\n"


def save_memory(fact: str, scope: Scope = "global",
                project_root: str | os.PathLike[str] | None = None, *,
                meta: FactMeta | None = None, home: Path | None = None) -> AddResult:
    """Remember ``fact`` (what the ``save_memory`` tool and ``/memory add`` call)."""
    return memory_file(scope, project_root, home=home).add(fact, meta)


def list_memories(scope: Scope, project_root: str | os.PathLike[str] | None = None, *,
                  home: Path | None = None) -> list[MemoryEntry]:
    return memory_file(scope, project_root, home=home).entries()


def remove_memory(selector: int | str, scope: Scope = "global",
                  project_root: str | os.PathLike[str] | None = None, *, home: Path | None = None) -> MemoryEntry:
    return memory_file(scope, project_root, home=home).remove(selector)


def mark_memory_obsolete(selector: int | str, scope: Scope = "global",
                         project_root: str | os.PathLike[str] | None = None, *,
                         home: Path | None = None) -> MemoryEntry:
    return memory_file(scope, project_root, home=home).mark_obsolete(selector)


def load_memory_text(scope: Scope, project_root: str | os.PathLike[str] | None, index_max_lines: int, *,
                     home: Path | None = None) -> str:
    """A namespace's file as injected (project, user, team): its first ``index_max_lines`` lines, obsolete
    and expired facts removed, metadata comments stripped, the header mtagent wrote left out. Non-list
    lines a person added (headings, links to topic files, notes) are kept as written."""
    path = memory_path(scope, project_root, home=home)
    lines = _read_lines(path)[:index_max_lines]
    header = {"user": USER_INDEX_HEADER, "team": TEAM_INDEX_HEADER}.get(scope, PROJECT_INDEX_HEADER)
    boilerplate = {line.strip() for line in header.splitlines() if line.strip()}
    return "".join(_injectable(line) for line in lines if line.strip() not in boilerplate).strip()


def _injectable(line: str) -> str:
    """``line`` as the model may see it: '' for an obsolete or expired fact, metadata stripped."""
    m = _ITEM_RE.match(line)
    parsed = parse_item(line)
    if not m or parsed is None:
        return line
    body, meta = split_meta(m.group("body").strip())
    if parsed[1] or meta.expired():
        return ""
    if meta.empty:
        return line
    eol = m.group("eol") or ""
    return f"{m.group('indent')}{m.group('bullet')} {body}{eol}"


def strip_obsolete_memories(text: str) -> str:
    """``text`` (a CONTEXT.md) with the obsolete items of its ``## Agent Memories`` list removed."""
    lines = text.splitlines(keepends=True)
    span = section_span(lines, AGENT_MEMORIES_HEADING)
    if span is None:
        return text
    start, end = span
    return "".join(_injectable(line) if start <= i < end else line for i, line in enumerate(lines))
