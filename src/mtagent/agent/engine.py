"""The agent's tools over an opened session: the tool context, the tool list and the schema choice.

The session itself — storage, sink chain, engine, summarizer, session memory, system-prompt
context — is opened by :func:`mtagent.context.opener.open_engine_session`; this module adds what
only the agent has: its tools (sharing the engine's budgeter and :class:`ReadState`, so the
compactor re-attaches recently read files) and which of their schemas to bind in this window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool

from mtagent.config import Settings
from mtagent.context.engine_session import EngineSession
from mtagent.context.opener import OpenedSession, SessionTools
from mtagent.context.session_memory.manager import SessionMemoryManager
from mtagent.context.static.tiers import StaticContext
from mtagent.context.window import ContextWindowManager
from mtagent.tools import ToolContext, ToolSession, default_tools
from mtagent.context.toolset.schemas import SchemaChoice, choose_schemas
from mtagent.session.store import shared_store

ToolsSpec = Sequence[BaseTool] | Callable[[ToolContext], Sequence[BaseTool]] | None


@dataclass
class EngineParts:
    """An opened session with the agent's tools."""

    opened: OpenedSession
    tools: list[BaseTool]
    tool_context: ToolContext

    @property
    def session(self) -> EngineSession:
        return self.opened.engine

    @property
    def engine(self) -> ContextWindowManager:
        return self.opened.window

    @property
    def session_memory(self) -> SessionMemoryManager | None:
        return self.opened.session_memory

    @property
    def static(self) -> StaticContext:
        return self.opened.system.static


def session_store(settings: Settings) -> Any:
    """The configured :class:`~mtagent.session.store.Store`, one per process (migrations and a pool happen once)."""
    return shared_store(settings)


def build(opened: OpenedSession, tools: ToolsSpec = None) -> EngineParts:
    """The agent's tools for ``opened``.

    ``tools``: None for :func:`mtagent.tools.default_tools`; a list to use as is; or a callable
    given the session's :class:`ToolContext` (to add tools to the defaults, as tests do).
    """
    session = ToolSession(opened.artifacts, opened.sink, opened.events, opened.stats)
    context = ToolContext.create(opened.project_root, session, opened.settings, read_state=opened.read_state)
    context.budgeter = opened.engine.budgeter  # one budget for the tools and the engine
    if tools is None:
        tool_list = default_tools(opened.project_root, context=context)
    elif callable(tools):
        tool_list = list(tools(context))
    else:
        tool_list = list(tools)
    return EngineParts(opened, tool_list, context)


def choose_tool_schemas(parts: EngineParts, settings: Settings, window: int) -> tuple[list[Any], SchemaChoice]:
    """The tools to bind, full or compact (:mod:`mtagent.tools.tool_schemas`), measured with the
    system prompt each set goes with, as the engine counts it for the window; the session's tool
    catalog is set to the choice."""
    system = parts.opened.system

    def system_tokens(tools: Sequence[Any], mode: str) -> int:
        return parts.engine.counter.estimate(system.build(tools, list_tools=mode == "full").messages)

    agent = settings.agent
    offered, choice = choose_schemas(parts.tools, window=window, setting=agent.tool_schemas,
                                     max_share=agent.tool_schema_max_share, drop=agent.compact_drop_tools,
                                     system_tokens=system_tokens)
    full = choice.mode == "full"
    system.tools = SessionTools(parts.tools, None if full else frozenset(choice.offered), list_tools=full,
                                schema_tokens=choice.schema_tokens, context=system.tools.context)
    return offered, choice
