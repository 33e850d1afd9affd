"""Finding where a resume starts without parsing a multi-GB transcript.

Resume needs two offsets: the last ``compact_boundary`` line and the line of its first kept
message. Two ways to get them, the second the fallback of the first:

* the **sidecar index** ``<session>.idx`` (JSONL, one line appended by the writer after each
  boundary; resume reads only its last line): the boundary's offset and its first kept
  message's offset;
* a **backwards scan** of the file in blocks for the byte pattern ``"type":"compact_boundary"``;
  only matching lines are parsed, so the cost is the bytes after the boundary, not the file.

An index entry is trusted only after the lines it points at are read and checked, and the part
of the file the index does not cover is always scanned, so a lost, stale or corrupt index is
never fatal: it costs a scan, and the next writer rebuilds it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from mtagent.session import schema
from mtagent.session.reader import ReadReport, iter_entries

log = logging.getLogger(__name__)

INDEX_VERSION = 1
INDEX_TAIL_BYTES = 4096  # an entry is ~150 bytes; resume reads only the index's tail
SCAN_BLOCK_BYTES = 1024 * 1024
BOUNDARY_PATTERN = re.compile(rb'"type"\s*:\s*"compact_boundary"')
MESSAGE_PATTERN = re.compile(rb'"type"\s*:\s*"transcript_message"')


def index_path(transcript: Path) -> Path:
    return transcript.with_suffix(".idx")


@dataclass(slots=True)
class BoundaryEntry:
    offset: int
    id: str
    first_kept_id: str | None
    first_kept_offset: int | None


@dataclass(slots=True)
class ResumePoint:
    """Where to start reading: ``start`` is a line offset; everything before it is summarised."""

    start: int
    boundary_offset: int | None = None
    boundary_id: str | None = None
    first_kept_id: str | None = None
    source: Literal["index", "scan", "none"] = "none"
    notes: list[str] = field(default_factory=list)


# ── low-level line access ───────────────────────────────────────────────────────────────


def read_line_at(fd: int, offset: int) -> bytes | None:
    """The complete line starting at ``offset`` (without newline), or None if it has no newline."""
    parts: list[bytes] = []
    pos = offset
    while True:
        block = os.pread(fd, SCAN_BLOCK_BYTES, pos)
        if not block:
            return None
        nl = block.find(b"\n")
        if nl >= 0:
            parts.append(block[:nl])
            return b"".join(parts)
        parts.append(block)
        pos += len(block)


def _record_at(fd: int, offset: int) -> dict[str, Any] | None:
    line = read_line_at(fd, offset)
    return parse_line(line) if line is not None else None


def parse_line(line: bytes) -> dict[str, Any] | None:
    """A line's record, or None for anything unreadable (scans skip such lines)."""
    try:
        obj = schema.loads_line(line)
        return schema.parse_record(obj)
    except (ValueError, RecursionError):
        return None


def lines_backwards(fd: int, end: int, floor: int = 0,
                    pattern: re.Pattern[bytes] | None = None) -> Iterator[tuple[int, bytes]]:
    """Complete lines ending at or before ``end``, last first, as (offset, bytes).

    ``end`` must be a line end (just after a newline) or the file size; a trailing piece with
    no newline is a torn line and is not yielded. With ``pattern``, only lines containing it
    are yielded and blocks without a match are never split into lines — that is the speed.
    Lines starting before ``floor`` are not yielded.
    """
    pos = end
    pending: list[bytes] = []  # pieces of a line whose start is in an earlier block, last read first
    while pos > floor:
        step = min(SCAN_BLOCK_BYTES, pos - floor)
        pos -= step
        block = os.pread(fd, step, pos)
        nl = block.find(b"\n")
        if nl < 0:
            pending.append(block)
            continue
        complete = block[nl + 1:] + b"".join(reversed(pending))
        pending = [block[: nl + 1]]
        if complete and (pattern is None or pattern.search(complete)):
            yield from _split_reverse(complete[:-1], pos + nl + 1, pattern)
    starts_line = pos == 0 or (pos == floor and os.pread(fd, 1, floor - 1) == b"\n")
    if pending and starts_line:
        line = b"".join(reversed(pending))[:-1]
        if pattern is None or pattern.search(line):
            yield pos, line


def _split_reverse(data: bytes, base: int, pattern: re.Pattern[bytes] | None) -> Iterator[tuple[int, bytes]]:
    end = len(data)
    while end >= 0:
        start = data.rfind(b"\n", 0, end) + 1
        line = data[start:end]
        if pattern is None or pattern.search(line):
            yield base + start, line
        if start == 0:
            break
        end = start - 1


