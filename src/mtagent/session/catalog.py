"""A project's sessions at a glance, without parsing their transcripts.

``mtagent sessions list`` must stay fast next to multi-GB transcripts, so counts come from
byte patterns (``"type":"transcript_message"``), the start from the first line and the last
activity from the last complete line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from mtagent.session import schema
from mtagent.session.index import BOUNDARY_PATTERN, MESSAGE_PATTERN, clean_end, parse_line, lines_backwards
from mtagent.session.reader import READ_CHUNK_BYTES, read_first_record


@dataclass(slots=True, frozen=True)
class SessionInfo:
    session_id: str
    path: Path
    started: datetime | None
    last_activity: datetime | None
    messages: int
    compactions: int
    size_bytes: int
    model: str | None


def count_patterns(path: Path, patterns: list[re.Pattern[bytes]], keep: int = 256) -> list[int]:
    """Occurrences of each short pattern in the file, in one chunked pass.

    The last ``keep`` bytes of each chunk are carried into the next read, so a match cut by a
    chunk edge is counted once (``keep`` must exceed the longest match).
    """
    totals = [0] * len(patterns)
    skip = [0] * len(patterns)  # per pattern: bytes at the start of ``data`` already inside a counted match
    carry = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(READ_CHUNK_BYTES):
            data = carry + chunk
            cut = max(len(data) - keep, 0)
            for i, pattern in enumerate(patterns):
                end = skip[i]
                for match in pattern.finditer(data, skip[i]):
                    if match.start() >= cut:
                        break
                    totals[i] += 1
                    end = match.end()
                skip[i] = max(end - cut, 0)
            carry = data[cut:]
    return [totals[i] + len(pattern.findall(carry, skip[i])) for i, pattern in enumerate(patterns)]


def _last_timestamp(path: Path) -> datetime | None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        for _, line in lines_backwards(fd, clean_end(fd)):
            record = parse_line(line)
            if record is not None and (stamp := schema.parse_timestamp(record.get("timestamp"))):
                return stamp
            break
    finally:
        os.close(fd)
    return None


def session_info(path: Path) -> SessionInfo:
    first = read_first_record(path) or {}
    stat = path.stat()
    last = _last_timestamp(path) or datetime.fromtimestamp(stat.st_mtime, UTC)
    messages, compactions = count_patterns(path, [MESSAGE_PATTERN, BOUNDARY_PATTERN])
    return SessionInfo(
        session_id=path.stem,
        path=path,
        started=schema.parse_timestamp(first.get("timestamp")),
        last_activity=last,
        messages=messages,
        compactions=compactions,
        size_bytes=stat.st_size,
        model=first.get("model") if first.get("type") == schema.SESSION_START else None,
    )
