"""``open_engine_session``: the one place a session is born (see :mod:`mtagent.context.opener`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent import __version__, paths
from mtagent.config import Settings
from mtagent.context.compaction.reattach import RecentReads
from mtagent.context.compaction.summarize import Summarizer
from mtagent.context.engine_session import EngineSession, ToolGuard
from mtagent.context.model_gate import background
from mtagent.context.opener.system import SystemContext, SystemPrompt, SessionTools
from mtagent.context.opener.wiring import CacheAlignedModel, build_engine_session, make_summarizer
from mtagent.context.recall.sink import SessionIndex, compacted_recall, session_index
from mtagent.context.session_memory.manager import SessionMemoryManager
from mtagent.context.static.tiers import StaticContext
from mtagent.context.tokens import MessageTokenCounter
from mtagent.events import EventBus, SessionStats
from mtagent.redaction import RedactingSink, Redactor
from mtagent.session import schema
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.audit import AUDITED, AuditingSink
from mtagent.session.session_io import open_session_io


@dataclass(slots=True, frozen=True)
class ParentLink:
    """A subagent child's link to the session and ``task`` call that started it."""

    session_id: str
    tool_call_id: str
    agent: str
    depth: int
    description: str = ""


class LockedSink:
    """The writer, safe to share between tool calls running in parallel threads; a record that is a
    decision (:data:`~mtagent.session.audit.AUDITED`) is audited once written — most are not."""

    def __init__(self, inner: Any, audited: AuditingSink) -> None:
        self.inner = inner
        self.audited = audited
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> Any:
        with self._lock:
            result = self.inner.append(record)
        if record.get("type") in AUDITED:
            self.audited.append(record)
        return result


@dataclass(slots=True)
class OpenedSession:
    """One opened session: its storage, the sink chain, the engine and the system-prompt context.

    ``writer`` is the storage's writer (``end_turn``, ``close``, ``path``); every record goes
    through ``sink`` (redacted → written → audited); ``recall`` catches the project's index up from
    the transcript when recall is queried and at :meth:`close`, never per record. ``records``: what the store
    held after the last boundary when the session was opened (empty for a new one).
    """

    session_id: str
    project_root: Path
    settings: Settings
    store: Any
    writer: Any
    sink: Any
    artifacts: ArtifactStore
    redactor: Redactor
    events: EventBus
    stats: SessionStats
    engine: EngineSession
    system: SystemContext
    summarizer: Summarizer
    session_memory: SessionMemoryManager | None
    read_state: RecentReads | None
    records: list[dict[str, Any]] = field(default_factory=list)
    is_new: bool = True
    recall: SessionIndex | None = None  # the session's way into the recall index (None: recall off)

    @property
    def window(self) -> Any:
        return self.engine.window

    @property
    def transcript_path(self) -> Path:
        return Path(self.writer.path)

    @property
    def threshold(self) -> int:
        """Tokens at which auto compaction fires for this session: of the last prepared view, or —
        before the first call — of the view's fixed part as the system context gives it now."""
        window = self.engine.window
        if window.last_plan is not None:
            return window.threshold
        return window.policy.threshold_for(self.fixed_tokens)

    @property
    def fixed_tokens(self) -> int:
        """The view's fixed part now: system prompt, session context and bound tool schemas."""
        return self.engine.system.fixed_tokens(self.engine.window.counter.estimate)

    def end_turn(self) -> None:
        """The turn's records are durable (per ``transcript.fsync``)."""
        self.writer.end_turn()

    def close(self) -> None:
        """Close the writer (its lock), then catch the recall index up with the transcript."""
        try:
            self.writer.close()
        finally:
            if self.recall is not None:
                self.recall.close()


