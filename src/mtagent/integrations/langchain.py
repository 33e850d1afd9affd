"""mtagent's context engine as a LangChain v1 ``AgentMiddleware``: one line for ``create_agent``.

::

    agent = create_agent(model, tools, middleware=[MTContextMiddleware(token_limit=128_000)],
                         checkpointer=InMemorySaver())

Each hook is a thin adapter over the thread's :class:`~mtagent.context.engine_session.EngineSession`
(the same object the CLI's loop calls, so both get the same guarantees):

* ``wrap_tool_call`` — the tool-started guard (a call that started before a crash is answered
  "unknown outcome", never run twice), then the result is redacted, budgeted by the one rule
  (its tool's limit, then the turn's aggregate against the results before it; over a limit it is
  written to the session's artifact store and the model sees a ``<persisted-output>`` preview)
  and recorded at once.
* ``wrap_model_call`` — records the request's new messages, runs the engine's pipeline on it
  (usage-anchored meter with the system prompt and tool schemas, microcompact on the *request
  only*, auto compaction persisted to the graph state as ``RemoveMessage(REMOVE_ALL_MESSAGES)`` +
  summary + kept tail), retries transient provider errors with backoff, compacts reactively and
  retries once on a context-length rejection (also LangChain's ``ContextOverflowError``), and
  records the reply. Compaction runs here rather than in ``before_model`` because only the
  request knows the system prompt and tools it must fit with.
* ``after_agent`` — records anything the state gained elsewhere, ends the transcript's turn.
* tool deferral — past ``tools.defer_share`` of the window, the agent's tools are sent by name only
  and found with a registered ``tool_search`` (:mod:`mtagent.integrations.tool_deferral`).

One middleware instance serves any number of threads: each LangGraph ``thread_id`` is its own
mtagent session (:mod:`mtagent.integrations.thread_session`). Put this middleware *first* in the
list so it sees the state's messages unedited.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware.types import (AgentMiddleware, AgentState, ExtendedModelResponse, ModelRequest,
                                               ModelResponse)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from mtagent.config import Settings
from mtagent.context.compaction.summarize import Summarizer
from mtagent.context.engine_session import EngineSession, ModelCall
from mtagent.context.opener import OpenedSession
from mtagent.events import EventBus
from mtagent.integrations.artifact_tool import make_read_tool_result
from mtagent.integrations.engine import ThreadSessions
from mtagent.integrations.tool_deferral import RequestToolsets, make_tool_search

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
        secrets: values to redact from tool results and the transcript, besides the environment's
            variables named like keys, tokens and passwords.
        store: a :class:`~mtagent.session.store.Store` to keep the sessions in (e.g. the service's
            ``PostgresStore`` for its tenant); default: ``storage.backend`` of the settings.
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
        secrets: Sequence[str] = (),
        store: Any = None,
    ) -> None:
        super().__init__()
        self.sessions = ThreadSessions(settings=settings, token_limit=token_limit, project_root=project_root,
                                       session_id=session_id, summarizer_model=summarizer_model,
                                       summarizer=summarizer, events=events, secrets=secrets,
                                       store=store)
        self.tools = [make_read_tool_result(self.sessions)] if artifact_tool else []
        tools_cfg = self.sessions.settings.tools
        self.toolsets = RequestToolsets(self.sessions, self.sessions.settings)  # deferral, compact schemas
        if tools_cfg.defer != "never":
            self.tools.append(make_tool_search(self.toolsets, tools_cfg.search_default_k, tools_cfg.search_max_k))

    @property
    def settings(self) -> Settings:
        return self.sessions.settings

    @property
    def events(self) -> EventBus:
        return self.sessions.events

    @property
    def token_limit(self) -> int:
        return self.settings.context.token_limit

    def session(self, runtime: Any = None, *, model_name: str | None = None) -> OpenedSession:
        """The mtagent session of the running thread (opened, or resumed, on first use)."""
        return self.sessions.get(runtime, model_name=model_name)

    def session_for_thread(self, thread_id: str) -> OpenedSession | None:
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
        engine, answer = start_tool(self.sessions, request)
        if answer is not None:
            return answer
        self.toolsets.called(request)
        return finish_tool(engine, request, handler(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        engine, answer = await asyncio.to_thread(start_tool, self.sessions, request)
        if answer is not None:
            return answer
        await asyncio.to_thread(self.toolsets.called, request)
        result = await handler(request)
        return await asyncio.to_thread(finish_tool, engine, request, result)

    # ── after the agent: anything else the state gained, and the turn's end ──

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        session = self.session(runtime)
        session.engine.record_state(state["messages"])
        session.end_turn()
        return None

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.after_agent, state, runtime)

    # ── the model call: the engine session's pipeline ──

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        engine = self._engine_for(request)  # first: it opens the thread's session with the request's model name
        request = self.toolsets.apply(request)
        responses: list[ModelResponse[Any]] = []

        def invoke(sent: list[BaseMessage]) -> AIMessage:
            responses.append(handler(request.override(messages=sent)))
            return _reply_of(responses[-1])

        call = self._call(engine, request, invoke)
        return self._finish(engine, call, responses[-1])

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        loop = asyncio.get_running_loop()
        engine = await asyncio.to_thread(self._engine_for, request)
        request = await asyncio.to_thread(self.toolsets.apply, request)
        responses: list[ModelResponse[Any]] = []

        def invoke(sent: list[BaseMessage]) -> AIMessage:  # on a worker thread; the handler runs on the loop
            future = asyncio.run_coroutine_threadsafe(_awaited(handler(request.override(messages=sent))), loop)
            responses.append(future.result())
            return _reply_of(responses[-1])

        call = await asyncio.to_thread(self._call, engine, request, invoke)
        return await asyncio.to_thread(self._finish, engine, call, responses[-1])

    def _engine_for(self, request: ModelRequest[Any]) -> EngineSession:
        name = getattr(request.model, "model_name", None) or getattr(request.model, "model", None)
        return self.sessions.get(request.runtime, model_name=name if isinstance(name, str) else None).engine

    def _call(self, engine: EngineSession, request: ModelRequest[Any],
              invoke: Callable[[list[BaseMessage]], AIMessage]) -> ModelCall:
        system = [request.system_message] if request.system_message is not None else []
        return engine.call_model(list(request.messages), invoke, system=lambda: system,
                                 tools_tokens=self.sessions.tools_tokens(request.tools), strip_system=True)

    @staticmethod
    def _finish(engine: EngineSession, call: ModelCall, response: ModelResponse[Any]) -> Any:
        """Record the reply; when the history was compacted, rewrite the state to it."""
        for message in response.result:
            if isinstance(message, AIMessage):
                engine.record_reply(message)
            else:
                engine.recorder.record(message)
        if not call.compacted:
            return response
        rewrite: list[BaseMessage] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *call.view.history, *response.result]
        return ExtendedModelResponse(model_response=response, command=Command(update={"messages": rewrite}))


def _reply_of(response: ModelResponse[Any]) -> AIMessage:
    """The assistant message of a model response (structured output may add tool messages)."""
    return next((m for m in reversed(response.result) if isinstance(m, AIMessage)), AIMessage(content=""))


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def start_tool(sessions: ThreadSessions, request: ToolCallRequest) -> tuple[EngineSession, ToolMessage | None]:
    """The tool-started guard: the engine and, when the call must not run, the answer instead."""
    engine = sessions.get(request.runtime).engine
    call = request.tool_call
    started = engine.tool_started(str(call.get("id")), str(call.get("name")), call.get("args") or {})
    if started is True:
        return engine, None
    if started is None:  # answered, but the result is not at hand: say so rather than run it twice
        started = ToolMessage(content="Already run; its result is in the transcript.",
                              tool_call_id=str(call.get("id")), name=call.get("name"), status="error")
    return engine, started


def finish_tool(engine: EngineSession, request: ToolCallRequest,
                result: ToolMessage | Command[Any]) -> ToolMessage | Command[Any]:
    """Budget and record the result; a ``Command`` has its ToolMessages budgeted."""
    name = request.tool_call.get("name")
    if isinstance(result, ToolMessage):
        return engine.tool_result(result, tool_name=name)
    update = getattr(result, "update", None)
    if isinstance(update, dict) and isinstance(update.get("messages"), list):
        messages = [engine.tool_result(m, tool_name=name) if isinstance(m, ToolMessage) else m
                    for m in update["messages"]]
        return Command(graph=result.graph, update={**update, "messages": messages},
                       resume=result.resume, goto=result.goto)
    return result
