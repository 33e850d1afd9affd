"""Transcript record types (schema v2), their validation, and message ↔ record conversion.

A transcript is JSONL: one record per line, each with ``type``, ``schema_version`` and an
ISO-8601 UTC ``timestamp``. Records stay plain ``dict``s everywhere (writers, readers, the
view); the pydantic models here only *validate* them, with ``extra="allow"`` so a newer writer
may add fields an older reader ignores.

Compatibility rules, in one place:

* a record without ``schema_version`` is a v1 record (the pre-v2 format: ``transcript_message``
  and ``compression``, ids optional);
* a record whose ``type`` this version does not know is :class:`UnknownRecord` — readers keep it
  in the file and skip it with a warning;
* a known type written by a *newer* schema that fails validation is skipped the same way,
  because the newer writer may have changed it on purpose.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

import orjson
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mtagent.session.ids import new_boundary_id, new_message_id
from mtagent.session.usage_counts import USAGE_KEYS, bad_token_count

SCHEMA_VERSION = 2

SESSION_START = "session_start"
TRANSCRIPT_MESSAGE = "transcript_message"
TOOL_RESULT_ARTIFACT = "tool_result_artifact"
COMPRESSION = "compression"
COMPACT_BOUNDARY = "compact_boundary"
MICROCOMPACT = "microcompact"
SESSION_MEMORY_UPDATE = "session_memory_update"
CONTEXT_PLAN = "context_plan"
EVENT = "event"
SUBAGENT = "subagent"

Role = Literal["system", "user", "assistant", "tool"]
_ROLE_OF_TYPE = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


class RecordError(ValueError):
    """A line parsed as JSON but is not a valid record (the reader turns it into TranscriptCorrupt)."""


class UnknownRecord(RecordError):
    """A record of a type (or newer schema) this version cannot read; kept in the file, skipped."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Record(_Model):
    type: str
    schema_version: int = 1
    timestamp: str | None = None


class SessionStart(_Record):
    session_id: str
    cwd: str
    model: str | None = None
    mtagent_version: str | None = None


class ToolCallRecord(_Model):
    id: str | None
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolUseResult(_Model):
    """The UI copy of a tool result: structured metadata, never sent to the model."""

    kind: str = "text"
    artifact: str | None = None
    original_chars: int | None = None
    preview_chars: int | None = None
    truncated: bool = False
    artifact_truncated: bool = False


class TranscriptMessage(_Record):
    role: Role
    id: str | None = None
    content: str | list[str | dict[str, Any]] = ""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    status: Literal["success", "error"] | None = None
    usage: dict[str, Any] | None = None
    toolUseResult: ToolUseResult | None = None  # noqa: N815 - the spec's field name

    @field_validator("usage")
    @classmethod
    def _finite_usage(cls, usage: dict[str, Any] | None) -> dict[str, Any] | None:
        """Token counts are whole numbers >= 0: ``Infinity`` or ``-1`` in a hostile line is a bad
        record (one line from the reader), not a traceback when the message is rebuilt."""
        bad = bad_token_count(usage) if usage is not None else None
        if bad is not None:
            raise ValueError(f"{bad} is not a token count (a whole number >= 0)")
        return usage


class ToolResultArtifact(_Record):
    tool_call_id: str
    tool: str | None = None
    path: str
    original_chars: int
    stored_bytes: int
    truncated: bool = False
    sha256: str | None = None


class Compression(_Record):
    """v1 legacy: the summary replaced all but the last ``kept_count`` messages."""

    summary: str
    removed_count: int = 0
    kept_count: int = 0


class CompactBoundary(_Record):
    id: str
    trigger: str = "auto"
    reason: str | None = None
    pre_tokens: int = 0
    post_tokens: int = 0
    first_kept_id: str | None = None
    summary: str = ""
    summary_source: str | None = None


class Microcompact(_Record):
    trigger: str
    cleared_ids: list[str]


class SessionMemoryUpdate(_Record):
    path: str
    last_summarized_message_id: str | None = None
    tokens: int = 0
    sections: list[Any] | dict[str, Any] = Field(default_factory=list)


