"""The converted form of a recorded session, and the protocol checks every converter ends with.

A :class:`Trajectory` is a langchain-core message list with stable ids plus the indices of the
recorded model calls (one per assistant message). Converters build messages with the small
helpers here so every format stamps ids and timestamps the same way, then call
:func:`finish` which repairs what a recording may leave broken (a tool call the user
interrupted has no result; a result whose call was never recorded) so that the replayed
history is a valid request at every model call. Repairs are counted in ``meta["repairs"]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.context.tokens import content_text
from mtagent.errors import ReplayFormatError


@dataclass(slots=True)
class RecordedUsage:
    """What the recording's own provider reported for one model call (tokens)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_input(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(slots=True)
class Trajectory:
    """A recorded session as messages. ``model_calls[i]`` is the index of the i-th AIMessage."""

    messages: list[BaseMessage]
    format: str
    model_calls: list[int]
    recorded_usage: list[RecordedUsage | None] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


def mt_meta(timestamp: str | float | None = None, **extra: Any) -> dict[str, Any]:
    """``response_metadata`` carrying the recording's timestamp (ISO-8601 text or POSIX seconds)."""
    data: dict[str, Any] = {k: v for k, v in extra.items() if v is not None}
    if isinstance(timestamp, int | float) and not isinstance(timestamp, bool):
        data["timestamp"] = float(timestamp)
    elif timestamp:
        data["timestamp"] = str(timestamp)
    return {"mtagent": data} if data else {}


def system(text: str, msg_id: str, timestamp: str | float | None = None) -> SystemMessage:
    return SystemMessage(content=text, id=msg_id, response_metadata=mt_meta(timestamp))


def human(text: str, msg_id: str, timestamp: str | float | None = None, *, injected: bool = False) -> HumanMessage:
    """A user message; ``injected`` marks content the harness added, not the person."""
    return HumanMessage(content=text, id=msg_id, response_metadata=mt_meta(timestamp, injected=injected or None))


def ai(text: str, msg_id: str, calls: Sequence[dict[str, Any]] = (), timestamp: str | float | None = None) -> AIMessage:
    """An assistant message; ``calls`` are ``{"id", "name", "args"}`` dicts. Arguments a recording
    holds as something other than an object (a string, a list) are read by :func:`parse_arguments`,
    so one malformed call does not make the whole session unreadable."""
    tool_calls = [
        {"id": str(c["id"]), "name": str(c["name"]), "args": parse_arguments(c.get("args")), "type": "tool_call"}
        for c in calls
    ]
    return AIMessage(content=text, id=msg_id, tool_calls=tool_calls, response_metadata=mt_meta(timestamp))


def tool(
    text: str, msg_id: str, call_id: str, name: str | None, *, error: bool = False, timestamp: str | float | None = None
) -> ToolMessage:
    return ToolMessage(
        content=text,
        id=msg_id,
        tool_call_id=str(call_id),
        name=name,
        status="error" if error else "success",
        response_metadata=mt_meta(timestamp),
    )


