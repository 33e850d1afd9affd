"""Copy sessions, artifacts and memory from one store to another, idempotently and resumably.

A transcript is append-only and both backends read records back in order, so the target's
record count *is* the resume point: records ``[0, n)`` are already there (the last one is
compared to make sure the two have not diverged), and only the rest is appended. Running the
copy again copies nothing; an interrupted copy continues where it stopped. Each session is
copied while holding both sessions' writer locks, so a live agent is never copied mid-turn: a
session in use is skipped and reported, and the next run copies it.

Not copied: LangGraph checkpoints (a resumed session rebuilds its state from the transcript),
the recall index (local to each machine, derived and rebuilt from the transcripts) and the audit
trail (append-only where it is; the copy itself is audited in the target).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mtagent.errors import SessionLocked, UsageError
from mtagent.session.audit import AuditEvent, current_principal
from mtagent.session.store import Store
from mtagent.session.store_catalog import copy_session_files


@dataclass(slots=True)
class SessionCopy:
    project: str
    session_id: str
    records_copied: int = 0
    records_present: int = 0
    artifacts_copied: int = 0
    session_memory_copied: bool = False


@dataclass(slots=True)
class CopyReport:
    sessions: list[SessionCopy] = field(default_factory=list)
    memories_copied: int = 0
    in_use: list[str] = field(default_factory=list)  # "<project>/<session>: <who>", skipped this time

    @property
    def records_copied(self) -> int:
        return sum(s.records_copied for s in self.sessions)

    @property
    def artifacts_copied(self) -> int:
        return sum(s.artifacts_copied for s in self.sessions)


def copy_session(src: Store, dst: Store, project: str, session_id: str) -> SessionCopy:
    result = SessionCopy(project, session_id)
    with src.open_writer(project, session_id), dst.open_writer(project, session_id) as writer:
        entries = src.read_entries(project, session_id)
        present = dst.record_count(project, session_id)
        if present > len(entries):
            raise UsageError(f"session {session_id} already has {present} records in the {dst.backend} store, more "
                             f"than the {len(entries)} in the {src.backend} store; they diverged — copy it "
                             "under another id or remove one side")
        if present:
            last = dst.read_entries(project, session_id)[-1].record
            if last != entries[present - 1].record:
                raise UsageError(f"session {session_id} differs between the {src.backend} and {dst.backend} "
                                 f"stores at record {present}; they diverged, nothing was copied for it")
        for entry in entries[present:]:
            writer.append(entry.record)
        writer.end_turn()
        result.records_present, result.records_copied = present, len(entries) - present
    result.artifacts_copied, result.session_memory_copied = copy_session_files(src, dst, project, session_id)
    return result


def copy_store(src: Store, dst: Store, *, projects: list[str] | None = None,
               on_session: Callable[[SessionCopy], None] | None = None) -> CopyReport:
    """Copy every session of ``projects`` (default: all) and their long-term memory."""
    report = CopyReport()
    for project in projects if projects is not None else src.projects():
        for session_id in src.sessions(project):
            try:
                copied = copy_session(src, dst, project, session_id)
            except SessionLocked as exc:  # a live agent owns it; the next run copies it
                report.in_use.append(f"{project}/{session_id}: {exc}")
                continue
            report.sessions.append(copied)
            if on_session is not None:
                on_session(copied)
        for name in src.list_memory(project):
            text = src.read_memory(project, name)
            if text is not None and dst.read_memory(project, name) != text:
                dst.write_memory(project, name, text)
                report.memories_copied += 1
    if report.records_copied or report.artifacts_copied or report.memories_copied:
        dst.audit.record(AuditEvent("migrate", current_principal(), dst.tenant, None, {
            "from": src.backend, "to": dst.backend, "sessions": len(report.sessions),
            "records": report.records_copied, "artifacts": report.artifacts_copied,
            "memories": report.memories_copied}))
    return report
