"""Every project's sessions, with the figures the sessions page shows, and safe lookup by id.

Sessions live in ``$MTAGENT_HOME/history/<project-key>/<session-id>.jsonl``; a subagent's
transcript lives beside its parent's as ``<session-id>/subagents/<child-id>.jsonl`` (and so on
for its own children). A session is addressed in URLs by its project key and a *session key*:
the ids from the top-level session down to the child joined by ``~`` (a character no session id
may contain), so a URL can never name a file outside the history folder.

Figures come from one pass over the file's bytes that parses only the lines it needs (session
start, assistant messages for usage), cached per file version: the page stays quick next to
large transcripts.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

from mtagent import paths
from mtagent.errors import SessionNotFound, UsageError
from mtagent.replay.cost import ANTHROPIC
from mtagent.session import schema
from mtagent.session.reader import READ_CHUNK_BYTES

KEY_SEPARATOR = "~"
SUBAGENTS_DIR = "subagents"
_PROJECT_KEY = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$")
_TYPE = re.compile(rb'"type"\s*:\s*"([a-z_]+)"')
_ROLE = re.compile(rb'"role"\s*:\s*"(user|assistant)"')
_COUNTED = {schema.CONTEXT_PLAN: "calls", schema.COMPACT_BOUNDARY: "compactions", schema.COMPRESSION: "compactions",
            schema.MICROCOMPACT: "microcompacts", schema.TOOL_RESULT_ARTIFACT: "artifacts"}


@dataclass(slots=True)
class TranscriptSummary:
    """What the sessions page shows about one transcript."""

    turns: int = 0  # user messages
    calls: int = 0  # model calls (context plans)
    compactions: int = 0
    microcompacts: int = 0
    artifacts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    started: str | None = None
    last_activity: str | None = None
    cwd: str | None = None
    model: str | None = None
    torn_tail: bool = False

    @property
    def cost(self) -> float:
        """Input-token equivalents under an Anthropic-style prompt cache (as ``mtagent replay`` prices)."""
        uncached = max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)
        return (uncached + self.cache_read_tokens * ANTHROPIC.read_ratio
                + self.cache_write_tokens * ANTHROPIC.write_ratio + self.output_tokens * ANTHROPIC.output_ratio)


@dataclass(slots=True)
class SessionEntry:
    """A session (or a subagent's) on disk, with its figures and its children."""

    project: str
    key: str
    path: Path
    size_bytes: int
    stats: TranscriptSummary
    status: str
    children: list[SessionEntry] = field(default_factory=list)

    @property
    def session_id(self) -> str:
        return self.key.rsplit(KEY_SEPARATOR, 1)[-1]

    @property
    def depth(self) -> int:
        return self.key.count(KEY_SEPARATOR)

    def matches(self, query: str) -> bool:
        """A case-insensitive substring of the id, project, folder or model (or of any child)."""
        q = query.strip().lower()
        if not q:
            return True
        hay = " ".join(str(x) for x in (self.key, self.project, self.stats.cwd, self.stats.model) if x).lower()
        return q in hay or any(c.matches(q) for c in self.children)


def _usage(line: bytes, stats: TranscriptSummary) -> None:
    try:
        rec = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return
    usage = rec.get("usage") if isinstance(rec, dict) else None
    if not isinstance(usage, dict):
        return
    details = usage.get("input_token_details") if isinstance(usage.get("input_token_details"), dict) else {}

    def num(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    stats.input_tokens += num(usage.get("input_tokens"))
    stats.output_tokens += num(usage.get("output_tokens"))
    stats.cache_read_tokens += num(details.get("cache_read"))
    stats.cache_write_tokens += num(details.get("cache_creation"))


def _line(line: bytes, stats: TranscriptSummary) -> None:
    found = _TYPE.search(line)
    if found is None:
        return
    kind = found.group(1).decode()
    if counter := _COUNTED.get(kind):
        setattr(stats, counter, getattr(stats, counter) + 1)
    elif kind == schema.TRANSCRIPT_MESSAGE and (role := _ROLE.search(line)) is not None:
        if role.group(1) == b"user":
            stats.turns += 1
        else:
            _usage(line, stats)
    elif kind == schema.SESSION_START and stats.started is None:
        try:
            rec = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            return
        if isinstance(rec, dict):
            stats.started = rec.get("timestamp")
            stats.cwd = rec.get("cwd") if isinstance(rec.get("cwd"), str) else None
            stats.model = rec.get("model") if isinstance(rec.get("model"), str) else None
    if (stamp := re.search(rb'"timestamp"\s*:\s*"([^"]{1,40})"', line)) is not None:
        stats.last_activity = stamp.group(1).decode("utf-8", "replace")


def scan_stats(path: Path) -> TranscriptSummary:
    """One pass over the transcript's lines (a torn last line is noted and not counted)."""
    stats = TranscriptSummary()
    with open(path, "rb") as fh:
        carry = b""
        while chunk := fh.read(READ_CHUNK_BYTES):
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()
            for line in lines:
                _line(line, stats)
    stats.torn_tail = bool(carry.strip())
    return stats


def session_status(path: Path, stats: TranscriptSummary) -> str:
    """``running (pid N)`` while a live process holds the writer lock, else ``ended`` (or ``torn``).

    The lock file's pid is read, never locked: taking even a shared lock could make a writer
    starting at that instant fail.
    """
    lock = path.with_suffix(".lock")
    try:
        pid = int(lock.read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError):
        pid = 0
    if pid > 0 and pid != os.getpid():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            pass
        except PermissionError:
            return f"running (pid {pid})"
        else:
            return f"running (pid {pid})"
    return "torn tail" if stats.torn_tail else "ended"


@dataclass(slots=True)
class Catalog:
    """Sessions under ``$MTAGENT_HOME/history``, with figures cached per file version."""

    home: Path | None = None
    _cache: dict[tuple[str, int, int], TranscriptSummary] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def history(self) -> Path:
        return (self.home or paths.mtagent_home()) / "history"

    def stats(self, path: Path) -> TranscriptSummary:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        stats = scan_stats(path)
        with self._lock:
            self._cache[key] = stats
        return stats

    def projects(self) -> list[str]:
        if not self.history.is_dir():
            return []
        return sorted(p.name for p in self.history.iterdir() if p.is_dir() and _PROJECT_KEY.match(p.name))

    def entry(self, project: str, key: str, path: Path) -> SessionEntry:
        stats = self.stats(path)
        children = [self.entry(project, f"{key}{KEY_SEPARATOR}{child.stem}", child)
                    for child in self._children(project, path)]
        return SessionEntry(project, key, path, path.stat().st_size, stats, session_status(path, stats), children)

    def sessions(self, project: str) -> list[SessionEntry]:
        """A project's top-level sessions, newest first (ids sort by creation time)."""
        folder = self.project_dir(project)
        files = sorted((p for p in folder.glob("*.jsonl") if p.is_file()), reverse=True)
        return [self.entry(project, p.stem, p) for p in files if _safe_id(p.stem)]

    def project_dir(self, project: str) -> Path:
        if not _PROJECT_KEY.match(project) or ".." in project:
            raise UsageError(f"invalid project key {project!r}")
        folder = self.history / project
        if not folder.is_dir():
            raise SessionNotFound(f"no project {project!r} under {self.history}")
        return folder

    def transcript_path(self, project: str, key: str) -> Path:
        """The transcript a (project, session key) names; only ever a file under the history folder."""
        ids = key.split(KEY_SEPARATOR)
        for part in ids:
            paths.validate_session_id(part)
        path = self.project_dir(project) / f"{ids[0]}.jsonl"
        for child in ids[1:]:
            path = next((p for p in self._children(project, path) if p.stem == child),
                        path.parent / path.stem / SUBAGENTS_DIR / f"{child}.jsonl")
        if not path.is_file():
            raise SessionNotFound(f"no session {key!r} in project {project!r}; see the sessions page")
        return path

    def _children(self, project: str, path: Path) -> list[Path]:
        """A session's subagent transcripts: beside it (``<id>/subagents/``) and, for a child that
        started its own, under the project folder by the child's id."""
        found = child_transcripts(path)
        flat = self.history / project / path.stem / SUBAGENTS_DIR
        if flat != path.parent / path.stem / SUBAGENTS_DIR and flat.is_dir():
            found += [p for p in sorted(flat.glob("*.jsonl")) if p.is_file() and _safe_id(p.stem)]
        return found

    def artifact_root(self, project: str, path: Path) -> Path:
        """A session's artifact folder: ``artifacts/<id>/`` beside its transcript, or — for a
        subagent — under the project folder, where the agent writes a child's artifacts."""
        beside = path.parent / "artifacts" / path.stem
        by_id = self.history / project / "artifacts" / path.stem
        return beside if beside.is_dir() or not by_id.is_dir() else by_id

    def find(self, project: str, key: str) -> SessionEntry:
        path = self.transcript_path(project, key)
        return self.entry(project, key, path)


def child_transcripts(path: Path) -> list[Path]:
    """Subagent transcripts of the session at ``path`` (``<id>/subagents/<child-id>.jsonl``)."""
    folder = path.parent / path.stem / SUBAGENTS_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.jsonl") if p.is_file() and _safe_id(p.stem))


def _safe_id(name: str) -> bool:
    try:
        paths.validate_session_id(name)
    except UsageError:
        return False
    return True


def format_stamp(stamp: str | None) -> str:
    """``2026-12-01T00:45:49.364Z`` → ``2026-12-01 00:45`` (the raw text when it does not parse)."""
    parsed = schema.parse_timestamp(stamp) if stamp else None
    if parsed is None:
        return stamp or "-"
    return parsed.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