def jsonl_objects(path: Path, expected: str, required_key: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line of a JSONL file.

    A line that is not JSON, or not an object with ``required_key``, is a ``ReplayFormatError``
    naming the file, the line and ``expected`` (the format the converter wanted).
    """
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise ReplayFormatError(f"{path}:{line_no} is not JSON; expected {expected}") from exc
            if not isinstance(record, dict) or required_key not in record:
                raise ReplayFormatError(f"{path}:{line_no} has no '{required_key}'; expected {expected}")
            yield line_no, record


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments from an OpenAI-style JSON string (or a dict); bad JSON is kept as text."""
    if isinstance(raw, dict):
        return dict(raw)
    if raw is None or raw == "" or raw == [] or raw == ():
        return {}
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        return {"input": str(raw)}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


def text_of(content: Any) -> str:
    """Plain text of a str or a list of ``{type:"text", text}`` parts (other parts named briefly)."""
    return content_text(content, _named_part)


def _named_part(part: dict[str, Any]) -> str:
    if "text" in part:
        return str(part["text"])
    return "[image]" if part.get("type") == "image" else json.dumps(part, ensure_ascii=False, default=str)


def repair_pairing(messages: Iterable[BaseMessage]) -> tuple[list[BaseMessage], dict[str, int]]:
    """Make every tool call answered and every tool result follow its call.

    A call without a recorded result (interrupted, or the recording ended) is removed from its
    assistant message; a result with no call before it is dropped; an assistant message left
    with neither text nor calls is dropped — except the recording's last message: that model
    call was really made (its tool never ran), so it stays as a request to replay. A result
    recorded late (after other messages) is
    moved up to directly follow its call, where the provider required it to be.
    """
    msgs = _dedupe_call_ids(list(messages))
    first_result: dict[str, ToolMessage] = {}
    for m in msgs:
        if isinstance(m, ToolMessage):
            first_result.setdefault(m.tool_call_id, m)
    repairs = {"dropped_unanswered_calls": 0, "dropped_orphan_results": 0, "moved_results": 0}
    out: list[BaseMessage] = []
    placed: set[int] = set()
    paired: set[str] = set()
    for index, m in enumerate(msgs):
        if isinstance(m, ToolMessage):
            continue
        if isinstance(m, AIMessage) and m.tool_calls:
            kept = [c for c in m.tool_calls if c["id"] in first_result and c["id"] not in paired]
            repairs["dropped_unanswered_calls"] += len(m.tool_calls) - len(kept)
            if len(kept) != len(m.tool_calls):
                m = m.model_copy(update={"tool_calls": kept})
            if not kept and not _has_text(m) and index != len(msgs) - 1:
                continue
            out.append(m)
            block_end = index + 1
            while block_end < len(msgs) and isinstance(msgs[block_end], ToolMessage):
                block_end += 1
            block = {id(x) for x in msgs[index + 1:block_end]}
            for c in kept:
                result = first_result[c["id"]]
                paired.add(c["id"])
                placed.add(id(result))
                if id(result) not in block:
                    repairs["moved_results"] += 1
                out.append(result)
            continue
        out.append(m)
    repairs["dropped_orphan_results"] = sum(isinstance(m, ToolMessage) for m in msgs) - len(placed)
    return out, repairs


def _dedupe_call_ids(msgs: list[BaseMessage]) -> list[BaseMessage]:
    """A call id reused by a later call (replayed demos do this) gets a ``~n`` suffix.

    A result answers the most recent call with its id, so results are renamed the same way.
    """
    seen: dict[str, int] = {}
    current: dict[str, str] = {}
    out: list[BaseMessage] = []
    for m in msgs:
        if isinstance(m, AIMessage) and m.tool_calls:
            calls = []
            for c in m.tool_calls:
                original = c["id"]
                count = seen.get(original, -1) + 1
                seen[original] = count
                current[original] = original if count == 0 else f"{original}~{count}"
                calls.append(c if count == 0 else {**c, "id": current[original]})
            if calls != list(m.tool_calls):
                m = m.model_copy(update={"tool_calls": calls})
        elif isinstance(m, ToolMessage) and current.get(m.tool_call_id, m.tool_call_id) != m.tool_call_id:
            m = m.model_copy(update={"tool_call_id": current[m.tool_call_id]})
        out.append(m)
    return out


def _has_text(m: BaseMessage) -> bool:
    return bool(text_of(m.content).strip())


def unique_ids(messages: list[BaseMessage], prefix: str) -> None:
    """Give every message an id; a repeated id gets a ``~n`` suffix (ids must be stable and unique)."""
    seen: dict[str, int] = {}
    for i, m in enumerate(messages):
        mid = m.id or f"{prefix}-{i}"
        if mid in seen:
            seen[mid] += 1
            mid = f"{mid}~{seen[mid]}"
        else:
            seen[mid] = 0
        m.id = mid


def finish(
    messages: list[BaseMessage],
    fmt: str,
    *,
    recorded_usage: dict[str, RecordedUsage] | None = None,
    meta: dict[str, Any] | None = None,
) -> Trajectory:
    """Repair pairing, index the model calls and align recorded usage (keyed by AI message id)."""
    fixed, repairs = repair_pairing(messages)
    unique_ids(fixed, fmt)
    if not any(isinstance(m, AIMessage) for m in fixed):
        raise ReplayFormatError(
            f"the {fmt} recording has no assistant turns to replay; check that the file is a complete session"
        )
    calls = [i for i, m in enumerate(fixed) if isinstance(m, AIMessage)]
    usage = [recorded_usage.get(str(fixed[i].id)) for i in calls] if recorded_usage else []
    data = dict(meta or {})
    data["repairs"] = repairs
    return Trajectory(messages=fixed, format=fmt, model_calls=calls, recorded_usage=usage, meta=data)


def pairing_violations(messages: Sequence[BaseMessage]) -> tuple[int, int]:
    """``(orphan_results, unanswered_calls)`` of a request: the provider rejects either.

    A result is orphaned unless it sits in the contiguous block of tool messages right after
    the assistant message that made its call; a call is unanswered unless that block holds
    its result.
    """
    orphans = unanswered = 0
    open_calls: set[str] = set()
    in_block = False
    for m in messages:
        if isinstance(m, ToolMessage):
            if in_block and m.tool_call_id in open_calls:
                open_calls.discard(m.tool_call_id)
            else:
                orphans += 1
            continue
        unanswered += len(open_calls)
        open_calls = set()
        in_block = False
        if isinstance(m, AIMessage) and m.tool_calls:
            open_calls = {c["id"] for c in m.tool_calls}
            in_block = True
    unanswered += len(open_calls)
    return orphans, unanswered
