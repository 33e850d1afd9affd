"""The audit trail: who did what, for which tenant and session, and when.

A team needs to answer "who approved that shell command?" months later, so decisions that
change what an agent may do or what it remembers are recorded append-only: tool approvals and
denials, memory writes, compactions, exports and trust decisions. PostgreSQL keeps them in a
table the application role may only insert into and read (a trigger refuses UPDATE, DELETE and
TRUNCATE); the files backend keeps one JSONL file written with single ``O_APPEND`` writes, so a
crash leaves at most one torn last line, which readers skip.

:class:`AuditingSink` derives most events from the transcript records already flowing to the
writer (the record types in :data:`AUDITED`; the writer's end of the sink chain hands it only
those), so the engine and the agent need no audit calls of their own.
"""

from __future__ import annotations

import getpass
import logging
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import orjson

from mtagent import paths
from mtagent.session import schema

log = logging.getLogger(__name__)

AUDIT_FILE = "audit.jsonl"
_DETAIL_MAX_CHARS = 2_000  # an audit row names what happened; the transcript holds the content


def current_principal() -> str:
    """Who acts: the OS user (a service sets its own principal when it opens the store)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid:{os.getuid()}"


@dataclass(slots=True, frozen=True)
class AuditEvent:
    action: str
    who: str
    tenant: str
    session_id: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class AuditSink(Protocol):
    """Where audit events go; both backends' stores expose one as ``store.audit``."""

    def record(self, event: AuditEvent) -> None: ...

    def events(self, *, session_id: str | None = None, action: str | None = None,
               limit: int | None = None) -> list[AuditEvent]: ...


def bounded_detail(detail: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in detail.items():
        if isinstance(value, str) and len(value) > _DETAIL_MAX_CHARS:
            value = value[:_DETAIL_MAX_CHARS] + "…"
        out[str(key)] = value
    return out


def event_from_dict(obj: Any) -> AuditEvent | None:
    """An event read back from storage (untrusted: anything malformed is None)."""
    if not isinstance(obj, dict):
        return None
    try:
        detail = obj.get("detail") or {}
        if not isinstance(detail, dict):
            return None
        sid = obj.get("session_id")
        return AuditEvent(action=str(obj["action"]), who=str(obj["who"]), tenant=str(obj["tenant"]),
                          session_id=None if sid is None else str(sid), detail=detail, at=str(obj["at"]))
    except KeyError:
        return None


@dataclass(slots=True)
class JsonlAuditSink:
    """The files backend's audit trail: ``$MTAGENT_HOME/audit.jsonl``, one event per line."""

    path: Path
    tenant: str

    @classmethod
    def default(cls, tenant: str) -> JsonlAuditSink:
        return cls(paths.mtagent_home() / AUDIT_FILE, tenant)

    def record(self, event: AuditEvent) -> None:
        line = orjson.dumps({**event.as_dict(), "detail": bounded_detail(event.detail)}) + b"\n"
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except FileNotFoundError:  # the first event makes the folder; the others do not try again
            fd = os.open(paths.ensure_dir(self.path.parent) / self.path.name, flags, 0o600)
        try:
            os.write(fd, line)  # one write on O_APPEND: lines from several processes never interleave
        finally:
            os.close(fd)

    def _iter(self) -> Iterator[AuditEvent]:
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            return
        with fh:
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # a torn last line left by a crash
                try:
                    event = event_from_dict(orjson.loads(line))
                except orjson.JSONDecodeError:
                    log.warning("audit log %s: skipping an unreadable line", self.path)
                    continue
                if event is not None and event.tenant == self.tenant:
                    yield event

    def events(self, *, session_id: str | None = None, action: str | None = None,
               limit: int | None = None) -> list[AuditEvent]:
        found = [e for e in self._iter() if (session_id is None or e.session_id == session_id)
                 and (action is None or e.action == action)]
        return found[-limit:] if limit else found


AUDITED = frozenset({schema.COMPACT_BOUNDARY, schema.SESSION_MEMORY_UPDATE, schema.EVENT})  # what events_for_record reads


def events_for_record(record: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The audit actions a transcript record stands for (most records stand for none)."""
    kind = record.get("type")
    if kind == schema.COMPACT_BOUNDARY:
        return [("compaction", {"boundary_id": record.get("id"), "trigger": record.get("trigger"),
                                "pre_tokens": record.get("pre_tokens")})]
    if kind == schema.SESSION_MEMORY_UPDATE:
        return [("session_memory.write", {"path": record.get("path"), "tokens": record.get("tokens")})]
    if kind != schema.EVENT or not isinstance(record.get("data"), dict):
        return []
    data, name = record["data"], record.get("event")
    if name == "tool_started":
        out = [("tool.approved", {"tool": data.get("tool"), "tool_call_id": data.get("tool_call_id"),
                                  "rule": data.get("approved_by") or "policy"})]
        if data.get("tool") == "save_memory":
            out.append(("memory.write", {"tool_call_id": data.get("tool_call_id")}))
        return out
    if name == "tool_denied":
        return [("tool.denied", {"tool": data.get("tool"), "tool_call_id": data.get("tool_call_id"),
                                 "reason": data.get("reason")})]
    return []


@dataclass(slots=True)
class AuditingSink:
    """A record sink that audits the records that are decisions (given each after it is written).

    An audit failure is logged, never raised: losing the agent's turn over an audit row would
    trade the truth (the transcript, which holds the same facts) for its index.
    """

    audit: AuditSink
    tenant: str
    session_id: str
    who: str = field(default_factory=current_principal)

    def append(self, record: dict[str, Any]) -> None:
        for action, detail in events_for_record(record):
            try:
                self.audit.record(AuditEvent(action, self.who, self.tenant, self.session_id, detail))
            except Exception as exc:  # noqa: BLE001 - see the class docstring
                log.warning("could not write audit event %s for session %s: %s", action, self.session_id, exc)
