"""The context engine bound to one thread's session: what the LangChain hooks call.

:class:`ThreadEngine` is the glue between LangChain's request/state shapes and mtagent's engine
(:class:`~mtagent.context.window.ContextWindowManager`, :class:`~mtagent.context.tool_results.budgeter.
ToolResultBudgeter`) and the thread's transcript. Every method is synchronous and safe to call
from the tool threads LangGraph runs in parallel; the async hooks run them in a worker thread.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from mtagent.config import Settings, load_settings
from mtagent.context.compaction.policy import is_context_length_error
from mtagent.context.session_memory.manager import SessionMemoryManager
from mtagent.context.compaction.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from mtagent.context.tokens import count_text_tokens
from mtagent.context.tool_results.budgeter import ToolResultBudgeter, ToolResultPolicy
from mtagent.context.window import ContextWindowManager
from mtagent.events import EventBus, EventType
from mtagent.integrations.thread_session import ThreadSession, session_id_for_thread, thread_id_of
from mtagent.session.schema import new_session_id

ERROR_PREVIEW_CHARS = 300  # of a provider error kept in the transcript's retry event


@dataclass(slots=True)
class Turn:
    """One model call's context: what is sent, and the history the state must hold afterwards.

    ``new_history`` is None unless a compaction rewrote the history this call (then the
    middleware replaces the graph state with it).
    """

    messages: list[BaseMessage]
    history: list[BaseMessage]
    system: list[SystemMessage]
    tools_tokens: int
    new_history: list[BaseMessage] | None = None
    compactions: list[Any] = field(default_factory=list)


def tools_token_count(tools: Sequence[Any], encoding: str) -> int:
    """Tokens of the tool schemas a request carries (they count against the window too)."""
    total = 0
    for tool in tools:
        try:
            schema = tool if isinstance(tool, dict) else convert_to_openai_tool(tool)
        except Exception:  # a provider-native tool spec we cannot render: count its repr
            schema = {"tool": repr(tool)}
        total += count_text_tokens(json.dumps(schema, sort_keys=True, default=str), encoding)
    return total


def _last_turn_results(messages: Sequence[BaseMessage]) -> list[int]:
    """Indexes of the ToolMessages answering the last assistant message with tool calls."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and message.tool_calls:
            return [i for i in range(index + 1, len(messages)) if isinstance(messages[i], ToolMessage)]
        if not isinstance(message, ToolMessage):
            return []
    return []


