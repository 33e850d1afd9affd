"""Long-term memory: facts worth keeping across sessions, stored as plain markdown.

Two scopes (spec 001, spec 002):

* **global** — a markdown list under ``## Agent Memories`` in ``~/.mtagent/CONTEXT.md``
  (Tier 1, so it reaches the system prompt every turn). The rest of that file is the user's
  and stays byte-identical: only the lines of the list that change are touched.
* **project** — ``~/.mtagent/projects/<project-hash>/memory/MEMORY.md``, an index whose first
  ``memory.index_max_lines`` lines are loaded; topic files may sit beside it.

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
from mtagent.errors import UsageError

Scope = Literal["global", "project"]
SCOPES: tuple[Scope, ...] = ("global", "project")
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
    return text


def memory_path(scope: Scope, project_root: str | os.PathLike[str] | None = None) -> Path:
    """The file a scope's facts live in."""
    if scope == "global":
        return paths.global_context_path()
    if scope == "project":
        if project_root is None:
            raise UsageError("project memory needs a project folder; pass --cwd or run inside the project")
        return paths.project_memory_dir(project_root) / PROJECT_INDEX_NAME
    raise UsageError(f"unknown memory scope {scope!r}; use 'global' or 'project'")


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
    body = m.group("body").strip()
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
                out.append(MemoryEntry(len(out) + 1, parsed[0], parsed[1], self.scope, i))
        return out

    def entries(self) -> list[MemoryEntry]:
        """Every fact in file order, obsolete ones included; re-read from disk each call."""
        return self._entries(_read_lines(self.path))

    def active(self) -> list[str]:
        """Facts to inject: not obsolete, within the loaded line limit (the index's 200 lines)."""
        return [e.text for e in self.entries()
                if not e.obsolete and (self.max_lines is None or e.line_index < self.max_lines)]

    def add(self, fact: str) -> AddResult:
        text = clean_fact(fact)
        key = normalize_fact(text)
        with _locked(self.path):
            lines = _read_lines(self.path)
            for entry in self._entries(lines):
                if normalize_fact(entry.text) != key:
                    continue
                if not entry.obsolete:
                    return AddResult(entry, added=False)
                lines[entry.line_index] = _item_line(entry.text, False, lines[entry.line_index])
                _write_lines(self.path, lines)
                return AddResult(self._entries(lines)[entry.number - 1], added=False, reactivated=True)
            index = self._insert_at(lines)
            lines.insert(index, f"- {text}{_eol(lines)}")
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
                lines[entry.line_index] = _item_line(entry.text, True, lines[entry.line_index])
                _write_lines(self.path, lines)
            return MemoryEntry(entry.number, entry.text, True, entry.scope, entry.line_index)


def _eol(lines: list[str]) -> str:
    for line in lines:
        if line.endswith("\r\n"):
            return "\r\n"
        if line.endswith("\n"):
            return "\n"
    return "\n"


def _item_line(text: str, obsolete: bool, old_line: str) -> str:
    m = _ITEM_RE.match(old_line)
    bullet = m.group("bullet") if m else "-"
    eol = "\r\n" if old_line.endswith("\r\n") else ("\n" if old_line.endswith("\n") else "")
    body = f"~~{text}~~ {OBSOLETE_SUFFIX}" if obsolete else text
    return f"{bullet} {body}{eol}"


def memory_file(scope: Scope, project_root: str | os.PathLike[str] | None = None,
                *, index_max_lines: int | None = None) -> MemoryFile:
    """The :class:`MemoryFile` of a scope (global: a section of CONTEXT.md; project: MEMORY.md)."""
    path = memory_path(scope, project_root)
    if scope == "global":
        return MemoryFile(path, "global", section=AGENT_MEMORIES_HEADING)
    return MemoryFile(path, "project", header=PROJECT_INDEX_HEADER, max_lines=index_max_lines)


def save_memory(fact: str, scope: Scope = "global",
                project_root: str | os.PathLike[str] | None = None) -> AddResult:
    """Remember ``fact`` (what the ``save_memory`` tool and ``/memory add`` call)."""
    return memory_file(scope, project_root).add(fact)


def list_memories(scope: Scope, project_root: str | os.PathLike[str] | None = None) -> list[MemoryEntry]:
    return memory_file(scope, project_root).entries()


def remove_memory(selector: int | str, scope: Scope = "global",
                  project_root: str | os.PathLike[str] | None = None) -> MemoryEntry:
    return memory_file(scope, project_root).remove(selector)


def mark_memory_obsolete(selector: int | str, scope: Scope = "global",
                         project_root: str | os.PathLike[str] | None = None) -> MemoryEntry:
    return memory_file(scope, project_root).mark_obsolete(selector)


def load_project_memory(project_root: str | os.PathLike[str], index_max_lines: int) -> str:
    """The project's MEMORY.md as injected: its first ``index_max_lines`` lines, obsolete facts removed.

    Non-list lines a person added (headings, links to topic files, notes) are kept as written;
    the header mtagent wrote when it created the file is not repeated to the model.
    """
    path = memory_path("project", project_root)
    lines = _read_lines(path)[:index_max_lines]
    boilerplate = {line.strip() for line in PROJECT_INDEX_HEADER.splitlines() if line.strip()}
    kept = [line for line in lines
            if line.strip() not in boilerplate and not ((p := parse_item(line)) and p[1])]
    return "".join(kept).strip()


def strip_obsolete_memories(text: str) -> str:
    """``text`` (a CONTEXT.md) with the obsolete items of its ``## Agent Memories`` list removed."""
    lines = text.splitlines(keepends=True)
    span = section_span(lines, AGENT_MEMORIES_HEADING)
    if span is None:
        return text
    start, end = span
    drop = {i for i in range(start, end) if (p := parse_item(lines[i])) and p[1]}
    return "".join(line for i, line in enumerate(lines) if i not in drop)