class ContextPlanRecord(_Record):
    turn: int
    tokens: int
    threshold: int | None = None
    buckets: dict[str, int] = Field(default_factory=dict)
    selected: list[str] = Field(default_factory=list)
    compressed: list[dict[str, Any]] = Field(default_factory=list)
    dropped: list[dict[str, Any]] = Field(default_factory=list)
    conflicts: list[Any] = Field(default_factory=list)


class EventRecord(_Record):
    event: str
    data: dict[str, Any] = Field(default_factory=dict)


class SubagentRecord(_Record):
    """A link between a session and a child it started (``subagents/<child_id>.jsonl``).

    In the parent, one record per state change (started, finished, interrupted, failed); a
    finished one carries the child's report, so a resume reuses it instead of running it again.
    """

    child_id: str
    status: str
    tool_call_id: str | None = None
    agent: str | None = None
    path: str | None = None
    report: dict[str, Any] | None = None


RECORD_MODELS: dict[str, type[_Record]] = {
    SESSION_START: SessionStart,
    TRANSCRIPT_MESSAGE: TranscriptMessage,
    TOOL_RESULT_ARTIFACT: ToolResultArtifact,
    COMPRESSION: Compression,
    COMPACT_BOUNDARY: CompactBoundary,
    MICROCOMPACT: Microcompact,
    SESSION_MEMORY_UPDATE: SessionMemoryUpdate,
    CONTEXT_PLAN: ContextPlanRecord,
    EVENT: EventRecord,
    SUBAGENT: SubagentRecord,
}
RECORD_TYPES = tuple(RECORD_MODELS)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "record"
    return f"{loc}: {err['msg']}"


def parse_record(obj: Any) -> dict[str, Any]:
    """Validate one decoded JSON line and return it unchanged.

    Raises :class:`UnknownRecord` for a type or newer schema this version cannot read (the
    caller skips it with a warning) and :class:`RecordError` for a malformed record.
    """
    if not isinstance(obj, dict):
        raise RecordError(f"a record must be a JSON object, not {type(obj).__name__}")
    kind = obj.get("type")
    if not isinstance(kind, str):
        raise RecordError("record has no string 'type'")
    version = obj.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RecordError(f"schema_version must be a positive integer, not {version!r}")
    model = RECORD_MODELS.get(kind)
    if model is None:
        raise UnknownRecord(f"unknown record type {kind!r} (schema_version {version})")
    try:
        model.model_validate(obj)
    except ValidationError as exc:
        reason = f"invalid {kind} record: {_first_error(exc)}"
        if version > SCHEMA_VERSION:
            raise UnknownRecord(f"{reason} (written by newer schema_version {version})") from None
        raise RecordError(reason) from None
    return obj


