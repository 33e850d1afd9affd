"""One LangGraph thread ↔ one mtagent session: its transcript, artifact store and bookkeeping.

A LangChain agent keeps its conversation in a checkpointer keyed by ``thread_id``; mtagent keeps
the truth in an append-only JSONL transcript keyed by a session id. This module ties the two so
``mtagent sessions show <id>`` and ``mtagent replay`` work on agents built with LangChain:

* the session id is the thread id when that is a valid file name, else a sanitised form of it
  with a short hash (so two thread ids never share a transcript);
* every record passes one redacting sink (secret values from the environment and the caller);
* reopening an existing transcript (a new process resuming the thread) reads back which message
  ids are already recorded and which tool calls had started, so the engine session writes nothing
  twice and runs no tool twice.

Nothing here knows about LangChain's middleware API; :mod:`mtagent.integrations.langchain` and
:mod:`mtagent.integrations.graph_hook` are the two users.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent import __version__, paths
from mtagent.config import Settings
from mtagent.events import EventBus, EventType, SessionStats
from mtagent.redaction import RedactingSink, Redactor, collect_secrets
from mtagent.context.recall.sink import recall_sink
from mtagent.session import schema
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.index import locate_resume_point
from mtagent.session.store_artifacts import open_in_store
from mtagent.session.transcript import TranscriptWriter, iter_entries

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
THREAD_PREFIX = "lc-"


def session_id_for_thread(thread_id: str) -> str:
    """A transcript-safe session id for a LangGraph ``thread_id`` (the id itself when it is safe)."""
    if _SESSION_ID_RE.match(thread_id) and ".." not in thread_id:
        return thread_id
    digest = hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:10]
    stem = _UNSAFE.sub("-", thread_id).strip("-.")[:60]
    return f"{THREAD_PREFIX}{stem}-{digest}" if stem else f"{THREAD_PREFIX}{digest}"


def thread_id_of(runtime: Any = None) -> str | None:
    """The ``thread_id`` of the running graph, from a node runtime, a tool runtime or the config."""
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    if thread:
        return str(thread)
    config = getattr(runtime, "config", None)
    if isinstance(config, dict):
        thread = (config.get("configurable") or {}).get("thread_id")
        if thread:
            return str(thread)
    try:
        from langgraph.config import get_config

        thread = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:
        return None
    return str(thread) if thread else None


class LockedSink:
    """A record sink safe to share between tool calls running in parallel threads."""

    def __init__(self, writer: TranscriptWriter) -> None:
        self.writer = writer
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.writer.append(record)


def read_existing(path: Path) -> list[dict[str, Any]]:
    """The records a resumed thread needs: from the last boundary's kept messages on.

    A thread's state never holds a message from before its last compaction's first kept one,
    so reading from the resume point (not from the start of a long transcript) is enough to know
    which of the state's messages are recorded. Empty for a new transcript.
    """
    if not path.exists() or path.stat().st_size == 0:
        return []
    start = locate_resume_point(path).start
    return [entry.record for entry in iter_entries(path, start=start, skip_corrupt=True)]


def recorded_message_ids(records: Iterable[dict[str, Any]]) -> set[str]:
    """Ids of the ``transcript_message`` records among ``records``."""
    return {str(r["id"]) for r in records if r.get("type") == schema.TRANSCRIPT_MESSAGE and r.get("id")}


@dataclass
class ThreadSession:
    """The mtagent session behind one thread. Create with :meth:`open`; close when done."""

    session_id: str
    project_root: Path
    settings: Settings
    writer: TranscriptWriter
    sink: RedactingSink
    artifacts: ArtifactStore
    recorded: set[str] = field(default_factory=set)
    existing_records: list[dict[str, Any]] = field(default_factory=list)
    events: EventBus = field(default_factory=EventBus)
    stats: SessionStats = field(default_factory=SessionStats)
    engine: Any = None  # the thread's EngineSession, attached by the integration
    redactor: Redactor = field(default_factory=Redactor)

    @classmethod
    def open(cls, project_root: str | os.PathLike[str], session_id: str, settings: Settings,
             *, model_name: str | None = None, events: EventBus | None = None,
             secrets: Sequence[str] = (), store: Any = None) -> ThreadSession:
        root = Path(project_root)
        if store is not None:  # a shared Store (PostgreSQL): rows, audited, artifacts read through
            writer, existing, store_artifacts = open_in_store(store, root, session_id,
                                                              settings.tool_results.artifact_max_bytes)
            is_new = not existing
        else:
            path = paths.session_transcript_path(root, session_id)
            existing = read_existing(path)
            is_new = not path.exists() or path.stat().st_size == 0
            writer = TranscriptWriter(path, session_id=session_id, fsync=settings.transcript.fsync)
        redactor = Redactor(collect_secrets(None, secrets, settings=settings))
        sink = RedactingSink(recall_sink(LockedSink(writer), root, session_id, settings), redactor)
        if is_new:
            sink.append(schema.session_start_record(
                session_id, str(root.resolve()), model_name or settings.agent.model, __version__,
                source="langchain-middleware",
            ))
        artifacts = store_artifacts if store is not None else \
            ArtifactStore.for_session(root, session_id, settings.tool_results.artifact_max_bytes)
        artifacts.redactor = redactor  # configured secrets too, as the transcript
        return cls(session_id, root, settings, writer, sink, artifacts, recorded_message_ids(existing), existing,
                   events=events or EventBus(), redactor=redactor)

    @property
    def transcript_path(self) -> Path:
        return self.writer.path

    def append(self, record: dict[str, Any]) -> None:
        self.sink.append(record)

    def record_event(self, event: EventType, **data: Any) -> None:
        """An ``event`` record in the transcript, and the same event on the bus."""
        self.sink.append(schema.event_record(event.value, data))
        self.events.emit(event, session_id=self.session_id, **data)

    def end_turn(self) -> None:
        self.writer.end_turn()

    def close(self) -> None:
        self.writer.close()
