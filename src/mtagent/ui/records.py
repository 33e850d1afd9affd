"""Transcript records for the UI: read once per file version, redacted, and cached.

The UI is read-only and a page asks for the same transcript many times (a timeline, then one
call, then the next), so parsed records are kept per ``(path, size, mtime)``: a session that is
still being written is simply read again when it grows. Every record passes through the
agent's :class:`~mtagent.agent.redaction.Redactor` before any page sees it, so a secret that
reached a transcript (a tool printed ``env``) is never served.

Reading never changes a file: torn or corrupt lines are skipped and counted (a page is a view,
and must show what it can), exactly as ``mtagent sessions show --skip-corrupt`` would.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # the redaction helpers are moving from agent/ to the package root
    from mtagent.redaction import Redactor, collect_secrets
except ImportError:  # pragma: no cover - before the move lands
    from mtagent.agent.redaction import Redactor, collect_secrets  # type: ignore[no-redef]
from mtagent.session.transcript import ReadReport, iter_entries

# Parsed transcripts kept in memory; a few recent sessions are what a person clicks through.
CACHED_TRANSCRIPTS = 8
__all__ = ["Redactor", "Transcript", "TranscriptCache", "default_redactor", "read_transcript"]


@dataclass(slots=True, frozen=True)
class Transcript:
    """One transcript's records (redacted) and what reading it reported."""

    path: Path
    records: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    skipped_lines: int = 0


def default_redactor() -> Redactor:
    """Secrets the UI process knows of: environment variables named like keys and tokens."""
    return Redactor(collect_secrets())


@dataclass(slots=True)
class TranscriptCache:
    """Parsed, redacted transcripts keyed by file version (least recently used dropped first)."""

    redactor: Redactor = field(default_factory=default_redactor)
    capacity: int = CACHED_TRANSCRIPTS
    _items: OrderedDict[tuple[str, int, int], Transcript] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def load(self, path: Path) -> Transcript:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        transcript = read_transcript(path, self.redactor)
        with self._lock:
            self._items[key] = transcript
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return transcript


def read_transcript(path: Path, redactor: Redactor) -> Transcript:
    report = ReadReport()
    records = [redactor.deep(e.record) for e in iter_entries(path, skip_corrupt=True, report=report)]
    return Transcript(path, records, list(report.warnings), report.skipped_corrupt)
