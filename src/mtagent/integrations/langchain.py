"""mtagent's context engine as a LangChain v1 ``AgentMiddleware``: one line for ``create_agent``.

::

    agent = create_agent(model, tools, middleware=[MTContextMiddleware(token_limit=128_000)],
                         checkpointer=InMemorySaver())

What each hook does, and why it lives there:

* ``wrap_tool_call`` — a result is budgeted the moment it is produced (spec M2): over its tool's
  limit it is written to the session's artifact store and the model sees a
  ``<persisted-output>`` preview. The decision is frozen in the ToolMessage's ``artifact``.
* ``before_model`` — the per-turn aggregate rule runs on the results of the last assistant turn
  (rewritten in place by message id), then every new state message is appended to the session
  transcript. Kept messages are therefore always in the transcript before a later boundary.
* ``wrap_model_call`` — the :class:`~mtagent.context.window.ContextWindowManager` pipeline on the
  request: usage-anchored meter (system prompt and tool schemas included), microcompact on the
  *request only*, auto compaction (session memory first) persisted to the graph state as
  ``RemoveMessage(REMOVE_ALL_MESSAGES)`` + summary + kept tail, and a reactive compact + one retry
  when the provider rejects the request as too long. Compaction runs here rather than in
  ``before_model`` because only the request knows the system prompt and tools it must fit with.

One middleware instance serves any number of threads: each LangGraph ``thread_id`` is its own
mtagent session (:mod:`mtagent.integrations.thread_session`). Put this middleware *first* in the
list so it sees the state's messages unedited.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from mtagent.config import Settings
from mtagent.errors import CompactionFailed
from mtagent.context.compaction.summarize import Summarizer
from mtagent.events import EventBus, EventType
from mtagent.integrations.artifact_tool import make_read_tool_result
from mtagent.integrations.engine import ThreadEngine, ThreadSessions, Turn
from mtagent.integrations.thread_session import ThreadSession

__all__ = ["MTContextMiddleware"]


class MTContextMiddleware(AgentMiddleware):
    """Tool-result budget, compaction and a transcript for ``langchain.agents.create_agent``.

    Args:
        settings: the same :class:`~mtagent.config.Settings` the CLI uses; default: loaded for
            ``project_root`` (config files and ``MTAGENT_*`` environment).
        token_limit: the model's context window; overrides ``settings.context.token_limit``.
        project_root: the project the sessions belong to (transcripts live under
            ``$MTAGENT_HOME/history/<project-hash>/``); default: the current directory.
        session_id: record every thread into this one session instead of one session per
            ``thread_id``.
        summarizer_model: a chat model that writes hand-off summaries (a cheaper one is fine);
            without it, summaries are extractive (no model call).
        summarizer: any :class:`~mtagent.context.compaction.summarize.Summarizer`; wins over
            ``summarizer_model``.
        events: an :class:`~mtagent.events.EventBus` to watch the engine (tool results persisted,
            microcompact, compaction, retries); every event is also in the transcript.
        artifact_tool: register ``read_tool_result`` so the model can page through the full
            text a ``<persisted-output>`` preview points to (default on).
    """

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        token_limit: int | None = None,
        project_root: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        summarizer_model: BaseChatModel | None = None,
        summarizer: Summarizer | None = None,
        events: EventBus | None = None,
        artifact_tool: bool = True,
    ) -> None:
        super().__init__()
        self.sessions = ThreadSessions(settings=settings, token_limit=token_limit, project_root=project_root,
                                       session_id=session_id, summarizer_model=summarizer_model,
                                       summarizer=summarizer, events=events)
        self.tools = [make_read_tool_result(self.sessions)] if artifact_tool else []

    @property
    def settings(self) -> Settings:
        return self.sessions.settings

    @property
    def events(self) -> EventBus:
        return self.sessions.events

    @property
    def token_limit(self) -> int:
        return self.settings.context.token_limit

    def session(self, runtime: Any = None, *, model_name: str | None = None) -> ThreadSession:
        """The mtagent session of the running thread (opened, or resumed, on first use)."""
        return self.sessions.get(runtime, model_name=model_name)

    def session_for_thread(self, thread_id: str) -> ThreadSession | None:
        """The open session recording ``thread_id``, if this middleware has seen it."""
        return self.sessions.for_thread(thread_id)

    def close(self) -> None:
        """Flush and close every transcript (releasing their locks)."""
        self.sessions.close()

    def __enter__(self) -> MTContextMiddleware:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── tools ──

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        session = self._tool_started(request)
        return self._tool_finished(session, request, handler(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        session = await asyncio.to_thread(self._tool_started, request)
        result = await handler(request)
        return await asyncio.to_thread(self._tool_finished, session, request, result)

    def _tool_started(self, request: ToolCallRequest) -> ThreadSession:
        session = self.session(request.runtime)
        call = request.tool_call
        session.record_event(EventType.TOOL_STARTED, tool_call_id=call.get("id"), tool=call.get("name"))
        return session

    def _tool_finished(self, session: ThreadSession, request: ToolCallRequest,
                       result: ToolMessage | Command[Any]) -> ToolMessage | Command[Any]:
        """Budget the result (artifact + preview); a ``Command`` has its ToolMessages budgeted."""
        engine: ThreadEngine = session.engine
        call = request.tool_call
        if isinstance(result, ToolMessage):
            result = engine.budget_tool_result(result, tool_name=call.get("name"))
            status = result.status
        else:
            update = getattr(result, "update", None)
            if isinstance(update, dict) and isinstance(update.get("messages"), list):
                messages = [engine.budget_tool_result(m) if isinstance(m, ToolMessage) else m
                            for m in update["messages"]]
                result = Command(graph=result.graph, update={**update, "messages": messages},
                                 resume=result.resume, goto=result.goto)
            status = "command"
        session.record_event(EventType.TOOL_FINISHED, tool_call_id=call.get("id"), tool=call.get("name"),
                             status=status)
        return result

    # ── before the model: the turn's aggregate budget, then the transcript ──

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        session = self.session(runtime)
        replaced = session.engine.finish_tool_turn(state["messages"])
        return {"messages": replaced} if replaced else None

    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.before_model, state, runtime)

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        session = self.session(runtime)
        session.record_new(state["messages"])
        session.end_turn()
        return None

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.after_agent, state, runtime)

    # ── the model call: meter, microcompact, compaction, reactive retry ──

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        engine = self._engine_for(request)
        turn = engine.prepare_request(request)
        try:
            response = handler(request.override(messages=turn.messages))
        except Exception as exc:
            turn = self._reactive(engine, turn, exc)
            response = handler(request.override(messages=turn.messages))
        return self._finish(engine, turn, response)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        engine = await asyncio.to_thread(self._engine_for, request)
        turn = await asyncio.to_thread(engine.prepare_request, request)
        try:
            response = await handler(request.override(messages=turn.messages))
        except Exception as exc:
            turn = await asyncio.to_thread(self._reactive, engine, turn, exc)
            response = await handler(request.override(messages=turn.messages))
        return self._finish(engine, turn, response)

    def _engine_for(self, request: ModelRequest[Any]) -> ThreadEngine:
        name = getattr(request.model, "model_name", None) or getattr(request.model, "model", None)
        return self.session(request.runtime, model_name=name if isinstance(name, str) else None).engine

    @staticmethod
    def _reactive(engine: ThreadEngine, turn: Turn, error: Exception) -> Turn:
        """The compacted turn to retry after ``error``; any other error, or a compaction that
        cannot shrink the history, re-raises the provider's error (the reason is its cause)."""
        if not engine.is_context_length_error(error):
            raise error
        try:
            return engine.reactive(turn, error)
        except CompactionFailed as failed:
            raise error from failed

    @staticmethod
    def _finish(engine: ThreadEngine, turn: Turn, response: ModelResponse[Any]) -> Any:
        """Record the reply; when the history was compacted, rewrite the state to it."""
        engine.record_response(response.result)
        if turn.new_history is None:
            return response
        rewrite: list[BaseMessage] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *turn.new_history,
                                      *response.result]
        return ExtendedModelResponse(model_response=response, command=Command(update={"messages": rewrite}))

