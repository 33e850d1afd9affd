"""Wire one engine session from settings: the window manager, the tool-result budgeter and the
engine session over them, sharing one sink, event bus and statistics.

The CLI (:mod:`mtagent.agent.engine`), the LangChain adapters (:mod:`mtagent.integrations.engine`)
and a library user (``mtagent.context.build_engine_session``) build the same object this way.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from mtagent.config import Settings
from mtagent.context.compaction.reattach import ReadState
from mtagent.context.compaction.summarize import ExtractiveSummarizer, Summarizer
from mtagent.context.engine_session import EngineSession, ToolGuard
from mtagent.context.recall.sink import compacted_recall
from mtagent.context.tool_results.budgeter import ToolResultBudgeter, ToolResultPolicy
from mtagent.context.window import ContextWindowManager, SessionMemory
from mtagent.events import EventBus, SessionStats
from mtagent.redaction import Redactor
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.transcript import RecordSink

__all__ = ["build_engine_session"]


def build_engine_session(
    settings: Settings | None = None,
    *,
    sink: RecordSink,
    artifacts: ArtifactStore | None = None,
    summarizer: Summarizer | None = None,
    session_memory: SessionMemory | None = None,
    events: EventBus | None = None,
    stats: SessionStats | None = None,
    redactor: Redactor | None = None,
    budgeter: ToolResultBudgeter | None = None,
    read_state: ReadState | None = None,
    root: Path | None = None,
    guard: ToolGuard | None = None,
    recorded: Iterable[str] = (),
    session_id: str | None = None,
) -> EngineSession:
    """An :class:`EngineSession` for ``settings`` (default: the spec's defaults).

    ``sink`` receives every record (a :class:`~mtagent.session.transcript.TranscriptWriter`, a list-like
    :class:`~mtagent.session.transcript.MemorySink`, or a redacting wrapper of either); ``artifacts``
    is where oversized tool results go (without it they are previewed but not saved); the summarizer
    defaults to the extractive one (no model call).
    """
    settings = settings or Settings()
    events = events or EventBus()
    stats = stats or SessionStats()
    budgeter = budgeter or ToolResultBudgeter(
        policy=ToolResultPolicy.from_settings(settings.tool_results), artifacts=artifacts, sink=sink,
        events=events, stats=stats,
    )
    window = ContextWindowManager(
        settings, summarizer=summarizer or ExtractiveSummarizer(), sink=sink, bus=events, stats=stats,
        session_memory=session_memory, read_state=read_state, token_limit=settings.context.token_limit, root=root,
        retriever=compacted_recall(sink, settings),
    )
    return EngineSession(window, budgeter, sink, settings=settings, events=events, stats=stats, redactor=redactor,
                         guard=guard, recorded=recorded, session_id=session_id)
