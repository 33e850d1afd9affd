"""mtagent's own session transcripts (JSONL records, schema v2) → messages.

Every ``transcript_message`` record is converted with :func:`mtagent.session.schema.record_to_message`
(the same function resume uses) and kept in file order, which is the full uncompacted history:
kept messages are written before a ``compact_boundary``, so like Claude Code sessions the
boundaries are only marked (``meta["compact_boundaries"]``) and every strategy replays the
whole session. Recorded ``usage`` of assistant messages is kept for comparison.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from mtagent.replay.trajectory import RecordedUsage, Trajectory, finish, jsonl_objects

FORMAT = "mtagent"


def sniff(head: str) -> bool:
    first = head.lstrip().split("\n", 1)[0]
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and "schema_version" in record and record.get("type") in (
        "session_start",
        "transcript_message",
    )


def load(path: Path) -> list[Trajectory]:
    from mtagent.session.schema import record_to_message

    messages: list[BaseMessage] = []
    boundaries: list[int] = []
    usage: dict[str, RecordedUsage] = {}
    session: dict[str, Any] = {}
    for _line_no, record in jsonl_objects(path, "an mtagent transcript record", "type"):
        kind = record["type"]
        if kind == "session_start":
            session = record
        elif kind == "compact_boundary":
            boundaries.append(len(messages))
        elif kind == "transcript_message":
            message = record_to_message(record)
            stamp = record.get("timestamp")
            if stamp:
                meta = dict(message.response_metadata or {})
                meta["mtagent"] = {**(meta.get("mtagent") or {}), "timestamp": stamp}
                message.response_metadata = meta
            messages.append(message)
            u = record.get("usage")
            if isinstance(message, AIMessage) and isinstance(u, dict):
                usage[str(message.id)] = RecordedUsage(int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0))
    meta = {"source": str(path), "session_id": session.get("session_id"), "model": session.get("model"), "compact_boundaries": boundaries}
    return [finish(messages, FORMAT, recorded_usage=usage, meta=meta)]
