"""Transcript records for the UI: the small records of a whole session, and message ranges.

Pages need two kinds of reads, and neither may cost a full parse of a multi-GB transcript:

* the **outline** — every record that is not a message or an event (context plans, boundaries,
  microcompacts, artifacts, session-memory updates) with its byte offset. One pass over the
  bytes finds them by their ``"type"`` and parses only those lines; the timeline, the artifact
  list and the memory history are built from it. It is cached per file version
  ``(path, size, mtime)``, so a session still being written is simply read again when it grows.
* a **range** — every record between two offsets, for rebuilding one call's view from the
  compaction before it (see :mod:`mtagent.ui.calls`).

Every record passes through the agent's :class:`Redactor` before any page sees it, so a secret
that reached a transcript (a tool printed ``env``) is never served. Reading never changes a file:
torn or corrupt lines are skipped (a page is a view and must show what it can).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtagent.redaction import Redactor, collect_secrets
from mtagent.session import schema
from mtagent.session.index import parse_line
from mtagent.session.reader import READ_CHUNK_BYTES, ReadReport, iter_entries

if TYPE_CHECKING:
    from mtagent.config import Settings

__all__ = ["Outline", "Redactor", "TranscriptCache", "default_redactor", "read_outline", "read_range"]

# Outlines kept in memory; a few recent sessions are what a person clicks through.
CACHED_OUTLINES = 16
OUTLINE_TYPES = frozenset({schema.CONTEXT_PLAN, schema.COMPACT_BOUNDARY, schema.COMPRESSION, schema.MICROCOMPACT,
                           schema.TOOL_RESULT_ARTIFACT, schema.SESSION_MEMORY_UPDATE, schema.SESSION_START,
                           "subagent"})
_TYPE = re.compile(rb'"type"\s*:\s*"([a-z_]+)"')
_TYPE_PREFIX_BYTES = 96  # writers put "type" first; a longer prefix only costs time


@dataclass(slots=True)
class Outline:
    """A session's small records, in file order, each with its line's byte offset."""

    path: Path
    offsets: list[int]
    records: list[dict[str, Any]]
    skipped_lines: int = 0
    torn_tail: bool = False

    @property
    def warnings(self) -> list[str]:
        notes = []
        if self.skipped_lines:
            notes.append(f"{self.skipped_lines} unreadable line(s) of {self.path.name} were skipped")
        if self.torn_tail:
            notes.append(f"{self.path.name} ends in a torn line (a crash mid-write); it is ignored")
        return notes


def default_redactor(settings: Settings | None = None) -> Redactor:
    """Secrets the UI process knows of: its environment's and the configured ones (``[security]``)."""
    return Redactor(collect_secrets(settings=settings))


def read_outline(path: Path, redactor: Redactor) -> Outline:
    outline = Outline(path, [], [])
    offset = 0
    with open(path, "rb") as fh:
        carry = b""
        while chunk := fh.read(READ_CHUNK_BYTES):
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()
            for line in lines:
                found = _TYPE.search(line, 0, _TYPE_PREFIX_BYTES) or _TYPE.search(line)
                if found is not None and found.group(1).decode() in OUTLINE_TYPES:
                    record = parse_line(line)
                    if record is None:
                        outline.skipped_lines += 1
                    else:
                        outline.offsets.append(offset)
                        outline.records.append(redactor.deep(record))
                offset += len(line) + 1
    outline.torn_tail = bool(carry.strip())
    return outline


def read_range(path: Path, start: int, stop: int, redactor: Redactor) -> list[tuple[int, dict[str, Any]]]:
    """Records whose lines start in ``[start, stop)`` (``start`` is a line start), redacted."""
    out: list[tuple[int, dict[str, Any]]] = []
    for entry in iter_entries(path, start=start, skip_corrupt=True, report=ReadReport()):
        if entry.offset >= stop:
            break
        out.append((entry.offset, redactor.deep(entry.record)))
    return out


@dataclass(slots=True)
class TranscriptCache:
    """Outlines keyed by file version (least recently used dropped first)."""

    redactor: Redactor = field(default_factory=default_redactor)
    capacity: int = CACHED_OUTLINES
    _items: OrderedDict[tuple[str, int, int], Outline] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def outline(self, path: Path) -> Outline:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        outline = read_outline(path, self.redactor)
        with self._lock:
            self._items[key] = outline
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return outline