def clean_end(fd: int) -> int:
    """File size without a torn last line (where a reader's view of the file ends)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    pos = size
    while pos > 0:
        step = min(SCAN_BLOCK_BYTES, pos)
        pos -= step
        nl = os.pread(fd, step, pos).rfind(b"\n")
        if nl >= 0:
            return pos + nl + 1
    return 0


def scan_last_boundary(fd: int, end: int, floor: int = 0) -> tuple[int, dict[str, Any]] | None:
    """The last valid ``compact_boundary`` line in ``[floor, end)``, scanning backwards."""
    for offset, line in lines_backwards(fd, end, floor, BOUNDARY_PATTERN):
        record = parse_line(line)
        if record is not None and record.get("type") == schema.COMPACT_BOUNDARY:
            return offset, record
    return None


def _id_pattern(message_id: str) -> re.Pattern[bytes]:
    forms = {json.dumps(message_id, ensure_ascii=False).encode("utf-8", "surrogatepass"),
             json.dumps(message_id, ensure_ascii=True).encode()}
    return re.compile(rb'"id"\s*:\s*(?:' + b"|".join(re.escape(f) for f in forms) + rb")")


def scan_message_offset(fd: int, end: int, message_id: str) -> int | None:
    """Offset of the last ``transcript_message`` with ``message_id`` before ``end``."""
    for offset, line in lines_backwards(fd, end, 0, _id_pattern(message_id)):
        record = parse_line(line)
        if record is not None and record.get("type") == schema.TRANSCRIPT_MESSAGE \
                and record.get("id") == message_id:
            return offset
    return None


# ── the sidecar ─────────────────────────────────────────────────────────────────────────


def _entry_from(line: bytes) -> BoundaryEntry:
    e = json.loads(line)
    if e.get("v") != INDEX_VERSION:
        raise ValueError(f"index line version {e.get('v')!r}")
    kept = e.get("first_kept_offset")
    return BoundaryEntry(int(e["offset"]), str(e["id"]), e.get("first_kept_id"), None if kept is None else int(kept))


def _entry_line(entry: BoundaryEntry) -> bytes:
    return json.dumps({"v": INDEX_VERSION, **asdict(entry)}, separators=(",", ":")).encode() + b"\n"


_INDEX_ERRORS = (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError)


def load_index(transcript: Path) -> list[BoundaryEntry] | None:
    """Every entry of the index, or None when it is missing or has a bad line before its end."""
    try:
        lines = index_path(transcript).read_bytes().split(b"\n")
        return [_entry_from(line) for line in lines[:-1]]  # a torn last piece is dropped
    except _INDEX_ERRORS:
        return None


def last_index_entry(transcript: Path) -> BoundaryEntry | None:
    """The index's last complete entry, reading only its tail (None: missing, empty or unreadable)."""
    try:
        with open(index_path(transcript), "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - INDEX_TAIL_BYTES))
            tail = fh.read()
        lines = tail.split(b"\n")[:-1]
        return _entry_from(lines[-1]) if lines else None
    except _INDEX_ERRORS:
        return None


def save_index(transcript: Path, entries: list[BoundaryEntry]) -> None:
    """Rewrite the index atomically; failure only costs a scan later, so it is logged, not raised."""
    target = index_path(transcript)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(b"".join(_entry_line(e) for e in entries))
        os.replace(tmp, target)
    except OSError as exc:
        log.warning("could not write transcript index %s (%s); resume will scan instead", target, exc)
        with contextlib.suppress(OSError):
            tmp.unlink()


def append_index(transcript: Path, entry: BoundaryEntry) -> None:
    """Add one boundary's entry with a single append (a torn entry is ignored by readers)."""
    try:
        fd = os.open(index_path(transcript), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, _entry_line(entry))
        finally:
            os.close(fd)
    except OSError as exc:
        log.warning("could not update transcript index for %s (%s); resume will scan instead", transcript, exc)


def _entry_valid(fd: int, entry: BoundaryEntry, end: int) -> bool:
    if not 0 <= entry.offset < end:
        return False
    record = _record_at(fd, entry.offset)
    if record is None or record.get("type") != schema.COMPACT_BOUNDARY or record.get("id") != entry.id:
        return False
    if record.get("first_kept_id") != entry.first_kept_id:
        return False
    if entry.first_kept_offset is None:
        return True
    if not 0 <= entry.first_kept_offset < entry.offset:
        return False
    kept = _record_at(fd, entry.first_kept_offset)
    return kept is not None and kept.get("id") == entry.first_kept_id


def locate_resume_point(transcript: str | os.PathLike[str]) -> ResumePoint:
    """Where resume starts reading, trusting the index only as far as it checks out."""
    transcript = Path(transcript)
    fd = os.open(transcript, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return _locate(fd, transcript)
    finally:
        os.close(fd)


def _locate(fd: int, transcript: Path) -> ResumePoint:
    end = clean_end(fd)
    notes: list[str] = []
    last = last_index_entry(transcript)
    trusted: BoundaryEntry | None = None
    if last is not None:
        if _entry_valid(fd, last, end):
            trusted = last
        else:
            notes.append("transcript index does not match the file; scanned instead")
    elif index_path(transcript).exists() and index_path(transcript).stat().st_size:
        notes.append("transcript index unreadable; scanned instead")
    floor = trusted.offset + 1 if trusted else 0
    found = scan_last_boundary(fd, end, floor)
    if found is not None:
        offset, record = found
        kept_id = record.get("first_kept_id")
        kept_offset = scan_message_offset(fd, offset, kept_id) if kept_id else None
        if kept_id and kept_offset is None:
            notes.append(f"first kept message {kept_id} of boundary {record['id']} not found before it")
        return ResumePoint(kept_offset if kept_offset is not None else offset, offset, str(record["id"]),
                           kept_id, "scan", notes)
    if trusted is not None:
        kept_offset = trusted.first_kept_offset
        if kept_offset is None and trusted.first_kept_id:
            kept_offset = scan_message_offset(fd, trusted.offset, trusted.first_kept_id)
        start = kept_offset if kept_offset is not None else trusted.offset
        return ResumePoint(start, trusted.offset, trusted.id, trusted.first_kept_id, "index", notes)
    return ResumePoint(0, notes=notes)


def scan_all_boundaries(fd: int, end: int) -> list[tuple[int, dict[str, Any]]]:
    """Every boundary in the file, in order (used to rebuild a lost index)."""
    found = [(o, r) for o, line in lines_backwards(fd, end, 0, BOUNDARY_PATTERN)
             if (r := parse_line(line)) is not None and r.get("type") == schema.COMPACT_BOUNDARY]
    found.reverse()
    return found


class WriterIndex:
    """The writer's side: remembers recent message offsets so each boundary's entry is exact.

    Only messages since the current view's first kept message are remembered — a boundary's
    kept tail always lies there — so memory follows the view, not the session.
    """

    def __init__(self, transcript: Path, entries: list[BoundaryEntry], offsets: dict[str, int]) -> None:
        self.transcript = transcript
        self.entries = entries
        self._offsets = offsets

    @classmethod
    def open(cls, transcript: Path, size: int) -> WriterIndex:
        if size == 0:
            save_index(transcript, [])
            return cls(transcript, [], {})
        fd = os.open(transcript, os.O_RDONLY | os.O_CLOEXEC)
        try:
            point = _locate(fd, transcript)
            entries = load_index(transcript)
            if entries is None or point.notes or (entries and entries[-1].offset >= size):
                entries = [BoundaryEntry(o, str(r["id"]), r.get("first_kept_id"),
                                         scan_message_offset(fd, o, r["first_kept_id"])
                                         if r.get("first_kept_id") else None)
                           for o, r in scan_all_boundaries(fd, clean_end(fd))]
        finally:
            os.close(fd)
        index = cls(transcript, [e for e in entries if e.offset < point.start], {})
        for entry in iter_entries(transcript, start=point.start, skip_corrupt=True, report=ReadReport()):
            index.observe(entry.record, entry.offset, save=False)
        save_index(transcript, index.entries)
        return index

    def observe(self, record: dict[str, Any], offset: int, *, save: bool = True) -> None:
        kind = record.get("type")
        if kind == schema.TRANSCRIPT_MESSAGE and isinstance(record.get("id"), str):
            self._offsets[record["id"]] = offset
        elif kind == schema.COMPACT_BOUNDARY:
            kept_id = record.get("first_kept_id")
            kept_offset = self._offsets.get(kept_id) if isinstance(kept_id, str) else None
            entry = BoundaryEntry(offset, str(record.get("id")), kept_id, kept_offset)
            self.entries.append(entry)
            floor = kept_offset if kept_offset is not None else offset
            self._offsets = {k: v for k, v in self._offsets.items() if v >= floor}
            if save:
                append_index(self.transcript, entry)
