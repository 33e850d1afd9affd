"""A session's artifacts and session memory: listing, line ranges, streaming and search.

Artifact paths come from transcripts, which are untrusted: every read goes through
:meth:`ArtifactStore.resolve`, which refuses anything outside the session's artifact folder
(``..``, absolute paths, symlinks out); a path too long to be a file name is refused the same
way (a 4xx page, not a server error). Files are read line by line or in chunks, never whole,
so a 64 MB artifact costs a page no more memory than the lines it shows; the raw view streams
the file in chunks cut on line ends, each redacted before it leaves the server. A line is
redacted whole before the page cuts it, and a line too long for one chunk is cut only where
redacting the two sides apart gives what redacting them together gives (no secret is split).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent.errors import ArtifactPathError
from mtagent.session import schema
from mtagent.session.artifacts import SESSION_MEMORY_DIR, TOOL_RESULTS_DIR, ArtifactStore
from mtagent.ui.records import Redactor

MAX_PATH_CHARS = 1024
LONG_LINE_CHUNKS = 4  # a line is cut inside only past this many chunks without a newline
CUT_TRIES = 16
MIN_KEEP_BYTES = 16 * 1024  # held back past a cut inside a line: longer than any key shape or PEM key


def _target(store: ArtifactStore, relative: str) -> Path:
    """The artifact's file, or :class:`ArtifactPathError` — never an ``OSError`` from a bad name."""
    if len(relative) > MAX_PATH_CHARS:
        raise ArtifactPathError(f"artifact path of {len(relative):,} characters is too long "
                                f"(at most {MAX_PATH_CHARS:,}); transcripts name short paths in tool-results/")
    target = store.resolve(relative)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        raise ArtifactPathError(f"artifact {relative!r} is missing from {store.root}") from None
    except OSError as exc:
        raise ArtifactPathError(f"artifact {relative[:80]!r} cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise ArtifactPathError(f"artifact {relative!r} is missing from {store.root}")
    return target


@dataclass(slots=True)
class ArtifactEntry:
    """A stored tool result: what the transcript says about it, and whether the file is there."""

    path: str
    tool_call_id: str | None = None
    tool: str | None = None
    original_chars: int | None = None
    stored_bytes: int | None = None
    truncated: bool = False
    present: bool = False


def list_artifacts(store: ArtifactStore, records: Sequence[dict[str, Any]]) -> list[ArtifactEntry]:
    """Tool results named by the transcript, then any other files in ``tool-results/``."""
    entries: dict[str, ArtifactEntry] = {}
    for rec in records:
        if rec.get("type") != schema.TOOL_RESULT_ARTIFACT or not isinstance(rec.get("path"), str):
            continue
        path = rec["path"]
        entries[path] = ArtifactEntry(
            path, str(rec.get("tool_call_id") or "") or None, rec.get("tool") if isinstance(rec.get("tool"), str) else None,
            _int(rec.get("original_chars")), _int(rec.get("stored_bytes")), bool(rec.get("truncated")),
            store.exists(path))
    for file in store.list_tool_results():
        rel = f"{TOOL_RESULTS_DIR}/{file.name}"
        if rel not in entries and store.exists(rel):
            entries[rel] = ArtifactEntry(rel, stored_bytes=file.stat().st_size, present=True)
    return list(entries.values())


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def readable_paths(store: ArtifactStore, records: Sequence[dict[str, Any]]) -> list[str]:
    """Every file the search covers: present tool results and the session-memory notes."""
    found = [e.path for e in list_artifacts(store, records) if e.present]
    memory = f"{SESSION_MEMORY_DIR}/summary.md"
    if store.exists(memory):
        found.append(memory)
    return found


@dataclass(slots=True)
class LinePage:
    """Lines ``start``..``end`` (1-based, inclusive) of an artifact, and how many it has."""

    path: str
    start: int
    end: int
    total: int
    lines: list[tuple[int, str, bool]]  # (number, text, cut)


def read_lines(store: ArtifactStore, relative: str, start: int, count: int, redactor: Redactor,
               max_chars: int) -> LinePage:
    """Up to ``count`` lines from ``start`` (1-based); a line longer than ``max_chars`` is cut."""
    target = _target(store, relative)
    start = max(1, start)
    lines: list[tuple[int, str, bool]] = []
    total = 0
    with open(target, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            total = number
            if start <= number < start + count:
                text = redactor.text(raw.decode("utf-8", "replace").rstrip("\r\n"))  # whole, then cut
                lines.append((number, text[:max_chars], len(text) > max_chars))
    end = lines[-1][0] if lines else start - 1
    return LinePage(relative, start, end, total, lines)


def stream_artifact(store: ArtifactStore, relative: str, redactor: Redactor, chunk_bytes: int) -> Iterator[bytes]:
    """The whole file in chunks cut after a newline (so a secret is never split), each redacted."""
    target = _target(store, relative)
    handle = open(target, "rb")  # noqa: SIM115 - closed by the generator

    def chunks() -> Iterator[bytes]:
        carry = b""
        long_line = LONG_LINE_CHUNKS * chunk_bytes  # try a cut inside a line once it is this long
        keep = max(chunk_bytes, MIN_KEEP_BYTES, 2 * max(map(len, redactor.secrets), default=0))
        with handle:
            while block := handle.read(chunk_bytes):
                data = carry + block
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    cut = _inside_line_cut(data, redactor, keep) if len(data) >= long_line else 0
                    if cut == 0:  # no safe cut yet: try again when twice as much is held
                        long_line = max(long_line, 2 * len(data)) if len(data) >= long_line else long_line
                        carry = data
                        continue
                long_line = LONG_LINE_CHUNKS * chunk_bytes
                carry = data[cut:]
                yield redactor.text(data[:cut].decode("utf-8", "replace")).encode("utf-8")
            if carry:
                yield redactor.text(carry.decode("utf-8", "replace")).encode("utf-8")

    return chunks()


def _char_start(data: bytes, cut: int) -> int:
    """``cut`` moved back to the start of a UTF-8 character (never inside one)."""
    while cut > 0 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return cut


def _inside_line_cut(data: bytes, redactor: Redactor, keep: int) -> int:
    """Where to cut ``data`` (one long line) so no secret is split: at least ``keep`` bytes (longer
    than any secret) stay for the next chunk, so a secret crossing the cut ends inside ``data``; and redacting the two
    sides apart must equal redacting them together. 0: no safe cut found yet (read on; the line
    is held until a cut is safe or the file ends)."""
    text = data.decode("utf-8", "replace")
    whole = redactor.text(text)
    step = max(1, keep // CUT_TRIES)
    cut = len(data) - keep
    for _ in range(CUT_TRIES):
        cut = _char_start(data, cut)
        if cut <= 0:
            return 0
        head, tail = data[:cut].decode("utf-8", "replace"), data[cut:].decode("utf-8", "replace")
        if head + tail == text and redactor.text(head) + redactor.text(tail) == whole:
            return cut
        cut -= step
    return 0


@dataclass(slots=True, frozen=True)
class ArtifactHit:
    path: str
    line: int
    text: str


@dataclass(slots=True)
class SearchResult:
    query: str
    hits: list[ArtifactHit] = field(default_factory=list)
    files_searched: int = 0
    capped: bool = False


def search(store: ArtifactStore, paths: Sequence[str], query: str, redactor: Redactor, *,
           max_hits: int, max_chars: int) -> SearchResult:
    """Lines containing ``query`` (case-insensitive) across ``paths``, up to ``max_hits``.

    The match is made on the redacted line, so searching for a secret finds nothing.
    """
    result = SearchResult(query)
    needle = query.casefold()
    if not needle:
        return result
    for relative in paths:
        try:
            target = _target(store, relative)
        except ArtifactPathError:
            continue
        result.files_searched += 1
        with open(target, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                text = redactor.text(raw.decode("utf-8", "replace").rstrip("\r\n"))
                if needle in text.casefold():
                    if len(result.hits) >= max_hits:
                        result.capped = True
                        return result
                    result.hits.append(ArtifactHit(relative, number, text[:max_chars]))
    return result


@dataclass(slots=True, frozen=True)
class MemorySnapshot:
    """Session-memory notes at one point: an update's figures, or the text a compaction used."""

    timestamp: str | None
    kind: str  # "update" | "compaction"
    tokens: int | None
    sections: dict[str, int]
    text: str | None
    label: str


def memory_history(records: Sequence[dict[str, Any]]) -> list[MemorySnapshot]:
    """How the notes evolved: each ``session_memory_update`` and each compaction built from them."""
    out: list[MemorySnapshot] = []
    for rec in records:
        kind = rec.get("type")
        if kind == schema.SESSION_MEMORY_UPDATE:
            sections = rec.get("sections") if isinstance(rec.get("sections"), dict) else {}
            out.append(MemorySnapshot(rec.get("timestamp"), "update", _int(rec.get("tokens")),
                                      {str(k): _int(v) or 0 for k, v in sections.items()}, None,
                                      f"update up to {rec.get('last_summarized_message_id') or '?'}"))
        elif kind == schema.COMPACT_BOUNDARY and rec.get("summary_source") == "session_memory":
            out.append(MemorySnapshot(rec.get("timestamp"), "compaction", None, {}, str(rec.get("summary") or ""),
                                      f"compaction {rec.get('id', '')} used the notes as its hand-off summary"))
    return out


def current_memory(store: ArtifactStore, redactor: Redactor) -> str | None:
    path: Path = store.session_memory_path
    if not path.is_file():
        return None
    try:
        return redactor.text(store.read_text(f"{SESSION_MEMORY_DIR}/summary.md"))
    except ArtifactPathError:
        return None


@dataclass(slots=True, frozen=True)
class MemoryFileView:
    """One file of the project's long-term memory (``MEMORY.md``, topic files, ``team/``)."""

    name: str
    lines: list[str]
    cut: bool


def project_memory(folder: Path, redactor: Redactor, max_lines: int) -> list[MemoryFileView]:
    """The project's long-term memory files, read-only; anything resolving outside ``folder`` is skipped."""
    if not folder.is_dir():
        return []
    root = folder.resolve()
    out: list[MemoryFileView] = []
    for path in sorted([*folder.glob("*.md"), *folder.glob("*/*.md")]):
        target = path.resolve()
        if root not in target.parents or not target.is_file():
            continue
        lines: list[str] = []
        cut = False
        with open(target, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                if number > max_lines:
                    cut = True
                    break
                lines.append(redactor.text(raw.decode("utf-8", "replace").rstrip("\r\n")))
        out.append(MemoryFileView(path.relative_to(folder).as_posix(), lines, cut))
    return out
