"""The agent's tools over an opened session: the tool context, the tool list and the schema choice.

The session itself — storage, sink chain, engine, summarizer, session memory, system-prompt
context — is opened by :func:`mtagent.context.opener.open_engine_session`; this module adds what
only the agent has: its tools (sharing the engine's budgeter and :class:`ReadState`, so the
compactor re-attaches recently read files) and which of their schemas to bind in this window.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool

from mtagent.config import Settings
from mtagent.context.opener import OpenedSession
from mtagent.tools import ToolContext, ToolSession, default_tools
from mtagent.tools.mcp import McpManager
from mtagent.errors import ConfigError
from mtagent.context.recall.embeddings import make_embeddings
from mtagent.context.toolset import Toolset
from mtagent.context.toolset.binding import bind_toolset, restore_loads
from mtagent.context.toolset.late import add_late_tools
from mtagent.context.toolset.schemas import SchemaChoice
from mtagent.tools.skill_tool import make_skill_tool
from mtagent.tools.tool_search import make_tool_search_tool

log = logging.getLogger(__name__)

ToolsSpec = Sequence[BaseTool] | Callable[[ToolContext], Sequence[BaseTool]] | None


@dataclass
class EngineParts:
    """An opened session with the agent's tools."""

    opened: OpenedSession
    tools: list[BaseTool]
    tool_context: ToolContext
    toolset: Toolset | None = None  # the tool catalog (choose_tool_schemas)
    runnable: list[BaseTool] = field(default_factory=list)  # every tool the session runs: + MCP, tool_search, skill
    mcp: McpManager | None = None  # the session's MCP servers (tools/mcp); None when it was given its own tools

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
    mcp = McpManager.for_session(opened.settings, opened.project_root, opened.events) if tools is None else None
    return EngineParts(opened, tool_list, context, mcp=mcp)


def choose_tool_schemas(parts: EngineParts, settings: Settings, window: int, mcp: Any = None) -> SchemaChoice:
    """The session's tool catalog (:mod:`mtagent.context.toolset`): built-in and
    MCP tools (``mcp``: an :class:`~mtagent.tools.mcp.McpToolSource`), full or compact schemas measured
    with the system prompt each set goes with, the non-core ones deferred behind ``tool_search`` past
    ``tools.defer_share`` of the window, and the skills. ``parts.runnable`` becomes every tool the
    session can run; the opened session's system context follows the catalog (loads, compactions)."""
    system = parts.opened.system
    mcp = mcp if mcp is not None else parts.mcp  # the session's servers start here, together

    def system_tokens(tools: Sequence[Any], mode: str) -> int:
        return parts.opened.window.counter.estimate(system.build(tools, list_tools=mode == "full").messages)

    try:
        embeddings = make_embeddings(settings.recall.embeddings)
    except ConfigError as exc:  # tool_search still has BM25; the recall tool says what to fix when used
        log.warning("warning: %s; tool search uses keywords only", exc)
        embeddings = None
    toolset = Toolset.open([*parts.tools, *(mcp.tools() if mcp is not None else [])], settings,
                           project_root=parts.opened.project_root, window=window, system_tokens=system_tokens,
                           embeddings=embeddings, instructions=mcp.instructions() if mcp is not None else None)
    parts.toolset = toolset
    parts.runnable = [e.tool for e in toolset.catalog.entries if isinstance(e.tool, BaseTool)]
    if toolset.catalog.deferral.deferring:
        parts.runnable.append(make_tool_search_tool(lambda: toolset, default_k=settings.tools.search_default_k,
                                                    max_k=settings.tools.search_max_k))
    if toolset.skills.skills:
        parts.runnable.append(make_skill_tool(lambda: toolset))
    window_manager = parts.opened.window
    restore_loads(toolset, parts.opened.records)
    bind_toolset(toolset, system, parts.runnable, events=parts.opened.events,
                 last_tokens=lambda: window_manager.last_plan.tokens if window_manager.last_plan else 0,
                 record_event=parts.opened.engine.record_event, session_id=parts.opened.session_id)
    if mcp is not None and hasattr(mcp, "on_new_tools"):
        mcp.on_new_tools(lambda tools: _add_late_tools(parts, toolset, tools))
    return toolset.catalog.schema_choice


def _add_late_tools(parts: EngineParts, toolset: Toolset, tools: list[BaseTool]) -> None:
    """Tools an MCP server added after start (``tools/list_changed``): into the catalog under the start's
    deferral rule (:func:`~mtagent.context.toolset.late.add_late_tools`: appended, deferred when the
    catalog defers or now should, else loaded and priced like a load) and runnable from now on."""
    names, started = add_late_tools(toolset.catalog, tools, after_tokens=toolset.after_tokens())
    added = set(names)
    parts.runnable.extend(t for t in tools if t.name in added)
    if started:  # the same rule as at start now defers: tool_search is offered from here on
        tcfg = toolset.catalog.settings.tools
        parts.runnable.append(make_tool_search_tool(lambda: toolset, default_k=tcfg.search_default_k,
                                                    max_k=tcfg.search_max_k))
    if added:
        toolset.changed()