def now_iso() -> str:
    """The current time as ISO-8601 UTC with milliseconds, e.g. ``2026-11-29T12:45:17.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_timestamp(value: Any) -> datetime | None:
    """A record's timestamp as an aware datetime, or None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def new_session_id() -> str:
    """A sortable, file-name-safe session id: UTC time to the millisecond + a random suffix."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"{stamp}{int(now * 1000) % 1000:03d}-{secrets.token_hex(3)}"


def _base(kind: str, timestamp: str | None) -> dict[str, Any]:
    return {"type": kind, "schema_version": SCHEMA_VERSION, "timestamp": timestamp or now_iso()}


def encode_record(record: Mapping[str, Any], *, validate: bool) -> bytes:
    """``record`` as its transcript line, checked first when ``validate``: what every writer stores."""
    if validate:
        try:
            parse_record(record)
        except RecordError as exc:
            raise ValueError(f"refusing to write an invalid record: {exc}") from None
    return dumps_record(record)


def dumps_record(record: Mapping[str, Any]) -> bytes:
    """One record as one UTF-8 JSON line (with the newline).

    Compact separators keep ``"type":"compact_boundary"`` a fixed byte pattern for the
    backwards scan; text stays readable UTF-8. orjson does the common case fast; what it
    refuses (lone surrogates, integers beyond 64 bits) goes through :mod:`json`, whose ASCII
    escape form can carry any Python string through UTF-8.
    """
    try:
        return orjson.dumps(record, default=_json_default, option=_ORJSON_OPTIONS)
    except TypeError:
        pass
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_json_default)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=_json_default).encode()
    return data + b"\n"


def loads_line(line: bytes) -> Any:
    """Decode one JSON line; :class:`ValueError` (or RecursionError) when it is not JSON.

    orjson first; :mod:`json` for what only it accepts (escaped lone surrogates, NaN).
    """
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable; convert it before recording")


# ── messages ────────────────────────────────────────────────────────────────────────────


def message_to_record(msg: BaseMessage, **extra: Any) -> dict[str, Any]:
    """A langchain message as a ``transcript_message`` record (exact round trip).

    A message without an id is given one *on the message itself*: the live history and the
    transcript must name messages the same way (``first_kept_id``, ``cleared_ids``).
    """
    role = _ROLE_OF_TYPE.get(msg.type)
    if role is None:
        raise TypeError(f"cannot record a {type(msg).__name__} (type {msg.type!r}); use system/human/ai/tool")
    if not msg.id:
        msg.id = new_message_id()
    rec = _base(TRANSCRIPT_MESSAGE, extra.pop("timestamp", None))
    rec["role"] = role
    rec["id"] = msg.id
    rec["content"] = msg.content
    if msg.name is not None:
        rec["name"] = msg.name
    if isinstance(msg, AIMessage):
        if msg.tool_calls:
            rec["tool_calls"] = [{"id": c.get("id"), "name": c["name"], "args": c.get("args", {})}
                                 for c in msg.tool_calls]
        if msg.invalid_tool_calls:
            rec["invalid_tool_calls"] = [dict(c) for c in msg.invalid_tool_calls]
        if msg.usage_metadata is not None:
            rec["usage"] = dict(msg.usage_metadata)
    elif isinstance(msg, ToolMessage):
        rec["tool_call_id"] = msg.tool_call_id
        rec["status"] = msg.status
        if msg.artifact is not None:
            rec["toolUseResult"] = tool_use_result(msg.artifact)
    if msg.response_metadata:
        rec["response_metadata"] = msg.response_metadata
    if msg.additional_kwargs:
        rec["additional_kwargs"] = msg.additional_kwargs
    rec.update(extra)
    return rec


def tool_use_result(artifact: Any) -> dict[str, Any]:
    """A ToolMessage's ``artifact`` as a valid ``toolUseResult``.

    Our tools produce the documented dict and it is kept as is. Anything else (a third-party
    tool's own artifact, a dict with mistyped fields) is wrapped as ``{"kind": "opaque",
    "value": …}`` rather than refused, so one odd tool can never stop a transcript write.
    """
    if isinstance(artifact, dict):
        try:
            ToolUseResult.model_validate(artifact)
            return artifact
        except ValidationError:
            pass
    try:
        json.dumps(artifact, default=_json_default)
        value = artifact
    except (TypeError, ValueError):
        value = repr(artifact)
    return {"kind": "opaque", "value": value}


def record_to_message(rec: Mapping[str, Any]) -> BaseMessage:
    """The langchain message a ``transcript_message`` record stands for."""
    role = rec.get("role")
    common: dict[str, Any] = {"content": rec.get("content", "")}
    for key in ("id", "name", "response_metadata", "additional_kwargs"):
        if rec.get(key) is not None:
            common[key] = _copy_json(rec[key])
    if role == "user":
        return HumanMessage(**common)
    if role == "assistant":
        calls = [{"id": c.get("id"), "name": c["name"], "args": _copy_json(c.get("args") or {})}
                 for c in rec.get("tool_calls") or ()]
        usage = rec.get("usage")
        if not (isinstance(usage, dict) and all(k in usage for k in USAGE_KEYS)):
            usage = None  # usage another writer shaped differently is left out, not fatal
        try:
            return AIMessage(**common, tool_calls=calls,
                             invalid_tool_calls=_copy_json(rec.get("invalid_tool_calls") or []),
                             usage_metadata=_copy_json(usage))
        except ValidationError as exc:
            raise RecordError(f"message {str(rec.get('id'))[:40]!r} cannot be rebuilt: {_first_error(exc)}") from None
    if role == "tool":
        return ToolMessage(
            **common,
            tool_call_id=str(rec.get("tool_call_id") or ""),
            status=rec.get("status") or "success",
            artifact=_copy_json(rec.get("toolUseResult")),
        )
    if role == "system":
        return SystemMessage(**common)
    raise RecordError(f"transcript_message has unknown role {role!r}")


def _copy_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


# ── record builders ────────────────────────────────────────────────────────────────────


def session_start_record(session_id: str, cwd: str, model: str | None, mtagent_version: str,
                         *, timestamp: str | None = None, **extra: Any) -> dict[str, Any]:
    return {**_base(SESSION_START, timestamp), "session_id": session_id, "cwd": cwd, "model": model,
            "mtagent_version": mtagent_version, **extra}


def tool_result_artifact_record(tool_call_id: str, tool: str | None, path: str, *, original_chars: int,
                                stored_bytes: int, truncated: bool, sha256: str | None,
                                timestamp: str | None = None) -> dict[str, Any]:
    """Record that a full tool result was persisted (fields mirror ``ArtifactMeta``)."""
    return {**_base(TOOL_RESULT_ARTIFACT, timestamp), "tool_call_id": tool_call_id, "tool": tool,
            "path": path, "original_chars": original_chars, "stored_bytes": stored_bytes,
            "truncated": truncated, "sha256": sha256}


def boundary_record(*, summary: str, first_kept_id: str | None, trigger: str = "auto",
                    reason: str | None = None, pre_tokens: int = 0, post_tokens: int = 0,
                    summary_source: str = "llm", boundary_id: str | None = None,
                    timestamp: str | None = None, **extra: Any) -> dict[str, Any]:
    """A ``compact_boundary``: resume = its summary + messages from ``first_kept_id`` on."""
    return {**_base(COMPACT_BOUNDARY, timestamp), "id": boundary_id or new_boundary_id(),
            "trigger": trigger, "reason": reason or trigger, "pre_tokens": pre_tokens,
            "post_tokens": post_tokens, "first_kept_id": first_kept_id, "summary": summary,
            "summary_source": summary_source, **extra}


def microcompact_record(trigger: str, cleared_ids: Iterable[str], *, timestamp: str | None = None,
                        **extra: Any) -> dict[str, Any]:
    return {**_base(MICROCOMPACT, timestamp), "trigger": trigger, "cleared_ids": list(cleared_ids), **extra}


def session_memory_update_record(path: str, *, last_summarized_message_id: str | None, tokens: int,
                                 sections: list[Any] | dict[str, Any], timestamp: str | None = None,
                                 **extra: Any) -> dict[str, Any]:
    return {**_base(SESSION_MEMORY_UPDATE, timestamp), "path": path,
            "last_summarized_message_id": last_summarized_message_id, "tokens": tokens,
            "sections": sections, **extra}


def context_plan_record(plan: Mapping[str, Any], *, timestamp: str | None = None) -> dict[str, Any]:
    """A ``context_plan`` from a plan's dict form (turn, tokens, threshold, buckets, …)."""
    return {**_base(CONTEXT_PLAN, timestamp), **plan}


def event_record(event: str, data: Mapping[str, Any] | None = None, *,
                 timestamp: str | None = None) -> dict[str, Any]:
    name = getattr(event, "value", event)
    return {**_base(EVENT, timestamp), "event": str(name), "data": dict(data or {})}


def subagent_record(child_id: str, status: str, *, tool_call_id: str | None, agent: str | None,
                    path: str | None, report: Mapping[str, Any] | None = None, timestamp: str | None = None,
                    **extra: Any) -> dict[str, Any]:
    return {**_base(SUBAGENT, timestamp), "child_id": child_id, "status": status, "tool_call_id": tool_call_id,
            "agent": agent, "path": path, "report": dict(report) if report is not None else None, **extra}


def compression_record(summary: str, removed_count: int, kept_count: int, *,
                       timestamp: str | None = None) -> dict[str, Any]:
    """A v1 ``compression`` record — written only by tests and fixtures; v2 writes boundaries."""
    return {"type": COMPRESSION, "timestamp": timestamp or now_iso(), "summary": summary,
            "removed_count": removed_count, "kept_count": kept_count}
