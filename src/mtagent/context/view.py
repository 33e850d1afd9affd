"""Transcript records → what the model sees. Pure functions, plus :func:`load_session` at the edge.

The transcript is the truth and the prompt is a view of it. After the last compaction the
view is::

    summary message (from the compact_boundary, rendered by context.boundary)
    [session memory, when given]
    transcript_messages from the boundary's first_kept_id on (written before the boundary)
    everything after the boundary

with ``microcompact`` records applied (cleared tool results become a placeholder) and the
tool-call protocol repaired: an assistant ``tool_calls`` message always has its ToolMessages
(a round torn by a crash gets synthetic "interrupted" results, reported so the caller can
record them) and a ToolMessage never appears without its call. A v1 transcript (``compression``
records, no boundary) resumes as its summary plus the last ``kept_count`` messages.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent import paths
from mtagent.context.boundary import summary_message_from_record
from mtagent.context.ledger import collapse_plan_calls
from mtagent.context.compaction.microcompact import cleared_copy
from mtagent.errors import SessionNotFound
from mtagent.frames import frame
from mtagent.session import schema
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.index import ResumePoint, locate_resume_point
from mtagent.session.reader import ReadReport, iter_entries, read_first_record
from mtagent.session.store import Store

log = logging.getLogger(__name__)

INTERRUPTED_TOOL_RESULT = "interrupted: the session ended before this tool returned"
SESSION_MEMORY_MESSAGE_ID = "session-memory"


@dataclass(slots=True)
class ResumeView:
    """The rebuilt view and what was done to make it valid."""

    messages: list[BaseMessage]
    boundary: dict[str, Any] | None = None
    legacy_compression: dict[str, Any] | None = None
    first_kept_found: bool = True
    interrupted_tool_call_ids: list[str] = field(default_factory=list)
    dropped_orphan_ids: list[str] = field(default_factory=list)
    cleared_ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def interrupted_messages(self) -> list[ToolMessage]:
        """The synthetic results in the view, for the caller to append to the transcript."""
        wanted = set(self.interrupted_tool_call_ids)
        return [m for m in self.messages if isinstance(m, ToolMessage) and m.tool_call_id in wanted
                and _marks(m).get("interrupted")]


def _marks(message: BaseMessage) -> dict[str, Any]:
    return (message.response_metadata or {}).get("mtagent") or {}


def _messages(records: Sequence[dict[str, Any]], first_index: int) -> list[BaseMessage]:
    out = []
    for i, rec in enumerate(records):
        if rec.get("type") != schema.TRANSCRIPT_MESSAGE:
            continue
        message = schema.record_to_message(rec)
        if not message.id:
            message.id = f"legacy-{first_index + i}"
        out.append(message)
    return out


def _last_compaction(records: Sequence[dict[str, Any]]) -> int | None:
    for i in range(len(records) - 1, -1, -1):
        if records[i].get("type") in (schema.COMPACT_BOUNDARY, schema.COMPRESSION):
            return i
    return None


def _session_memory_message(text: str) -> HumanMessage:
    return HumanMessage(
        content=frame("session_memory", text.strip()),
        id=SESSION_MEMORY_MESSAGE_ID,
        response_metadata={"mtagent": {"kind": "session_memory"}},
    )


def build_resume_view(records: Iterable[dict[str, Any]], *, session_memory: str | None = None,
                      record_offset: int = 0) -> ResumeView:
    """Rebuild the model-visible history from transcript records (pure; see module docstring).

    ``record_offset`` is the index of the first record in the whole file; it only names legacy
    messages that were written without ids.
    """
    records = list(records)
    view = ResumeView(messages=[])
    head: list[BaseMessage] = []
    at = _last_compaction(records)
    if at is None:
        body = _messages(records, record_offset)
    elif records[at]["type"] == schema.COMPACT_BOUNDARY and records[at].get("direction") == "from":
        # A partial compact that kept the head: kept messages up to the pivot, then the summary.
        view.boundary = records[at]
        kept = _kept_before(records, at, view, record_offset)
        pivot = records[at].get("pivot_id")
        cut = next((i for i, m in enumerate(kept) if m.id == pivot), len(kept))
        summary = summary_message_from_record(records[at])
        meta = dict(summary.response_metadata)
        meta["mtagent"] = {**meta.get("mtagent", {}), "direction": "from", "pivot_id": pivot}
        body = [*kept[:cut], summary.model_copy(update={"response_metadata": meta}),
                *_messages(records[at + 1:], record_offset + at + 1)]
    elif records[at]["type"] == schema.COMPACT_BOUNDARY:
        view.boundary = records[at]
        head.append(summary_message_from_record(records[at]))
        kept = _kept_before(records, at, view, record_offset)
        ledger = records[at].get("ledger")
        if isinstance(ledger, dict) and ledger.get("plan"):  # as the compaction did: the plan is in the hand-off
            kept = collapse_plan_calls(kept)
        body = kept + _messages(records[at + 1:], record_offset + at + 1)
    else:
        view.legacy_compression = records[at]
        legacy = {"id": f"v1-compression-{record_offset + at}", "summary": records[at].get("summary", ""),
                  "trigger": "auto", "pre_tokens": 0, "post_tokens": 0}
        head.append(summary_message_from_record(legacy))
        kept = int(records[at].get("kept_count") or 0)
        before = _messages(records[:at], record_offset)
        body = (before[-kept:] if kept > 0 else []) + _messages(records[at + 1:], record_offset + at + 1)
    if session_memory:
        head.append(_session_memory_message(session_memory))
    body = _apply_microcompact(body, records, view)
    view.messages = head + _repair_tool_pairs(body, view)
    return view


def _kept_before(records: Sequence[dict[str, Any]], at: int, view: ResumeView,
                 record_offset: int) -> list[BaseMessage]:
    kept_id = records[at].get("first_kept_id")
    if not kept_id:
        return []
    for i in range(at - 1, -1, -1):
        rec = records[i]
        if rec.get("type") == schema.TRANSCRIPT_MESSAGE and rec.get("id") == kept_id:
            return _messages(records[i:at], record_offset + i)
    view.first_kept_found = False
    view.warnings.append(f"first kept message {kept_id} of boundary {records[at].get('id')} is not in the "
                         "transcript; resuming from the summary and the messages after it")
    return []


def _apply_microcompact(messages: list[BaseMessage], records: Sequence[dict[str, Any]],
                        view: ResumeView) -> list[BaseMessage]:
    triggers: dict[str, str] = {}
    for rec in records:
        if rec.get("type") == schema.MICROCOMPACT:
            for message_id in rec.get("cleared_ids") or ():
                triggers[message_id] = str(rec.get("trigger", "time"))
    if not triggers:
        return messages
    out: list[BaseMessage] = []
    for message in messages:
        trigger = triggers.get(message.id or "")
        if trigger is not None and isinstance(message, ToolMessage):
            message = cleared_copy(message, trigger)
            view.cleared_ids.append(message.id or "")
        out.append(message)
    return out


def _interrupted(call_id: str, name: str | None) -> ToolMessage:
    return ToolMessage(
        content=INTERRUPTED_TOOL_RESULT,
        tool_call_id=call_id,
        name=name,
        status="error",
        id=f"interrupted-{call_id}",
        response_metadata={"mtagent": {"interrupted": True}},
    )


def _repair_tool_pairs(messages: list[BaseMessage], view: ResumeView) -> list[BaseMessage]:
    """Every tool call answered right after its round; every ToolMessage preceded by its call."""
    out: list[BaseMessage] = []
    open_calls: dict[str, str | None] = {}

    def close_round() -> None:
        for call_id, name in open_calls.items():
            out.append(_interrupted(call_id, name))
            view.interrupted_tool_call_ids.append(call_id)
        open_calls.clear()

    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id in open_calls:
                del open_calls[message.tool_call_id]
                out.append(message)
            else:
                view.dropped_orphan_ids.append(message.id or message.tool_call_id)
                view.warnings.append(f"dropped tool result {message.id} whose call "
                                     f"{message.tool_call_id} is not in the resumed view")
            continue
        close_round()
        out.append(message)
        if isinstance(message, AIMessage):
            open_calls.update({c["id"]: c.get("name") for c in message.tool_calls if c.get("id")})
    close_round()
    return out


# ── loading from disk ───────────────────────────────────────────────────────────────────


@dataclass(slots=True)
class ResumeStats:
    start_offset: int
    bytes_read: int
    source: str  # index | scan | none | full (fell back to reading the whole file)


@dataclass(slots=True)
class ResumedSession:
    """A session loaded for continuing: its view plus what the CLI and agent want to show. ``path``:
    its transcript file; None when it was read from a store (which may not keep files)."""

    session_id: str
    path: Path | None
    view: ResumeView
    session_start: dict[str, Any] | None
    stats: ResumeStats
    report: ReadReport
    artifacts: ArtifactStore

    @property
    def messages(self) -> list[BaseMessage]:
        return self.view.messages

    @property
    def boundary(self) -> dict[str, Any] | None:
        return self.view.boundary

    @property
    def warnings(self) -> list[str]:
        return [*self.report.warnings, *self.view.warnings]


def artifact_store_for(transcript: Path, max_bytes: int | None = None) -> ArtifactStore:
    """The artifact folder beside a transcript: ``<dir>/artifacts/<session-id>/``."""
    store = ArtifactStore(transcript.parent / "artifacts" / transcript.stem)
    if max_bytes is not None:
        store.max_bytes = max_bytes
    return store


def resumed_view(records: list[dict[str, Any]], start: int, notes: Sequence[str],
                 read_whole: Callable[[], list[dict[str, Any]]], session_memory: str | None = None,
                 ) -> tuple[ResumeView, list[dict[str, Any]], list[str], bool]:
    """The view of ``records`` read from a resume point at ``start``, the records it is built from,
    its notes, and whether the point did not hold (its boundary's first kept message is not where
    the index says, or what was read holds no boundary) — then it is built from ``read_whole()``."""
    view = build_resume_view(records, session_memory=session_memory)
    if start > 0 and (not view.first_kept_found or (view.boundary is None and view.legacy_compression is None)):
        records = read_whole()
        notes = [*notes, "resume point did not hold; read the whole session"]
        return build_resume_view(records, session_memory=session_memory), records, notes, True
    return view, records, list(notes), False


def load_transcript(path: str | os.PathLike[str], *, session_id: str | None = None,
                    skip_corrupt: bool = False, session_memory: str | None = None) -> ResumedSession:
    """Resume from a transcript file, reading only from the last boundary's first kept message."""
    path = Path(path)
    if not path.is_file():
        raise SessionNotFound(f"no transcript at {path}; see `mtagent sessions list`")
    point: ResumePoint = locate_resume_point(path)
    reports: list[ReadReport] = []

    def read(start: int) -> list[dict[str, Any]]:  # a fresh report for each read: the stats are of the last
        reports.append(ReadReport())
        return [e.record for e in iter_entries(path, start=start, skip_corrupt=skip_corrupt, report=reports[-1])]

    view, _, notes, full = resumed_view(read(point.start), point.start, point.notes, lambda: read(0), session_memory)
    report = reports[-1]
    report.warnings[:0] = notes
    stats = ResumeStats(0 if full else point.start, report.bytes_read, "full" if full else point.source)
    return ResumedSession(session_id or path.stem, path, view, read_first_record(path), stats, report,
                          artifact_store_for(path))


