"""Read-side queries the files backend answers from the folder: session summaries and raw lines.

``mtagent sessions list`` must stay fast next to long sessions, so one query returns per session
the first and last record and the counts the list shows; the row sizes come from the varlena
headers (``octet_length`` of a ``bytea`` does not decompress it). Raw lines are the records'
own bytes, so a mirrored or exported transcript is byte-for-byte what was written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mtagent.session import schema

_SUMMARY = """
    SELECT s.session_id, agg.messages, agg.compactions, agg.size,
        (SELECT f.line FROM mtagent_transcript f WHERE f.tenant = s.tenant AND f.project = s.project
            AND f.session_id = s.session_id ORDER BY f.seq LIMIT 1),
        (SELECT l.line FROM mtagent_transcript l WHERE l.tenant = s.tenant AND l.project = s.project
            AND l.session_id = s.session_id ORDER BY l.seq DESC LIMIT 1)
    FROM mtagent_sessions s
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE t.kind = 'transcript_message') AS messages,
               count(*) FILTER (WHERE t.kind = 'compact_boundary') AS compactions,
               coalesce(sum(octet_length(t.line) + 1), 0) AS size
        FROM mtagent_transcript t
        WHERE t.tenant = s.tenant AND t.project = s.project AND t.session_id = s.session_id) agg
    WHERE s.tenant = %s AND s.project = %s
    ORDER BY s.session_id
"""


@dataclass(slots=True, frozen=True)
class SessionRow:
    session_id: str
    messages: int
    compactions: int
    size_bytes: int
    first: dict[str, Any]
    last: dict[str, Any]


def _record(line: Any) -> dict[str, Any]:
    if line is None:
        return {}
    try:
        record = schema.loads_line(bytes(line))
    except (ValueError, RecursionError):  # a listing shows what it can; `show` reports the bad line
        return {}
    return record if isinstance(record, dict) else {}


def session_rows(store: Any, project: str) -> list[SessionRow]:
    """One row per session of ``project`` in the store's tenant, oldest first."""
    rows = store._all(_SUMMARY, (store.tenant, project))
    return [SessionRow(sid, int(m), int(c), int(size), _record(first), _record(last))
            for sid, m, c, size, first, last in rows]


def read_lines(store: Any, project: str, session_id: str, *, start: int = 0) -> list[tuple[int, bytes]]:
    """``(seq, line)`` of the session's records from ``start`` on, the stored bytes unchanged."""
    rows = store._all("SELECT seq, line FROM mtagent_transcript WHERE tenant = %s AND project = %s"
                      " AND session_id = %s AND seq >= %s ORDER BY seq",
                      (store.tenant, project, session_id, start))
    return [(int(seq), bytes(line)) for seq, line in rows]
