"""Reading a transcript: stream records from a byte offset, tolerating exactly what a crash leaves.

A torn last line (no newline, or not JSON: what a crash mid-write leaves) is warned about and
ignored — readers never modify the file; only the next writer repairs it. Any other bad line is
:class:`~mtagent.errors.TranscriptCorrupt` unless the caller asks to skip it. Kept apart from the
writer (:mod:`mtagent.session.transcript`) so the boundary index can read without importing it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent.errors import TranscriptCorrupt
from mtagent.session import schema

log = logging.getLogger(__name__)

READ_CHUNK_BYTES = 8 * 1024 * 1024


@dataclass(slots=True)
class Entry:
    """One record read back, with the byte offset of its line."""

    offset: int
    record: dict[str, Any]


@dataclass(slots=True)
class ReadReport:
    """What a read noticed without failing: torn tail, skipped lines, unknown record types."""

    warnings: list[str] = field(default_factory=list)
    torn_tail_offset: int | None = None
    skipped_corrupt: int = 0
    skipped_unknown: int = 0
    bytes_read: int = 0
    records: int = 0
    log_warnings: bool = False  # a caller holding the report shows its warnings itself
    _unknown_seen: set[str] = field(default_factory=set)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        log.log(logging.WARNING if self.log_warnings else logging.DEBUG, "%s", message)


def _line_number(path: Path, offset: int) -> int:
    """1-based line number of the line starting at ``offset`` (only computed on the error path)."""
    count = 0
    with open(path, "rb") as fh:
        remaining = offset
        while remaining > 0:
            block = fh.read(min(READ_CHUNK_BYTES, remaining))
            if not block:
                break
            count += block.count(b"\n")
            remaining -= len(block)
    return count + 1


def iter_entries(path: str | os.PathLike[str], *, start: int = 0, skip_corrupt: bool = False,
                 report: ReadReport | None = None,
                 on_line: Callable[[int, bytes], None] | None = None) -> Iterator[Entry]:
    """Stream the records of a transcript from byte ``start`` (a line start) to the end.

    The file is opened read-only and never changed. A torn last line (no newline, or not JSON:
    what a crash mid-write leaves) is warned about and ignored; any other bad line — not JSON
    with lines after it, or JSON that is not a valid record — raises :class:`TranscriptCorrupt`
    (or is skipped with a warning when ``skip_corrupt``). Unknown record types are skipped with one
    warning per type. Warnings go to ``report`` when one is given, else to the log.
    """
    path = Path(path)
    report = report if report is not None else ReadReport(log_warnings=True)
    pending_bad: tuple[int, str] | None = None
    with open(path, "rb") as fh:
        fh.seek(start)
        offset = start
        carry = b""
        while True:
            chunk = fh.read(READ_CHUNK_BYTES)
            if not chunk:
                break
            report.bytes_read += len(chunk)
            data = carry + chunk if carry else chunk
            lines = data.split(b"\n")
            carry = lines.pop()
            for line in lines:
                line_offset = offset
                offset += len(line) + 1
                if pending_bad is not None:
                    _bad_line(path, pending_bad, skip_corrupt, report)
                    pending_bad = None
                if on_line is not None:
                    on_line(line_offset, line)
                entry, bad, maybe_torn = _decode(line, line_offset, report)
                if bad is not None and maybe_torn:
                    pending_bad = (line_offset, bad)  # torn if it turns out to be the last line
                elif bad is not None:
                    _bad_line(path, (line_offset, bad), skip_corrupt, report)
                elif entry is not None:
                    report.records += 1
                    yield entry
    if carry:
        report.torn_tail_offset = offset
        report.warn(f"transcript {path}: ignoring a torn last line at byte {offset} "
                    f"({len(carry)} bytes, no newline) — likely a crash while writing; "
                    "the next writer removes it")
        if pending_bad is not None:
            _bad_line(path, pending_bad, skip_corrupt, report)
    elif pending_bad is not None:  # complete (newline-terminated): corrupt data, not a torn write
        _bad_line(path, pending_bad, skip_corrupt, report)


def _bad_line(path: Path, bad: tuple[int, str], skip: bool, report: ReadReport) -> None:
    offset, reason = bad
    if not skip:
        raise TranscriptCorrupt(str(path), _line_number(path, offset), f"{reason} (byte {offset})")
    report.skipped_corrupt += 1
    report.warn(f"transcript {path}: skipped corrupt line {_line_number(path, offset)}: {reason}")


def _decode(line: bytes, offset: int, report: ReadReport) -> tuple[Entry | None, str | None, bool]:
    """(entry, why the line is bad, whether it could be a torn write — i.e. is not JSON at all)."""
    if not line.strip():
        return None, "blank line", True
    try:
        obj = schema.loads_line(line)
    except ValueError as exc:
        return None, f"not valid JSON ({exc.__class__.__name__}: {str(exc)[:120]})", True
    except RecursionError:
        return None, "JSON nested too deeply", True
    try:
        record = schema.parse_record(obj)
    except schema.UnknownRecord as exc:
        report.skipped_unknown += 1
        kind = str(obj.get("type"))[:80] if isinstance(obj, dict) else "?"
        if kind not in report._unknown_seen:
            report._unknown_seen.add(kind)
            report.warn(f"skipping record(s) this mtagent cannot read: {exc}; they stay in the file")
        return None, None, False
    except schema.RecordError as exc:
        return None, str(exc), False
    return Entry(offset, record), None, False


def read_records(path: str | os.PathLike[str], *, start: int = 0, skip_corrupt: bool = False,
                 report: ReadReport | None = None) -> list[dict[str, Any]]:
    """All records from ``start`` on, as a list (see :func:`iter_entries`)."""
    return [e.record for e in iter_entries(path, start=start, skip_corrupt=skip_corrupt, report=report)]


def read_first_record(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The first line's record (normally ``session_start``) without reading further."""
    with open(path, "rb") as fh:
        line = fh.readline()
    if not line.endswith(b"\n"):
        return None
    try:
        return schema.parse_record(schema.loads_line(line))
    except (ValueError, RecursionError):
        return None
