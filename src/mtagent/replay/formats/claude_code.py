"""Claude Code session JSONL (``~/.claude/projects/<project>/<session>.jsonl``) → messages.

Only ``user`` and ``assistant`` records are model context; ``progress``, ``file-history-snapshot``,
``queue-operation`` and ``system`` records are bookkeeping and are dropped. One model response is
spread over consecutive assistant lines sharing ``message.id``; they are merged into one
AIMessage (thinking and text blocks → content, ``tool_use`` blocks → tool calls).

**Compaction boundaries are marked, not stopped at.** Claude Code's own ``compact_boundary``
resets its context to a summary (the following ``isCompactSummary`` user message). We replay the
whole session as one uncompacted history, drop Claude Code's own summary message (it is the
output of Claude Code's strategy, not of the user) and record the boundaries in
``meta["compact_boundaries"]`` (the index of the first message after each one), so every
strategy faces the same full session and Claude Code's own recorded usage is its score.

Recorded usage per model call (``input_tokens + cache_read + cache_creation``) is kept. The
recording has no system prompt or tool schemas (Claude Code sends ~12-25K tokens of them), so
recorded input is larger than any replayed view by about that much on every call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from mtagent.errors import ReplayFormatError
from mtagent.replay.formats.claude_subagents import with_subagents
from mtagent.replay.trajectory import (RecordedUsage, Trajectory, ai, finish, human, jsonl_objects, parse_arguments,
                                       text_of, tool)

FORMAT = "claude-code"
_CONTEXT_TYPES = {"user", "assistant"}
_KNOWN_TYPES = _CONTEXT_TYPES | {"progress", "file-history-snapshot", "queue-operation", "system", "summary"}


def sniff(path: Path, head: str) -> bool:
    first = head.lstrip().split("\n", 1)[0]
    if not first.startswith("{"):
        return False
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("type") in _KNOWN_TYPES and (
        "sessionId" in record or "uuid" in record or "messageId" in record
    )


def _records(path: Path) -> list[dict[str, Any]]:
    expected = "a Claude Code session JSONL (one record a line, each with a 'type')"
    return [record for _, record in jsonl_objects(path, expected, "type")]


def load(path: Path) -> list[Trajectory]:
    """The session, then the Task subagents linked to it (:mod:`.claude_subagents`)."""
    return with_subagents(path, _load_one(path), _load_one)


def _load_one(path: Path) -> Trajectory:
    records = _records(path)
    messages: list[BaseMessage] = []
    by_message_id: dict[str, AIMessage] = {}
    usage: dict[str, RecordedUsage] = {}
    boundaries: list[int] = []
    own_summaries = 0
    for n, record in enumerate(records):
        kind = record.get("type")
        ts = record.get("timestamp")
        if kind == "system" and record.get("subtype") == "compact_boundary":
            boundaries.append(len(messages))
            continue
        if kind not in _CONTEXT_TYPES:
            continue
        body = record.get("message")
        if not isinstance(body, dict):
            raise ReplayFormatError(f"{path}: record {n + 1} ({kind}) has no 'message' object")
        if kind == "assistant":
            _merge_assistant(body, record, messages, by_message_id, usage, n)
        else:
            if record.get("isCompactSummary"):
                own_summaries += 1
                continue
            _add_user(body.get("content"), record, messages, n, ts)
    meta = {
        "source": str(path),
        "compact_boundaries": boundaries,
        "own_summaries_dropped": own_summaries,
        "sidechain": any(r.get("isSidechain") for r in records),
    }
    return finish(messages, FORMAT, recorded_usage=usage, meta=meta)


def _merge_assistant(
    body: dict[str, Any],
    record: dict[str, Any],
    messages: list[BaseMessage],
    by_message_id: dict[str, AIMessage],
    usage: dict[str, RecordedUsage],
    n: int,
) -> None:
    message_id = str(body.get("id") or record.get("uuid") or f"assistant-{n}")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    content = body.get("content")
    for block in content if isinstance(content, list) else [{"type": "text", "text": text_of(content)}]:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and block.get("text", "").strip():
            texts.append(block["text"])
        elif btype == "thinking" and block.get("thinking", "").strip():
            texts.append(block["thinking"])
        elif btype == "tool_use":
            calls.append({"id": block.get("id") or f"{message_id}-call-{len(calls)}", "name": block.get("name", "tool"),
                          "args": parse_arguments(block.get("input"))})
    existing = by_message_id.get(message_id)
    if existing is None:
        message = ai("\n\n".join(texts), message_id, calls, record.get("timestamp"))
        by_message_id[message_id] = message
        messages.append(message)
    else:
        joined = "\n\n".join(t for t in [str(existing.content)] + texts if t)
        existing.content = joined
        existing.tool_calls = list(existing.tool_calls) + [
            {"id": str(c["id"]), "name": str(c["name"]), "args": c["args"], "type": "tool_call"} for c in calls
        ]
    u = body.get("usage")
    if isinstance(u, dict):
        usage[message_id] = RecordedUsage(
            input_tokens=int(u.get("input_tokens") or 0),
            output_tokens=int(u.get("output_tokens") or 0),
            cache_read_tokens=int(u.get("cache_read_input_tokens") or 0),
            cache_write_tokens=int(u.get("cache_creation_input_tokens") or 0),
        )


def _add_user(content: Any, record: dict[str, Any], messages: list[BaseMessage], n: int, ts: str | None) -> None:
    uuid = str(record.get("uuid") or f"user-{n}")
    if isinstance(content, str):
        if content.strip():
            messages.append(human(content, uuid, ts, injected=bool(record.get("isMeta"))))
        return
    if not isinstance(content, list):
        return
    texts: list[str] = []
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            messages.append(
                tool(
                    text_of(block.get("content")),
                    f"{uuid}-r{i}",
                    str(block.get("tool_use_id")),
                    _tool_name(messages, str(block.get("tool_use_id"))),
                    error=bool(block.get("is_error")),
                    timestamp=ts,
                )
            )
        elif block.get("type") == "text" and str(block.get("text", "")).strip():
            texts.append(str(block["text"]))
        elif block.get("type") == "image":
            texts.append("[image]")
    if texts:
        messages.append(human("\n".join(texts), uuid, ts, injected=bool(record.get("isMeta"))))


def _tool_name(messages: list[BaseMessage], call_id: str) -> str | None:
    for m in reversed(messages):
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                if call["id"] == call_id:
                    return call["name"]
    return None
