"""How the engine's parts are wired for one session, given a record sink: the one summarizer choice,
the window manager and tool-result budgeter over one sink, event bus and statistics, and the
:class:`EngineSession` over them.

:func:`build_engine_session` is the library's constructor (``mtagent.context.build_engine_session``,
for a caller with its own sink, e.g. a :class:`~mtagent.session.transcript.MemorySink`);
:func:`~mtagent.context.opener.open_engine_session` builds every front end's session on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtagent.config import Settings
from mtagent.context.compaction.reattach import RecentReads
from mtagent.context.compaction.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from mtagent.context.engine_session import EngineSession, Recorder, ToolGuard
from mtagent.context.opener.system import SystemPrompt
from mtagent.context.recall.retrieved import CompactedRecall
from mtagent.context.tokens import MessageTokenCounter
from mtagent.context.tool_results.budgeter import ToolResultBudgeter, ToolResultPolicy, window_max_chars
from mtagent.context.window import ContextWindowManager, SessionMemory
from mtagent.events import EventBus, SessionStats
from mtagent.redaction import Redactor
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.transcript import RecordSink


def make_summarizer(settings: Settings, model: Any | None = None, summarizer: Summarizer | None = None) -> Summarizer:
    """The session's summarizer: ``summarizer`` when given, an LLM one on ``model``, else the
    extractive one (no model call)."""
    if summarizer is not None:
        return summarizer
    if model is not None:
        return LLMSummarizer(model, tool_result_chars=settings.tool_results.preview_chars,
                             cache_aligned=isinstance(model, CacheAlignedModel),
                             output_tokens=settings.context.summary_output_tokens)
    return ExtractiveSummarizer(max_tokens=settings.context.summary_output_tokens)


@dataclass(slots=True)
class CacheAlignedModel:
    """The session's main model writing hand-offs and session-memory notes with the tools the main
    request carries now (``tools()``, bound per request like the main call's): ``cache_aligned`` tells
    the summarizer and the notes updater they may send the main request + one instruction (a
    prompt-cache hit)."""

    model: Any
    tools: Callable[[], list[Any]] = list
    cache_aligned: bool = True

    def invoke(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        tools = self.tools()
        return (self.model.bind_tools(tools) if tools else self.model).invoke(request, *args, **kwargs)


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
    read_state: RecentReads | None = None,
    root: Path | None = None,
    guard: ToolGuard | None = None,
    recorded: Iterable[str] = (),
    session_id: str | None = None,
    retriever: CompactedRecall | None = None,
    system: SystemPrompt | None = None,
    counter: MessageTokenCounter | None = None,
    clock: Callable[[], float] | None = None,
) -> EngineSession:
    """An :class:`EngineSession` for ``settings`` (default: the spec's defaults).

    ``sink`` receives every record (a :class:`~mtagent.session.transcript.TranscriptWriter`, a list-like
    :class:`~mtagent.session.transcript.MemorySink`, or a redacting wrapper of either); ``artifacts``
    is where oversized tool results go (without it they are previewed but not saved); the summarizer
    defaults to the extractive one (no model call). ``retriever``: the recall helper of the sink's
    index (the opener passes the one of the index it built), or None.
    """
    settings = settings or Settings()
    events = events or EventBus()
    stats = stats or SessionStats()
    budgeter = budgeter or ToolResultBudgeter(
        policy=ToolResultPolicy.from_settings(settings.tool_results, window_chars=window_max_chars(settings)),
        artifacts=artifacts, sink=sink,
        events=events, stats=stats,
    )
    extra: dict[str, Any] = {"clock": clock} if clock is not None else {}
    window = ContextWindowManager(
        settings, summarizer=make_summarizer(settings, summarizer=summarizer), sink=sink, bus=events, stats=stats,
        session_memory=session_memory, read_state=read_state, token_limit=settings.context.token_limit, root=root,
        retriever=retriever, counter=counter,
        **extra,
    )
    recorder = Recorder(sink, events, guard or ToolGuard(), session_id, set(recorded))
    return EngineSession(window, budgeter, recorder, settings=settings, stats=stats, redactor=redactor, system=system)
