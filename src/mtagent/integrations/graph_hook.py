"""mtagent's context engine for a LangGraph graph you build yourself (no ``create_agent``).

(No ``from __future__ import annotations`` here: LangGraph injects ``config`` into a node only
when the parameter's annotation *is* ``RunnableConfig``, not the string of it.)

Three callables on one object, each a plain LangGraph piece::

    hook = MTContextHook(token_limit=128_000, tools=tools, system="You are …")
    graph.add_node("context", hook)                        # or create_react_agent(pre_model_hook=hook)
    tool_node = ToolNode(tools, wrap_tool_call=hook.wrap_tool_call)
    ... post_model_hook=hook.record                        # records the final reply

``hook(state, config)`` records the state's new messages and returns ``{"llm_input_messages":
view}`` (the request: microcompacted, never persisted) and, when the history changed,
``{"messages": …}`` — results a tool node added without ``hook.wrap_tool_call``, budgeted now
(by id), or after a compaction ``RemoveMessage(REMOVE_ALL_MESSAGES)`` + summary + kept tail. Every
piece is the thread's :class:`~mtagent.context.engine_session.EngineSession`, as in the CLI. A hand-built model node must send ``state["llm_input_messages"]`` (with the system
prompt in front), exactly as ``create_react_agent`` does. Reactive compaction needs the model
call itself, which this hook does not see: use :class:`~mtagent.integrations.langchain.
MTContextMiddleware` for that, or call :meth:`MTContextHook.reactive` from your model node.
"""

import os
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, RemoveMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from mtagent.config import Settings
from mtagent.context.compaction.summarize import Summarizer
from mtagent.events import EventBus
from mtagent.integrations.engine import ThreadSessions
from mtagent.integrations.langchain import finish_tool, start_tool

__all__ = ["MTContextHook"]


class MTContextHook:
    """See the module docstring. Arguments as :class:`~mtagent.integrations.langchain.MTContextMiddleware`,
    plus the ``system`` prompt and ``tools`` the model is called with (they count against the window)."""

    def __init__(self, *, settings: Settings | None = None, token_limit: int | None = None,
                 project_root: str | os.PathLike[str] | None = None, session_id: str | None = None,
                 summarizer_model: BaseChatModel | None = None, summarizer: Summarizer | None = None,
                 events: EventBus | None = None, system: str | SystemMessage | None = None,
                 tools: Sequence[Any] = ()) -> None:
        self.sessions = ThreadSessions(settings=settings, token_limit=token_limit, project_root=project_root,
                                       session_id=session_id, summarizer_model=summarizer_model,
                                       summarizer=summarizer, events=events)
        self.system = SystemMessage(content=system) if isinstance(system, str) else system
        self.tools = list(tools)
        self.last_history: list[BaseMessage] | None = None  # what the model was last prepared from

    def __call__(self, state: dict[str, Any], config: RunnableConfig | None = None) -> dict[str, Any]:
        engine = self.sessions.get(_Config(config)).engine
        replaced = engine.record_state(state["messages"])
        by_id = {m.id: m for m in replaced}
        history = [by_id.get(m.id, m) for m in state["messages"]]
        system = self._system()
        prepared = engine.prepare(history, system=system, tools_tokens=self.sessions.tools_tokens(self.tools))
        self.last_history = list(prepared.history)
        update: dict[str, Any] = {"llm_input_messages": list(prepared.messages[len(system):])}
        if prepared.compaction is not None:
            update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *prepared.history]
        elif replaced:
            update["messages"] = replaced
        return update

    def reactive(self, error: BaseException, config: RunnableConfig | None = None) -> dict[str, Any]:
        """After the provider rejected the last prepared view as too long: compact and return the state
        update (``messages`` rewrite + the new ``llm_input_messages`` to retry with)."""
        if self.last_history is None:
            raise RuntimeError("MTContextHook.reactive needs a prepared turn; run the hook before the model")
        engine = self.sessions.get(_Config(config)).engine
        system, tools_tokens = self._system(), self.sessions.tools_tokens(self.tools)
        history = engine.reactive(self.last_history, error, system=system, tools_tokens=tools_tokens)
        prepared = engine.prepare(history, system=system, tools_tokens=tools_tokens)
        self.last_history = list(prepared.history)
        return {"llm_input_messages": list(prepared.messages[len(system):]),
                "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *prepared.history]}

    def record(self, state: dict[str, Any], config: RunnableConfig | None = None) -> None:
        """Append the state's new messages (the model's reply) to the transcript; a no-op node."""
        session = self.sessions.get(_Config(config))
        session.engine.record_state(state["messages"])
        session.end_turn()

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]) -> ToolMessage | Command[Any]:
        """For ``ToolNode(tools, wrap_tool_call=hook.wrap_tool_call)``: the middleware's tool hook
        (started guard, budget, record)."""
        engine, answer = start_tool(self.sessions, request)
        if answer is not None:
            return answer
        return finish_tool(engine, request, handler(request))

    def _system(self) -> list[BaseMessage]:
        return [self.system] if self.system is not None else []

    def close(self) -> None:
        self.sessions.close()

    def __enter__(self) -> "MTContextHook":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Config:
    """Adapts a node's ``config`` to what :func:`~mtagent.integrations.thread_session.thread_id_of` reads."""

    def __init__(self, config: RunnableConfig | None) -> None:
        self.config = config