def open_engine_session(
    store: Any,
    root: Path,
    settings: Settings,
    *,
    session_id: str,
    resume: bool | Sequence[dict[str, Any]] = True,
    model_name: str | None = None,
    model: Any = None,
    main_model: bool = False,
    summarizer: Summarizer | None = None,
    memory_model: Any = None,
    parent: ParentLink | None = None,
    secrets: Sequence[str] = (),
    events: EventBus | None = None,
    tools: SessionTools | None = None,
    system: SystemPrompt | None = None,
    role: str | None = None,
    rules: bool = True,
    source: str | None = None,
    read_state: RecentReads | None = None,
    counter: MessageTokenCounter | None = None,
    clock: Callable[[], float] | None = None,
) -> OpenedSession:
    """Open (create or continue) ``session_id`` of ``root`` in ``store``; see the package docstring.

    ``resume``: ``True`` reads what the store holds (nothing for a new session); a list is the
    records the caller already read (with its own corruption policy); ``False`` opens it as new.
    ``model``: the model that writes hand-offs and session-memory notes (``None``: extractive, no
    model call); ``summarizer`` overrides the hand-off writer; ``memory_model`` the notes model.
    ``main_model``: ``model`` is the session's own main model — with ``context.cache_aligned_summaries``
    it writes hand-offs and notes with the tools the main request carries (bound per request), so a
    summary or notes request is the last main request + one instruction, served from the provider's
    prompt cache (``context/compaction/cache_align.py``).
    The notes model always waits for the main call (:mod:`mtagent.context.model_gate`).
    ``read_state``: what the session's tools have read (the compactor re-attaches recent reads).
    ``tools``: the session's tool catalog (:class:`SessionTools`; it can be set later too).
    ``system``: a fixed system prompt instead of the session's static context (replay). ``role``: a
    subagent's role, appended to the system prompt; ``rules=False``: without Tier 1/2 context.
    """
    root = Path(root)
    io = open_session_io(store, root, session_id, child_of=parent.session_id if parent else None,
                         read_records=resume is True)
    try:
        records = list(resume) if not isinstance(resume, bool) else io.records
        redactor = Redactor(tuple(secrets))
        events = events or EventBus()
        stats = SessionStats()
        artifacts = io.artifacts
        artifacts.redactor = redactor  # configured secrets too, as the transcript
        sink = RedactingSink(LockedSink(io.writer, AuditingSink(store.audit, store.tenant, session_id)), redactor)
        recall = session_index(root, session_id, settings, home=store.local_home, transcript=(  # a child's: a file
            (lambda: Path(io.writer.path)) if parent else
            lambda: store.transcript_file(paths.project_hash(root), session_id, beside=False)))
        if resume is False or io.is_new:
            extra: dict[str, Any] = {"source": source} if source else {}
            if parent is not None:
                extra.update(parent_session_id=parent.session_id, parent_tool_call_id=parent.tool_call_id,
                             agent=parent.agent, depth=parent.depth, description=parent.description)
            sink.append(schema.session_start_record(session_id, str(root), model_name, __version__, **extra))
        context = SystemContext(StaticContext(root, settings.memory, redactor=redactor, home=store.local_home),
                                root, tools or SessionTools(), role=role, rules=rules)  # the tenant's memory
        if main_model and model is not None and settings.context.cache_aligned_summaries:
            model = CacheAlignedModel(model, lambda: context.tools.request_tools())
        memory = None
        if settings.session_memory.enabled:
            memory = SessionMemoryManager(path=artifacts.session_memory_path, settings=settings,
                                          model=background(memory_model if memory_model is not None else model),
                                          sink=sink, events=events, counter=counter)
            memory.restore(records)
        guard = ToolGuard()
        guard.restore(records)
        chosen = make_summarizer(settings, model, summarizer)
        engine = build_engine_session(
            settings, sink=sink, artifacts=artifacts, summarizer=chosen, session_memory=memory, events=events,
            stats=stats, redactor=redactor, read_state=read_state, root=root, guard=guard,
            recorded={str(r["id"]) for r in records if r.get("type") == schema.TRANSCRIPT_MESSAGE and r.get("id")},
            session_id=session_id, system=system or context, counter=counter, clock=clock,
            retriever=compacted_recall(recall, settings),
        )
    except BaseException:
        io.writer.close()
        raise
    return OpenedSession(session_id, root, settings, store, io.writer, sink, artifacts, redactor, events, stats,
                         engine, context, chosen, memory, read_state, records, io.is_new, recall)