class ThreadEngine:
    """Budgeter + window manager + transcript for one thread (see the module docstring)."""

    def __init__(self, session: ThreadSession, manager: ContextWindowManager, budgeter: ToolResultBudgeter) -> None:
        self.session = session
        self.manager = manager
        self.budgeter = budgeter
        self._tools_tokens: dict[tuple[str, ...], int] = {}

    @property
    def encoding(self) -> str:
        return self.session.settings.context.encoding

    # ── tool results ──

    def budget_tool_result(self, message: ToolMessage, *, tool_name: str | None = None) -> ToolMessage:
        """Apply the tool's own limit now (artifact + preview); the turn's aggregate rule follows."""
        if not message.name and tool_name:
            message = message.model_copy(update={"name": tool_name})
        return self.budgeter.budget(message)

    def finish_tool_turn(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Freeze the last turn's results under the aggregate rule, then record new messages.

        Returns the turn's ToolMessages as frozen now — some persisted by the aggregate rule,
        all marked final (same ids: the state reducer replaces them in place). The transcript
        only ever gets these final versions.
        """
        with self.session.lock:
            history = list(messages)
            indexes = _last_turn_results(history)
            replaced: list[BaseMessage] = []
            if indexes:
                budgeted = self.budgeter.budget_turn([history[i] for i in indexes])
                for i, new in zip(indexes, budgeted, strict=True):
                    if new is not history[i]:
                        history[i] = new
                        replaced.append(new)
            self.session.record_new(history)
            return replaced

    # ── model calls ──

    def tools_tokens(self, tools: Sequence[Any]) -> int:
        key = tuple(sorted(str(getattr(t, "name", None) or (t.get("name") if isinstance(t, dict) else t))
                           for t in tools))
        if key not in self._tools_tokens:
            self._tools_tokens[key] = tools_token_count(tools, self.encoding)
        return self._tools_tokens[key]

    def prepare_request(self, request: Any) -> Turn:
        """The manager's pipeline on a LangChain ``ModelRequest``: meter, microcompact, compact."""
        system = [request.system_message] if request.system_message is not None else []
        history = list(request.messages)
        tools_tokens = self.tools_tokens(request.tools)
        with self.session.lock:
            self.session.record_new(history)
            prepared = self.manager.prepare(history, system=system, tools_tokens=tools_tokens)
        turn = Turn(messages=prepared.messages[len(system):], history=list(prepared.history),
                    system=system, tools_tokens=tools_tokens)
        if prepared.compaction is not None:
            turn.new_history = without_stale_usage(prepared.history)
            turn.compactions.append(prepared.compaction)
        return turn

    def reactive(self, turn: Turn, error: BaseException) -> Turn:
        """The provider said the request was too long: compact now (even below the threshold)."""
        self.session.record_event(EventType.MODEL_RETRY, attempt=1, kind="context_length",
                                  wait_seconds=0, error=str(error)[:ERROR_PREVIEW_CHARS])
        with self.session.lock:
            result = self.manager.reactive_compact(turn.history, system=turn.system, tools_tokens=turn.tools_tokens)
            prepared = self.manager.prepare(result.new_history(), system=turn.system,
                                            tools_tokens=turn.tools_tokens)
        compactions = [*turn.compactions, result, *([prepared.compaction] if prepared.compaction else [])]
        return Turn(messages=prepared.messages[len(turn.system):], history=list(prepared.history),
                    system=turn.system, tools_tokens=turn.tools_tokens,
                    new_history=without_stale_usage(prepared.history), compactions=compactions)

    def record_response(self, messages: Sequence[BaseMessage]) -> None:
        """Stamp the reply with the time it arrived, then record it.

        The stamp (``response_metadata["mtagent"]["ts"]``) travels with the message into the
        checkpoint, so time-based microcompact still sees the idle gap when a thread is resumed
        later, in another process.
        """
        now = self.manager.clock()
        for message in messages:
            if isinstance(message, AIMessage):
                metadata = message.response_metadata
                metadata["mtagent"] = {**(metadata.get("mtagent") or {}), "ts": now}
        self.session.record_new(messages)

    @staticmethod
    def is_context_length_error(exc: BaseException) -> bool:
        return is_context_length_error(exc)


def without_stale_usage(history: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The compacted history for the graph state, minus the usage of kept assistant messages.

    That usage describes the request *before* the compaction; a checkpointed thread resumed in a
    new process (a fresh manager, no anchor floor) would otherwise anchor its meter on it and
    compact again at once. The transcript keeps the original usage.
    """
    return [m.model_copy(update={"usage_metadata": None}) if isinstance(m, AIMessage) and m.usage_metadata else m
            for m in history]


def make_summarizer(summarizer: Summarizer | None, summarizer_model: BaseChatModel | None,
                    tool_result_chars: int) -> Summarizer:
    if summarizer is not None:
        return summarizer
    if summarizer_model is not None:
        return LLMSummarizer(summarizer_model, tool_result_chars=tool_result_chars)
    return ExtractiveSummarizer()


def build_session_memory(session: ThreadSession, model: BaseChatModel | None) -> SessionMemoryManager | None:
    """Session notes beside the thread's artifacts (when enabled), resumed from the transcript."""
    if not session.settings.session_memory.enabled:
        return None
    memory = SessionMemoryManager(path=session.artifacts.session_memory_path, settings=session.settings,
                                  model=model, sink=session.sink, events=session.events)
    memory.restore(session.existing_records)
    return memory


def build_engine(session: ThreadSession, *, summarizer: Summarizer | None = None,
                 summarizer_model: BaseChatModel | None = None) -> ThreadEngine:
    """Wire the engine of one thread the way :mod:`mtagent.agent.engine` wires a CLI session:
    one sink (the thread's transcript), one event bus and one stats object for every part."""
    settings = session.settings
    budgeter = ToolResultBudgeter(
        policy=ToolResultPolicy.from_settings(settings.tool_results), artifacts=session.artifacts,
        sink=session.sink, events=session.events, stats=session.stats,
    )
    manager = ContextWindowManager(
        settings,
        summarizer=make_summarizer(summarizer, summarizer_model, settings.tool_results.preview_chars),
        sink=session.sink, bus=session.events, stats=session.stats,
        session_memory=build_session_memory(session, summarizer_model),
        token_limit=settings.context.token_limit, root=session.project_root,
    )
    return ThreadEngine(session, manager, budgeter)


def resolve_settings(settings: Settings | None, token_limit: int | None, project_root: Path) -> Settings:
    """The CLI's settings (files + ``MTAGENT_*`` environment) unless given; ``token_limit`` wins."""
    settings = settings or load_settings(project_root)
    if token_limit is None:
        return settings
    context = settings.context.model_copy(update={"token_limit": token_limit})
    return settings.model_copy(update={"context": context})


class ThreadSessions:
    """The open sessions of one integration object, one per thread, each with its engine.

    Without a ``thread_id`` (no checkpointer) every call of this object shares one new session.
    """

    def __init__(self, *, settings: Settings | None = None, token_limit: int | None = None,
                 project_root: str | os.PathLike[str] | None = None, session_id: str | None = None,
                 summarizer_model: BaseChatModel | None = None, summarizer: Summarizer | None = None,
                 events: EventBus | None = None) -> None:
        self.project_root = Path(project_root) if project_root is not None else Path.cwd()
        self.settings = resolve_settings(settings, token_limit, self.project_root)
        self.session_id = session_id
        self.summarizer_model = summarizer_model
        self.summarizer = summarizer
        self.events = events or EventBus()
        self._open: dict[str, ThreadSession] = {}
        self._default: str | None = None
        self._lock = threading.Lock()

    def key(self, runtime: Any = None) -> str:
        if self.session_id:
            return self.session_id
        thread = thread_id_of(runtime)
        if thread:
            return session_id_for_thread(thread)
        with self._lock:
            if self._default is None:
                self._default = new_session_id()
            return self._default

    def get(self, runtime: Any = None, *, model_name: str | None = None) -> ThreadSession:
        """The session of the running thread, opened (or resumed) on first use."""
        key = self.key(runtime)
        with self._lock:
            found = self._open.get(key)
            if found is None:
                found = ThreadSession.open(self.project_root, key, self.settings, model_name=model_name,
                                           events=self.events)
                found.engine = build_engine(found, summarizer=self.summarizer,
                                            summarizer_model=self.summarizer_model)
                self._open[key] = found
            return found

    def for_thread(self, thread_id: str) -> ThreadSession | None:
        return self._open.get(self.session_id or session_id_for_thread(thread_id))

    def close(self) -> None:
        """Flush and close every transcript (releasing their locks)."""
        with self._lock:
            sessions, self._open = list(self._open.values()), {}
        for session in sessions:
            session.close()