def load_from_store(store: Store, project: str, session_id: str, *,
                    skip_corrupt: bool = False) -> tuple[ResumedSession, list[dict[str, Any]]]:
    """The resumed view of a session in ``store`` and the records it was built from (those from the
    last boundary's first kept message on, or all of them when the resume point did not hold)."""
    read = store.read_since_boundary(project, session_id, skip_corrupt=skip_corrupt)
    view, records, notes, full = resumed_view(read.records, read.start, read.notes, lambda: [
        e.record for e in store.read_entries(project, session_id, skip_corrupt=skip_corrupt)])
    stats = ResumeStats(0 if full else read.start, 0, "full" if full else "index" if read.boundary_id else "none")
    report = ReadReport(warnings=notes, records=len(records))
    resumed = ResumedSession(session_id, None, view,
                             store.session_start(project, session_id), stats, report,
                             store.session_artifacts(project, session_id))
    return resumed, records


def load_session(project_root: str | os.PathLike[str], session_id: str, *, skip_corrupt: bool = False,
                 session_memory: str | None = None) -> ResumedSession:
    """Resume a session of this project by id (``mtagent --resume ID`` and ``sessions show``)."""
    path = paths.session_transcript_path(project_root, session_id)
    if not path.is_file():
        raise SessionNotFound(f"no session {session_id} for project {Path(project_root).resolve()}; "
                              "see `mtagent sessions list`")
    return load_transcript(path, session_id=session_id, skip_corrupt=skip_corrupt, session_memory=session_memory)

