"""The agent's half of the one opener: a session's tools, MCP servers, skills and tool catalog.

:func:`mtagent.context.opener.open_engine_session` opens the engine's half (storage, sink chain,
engine, summarizer and notes models, session memory, the system-prompt context every request is
built from). :func:`open_tools` adds the agent's half over it: the built-in (or given) tools, sharing
the engine's budgeter and :class:`ReadState` (so the compactor re-attaches recently read files); the
tools a host adds (the ``task`` tool of subagent hosting); the project's MCP servers
(:func:`open_mcp`, the one place an MCP manager is opened); and the catalog
(:func:`~mtagent.context.opener.catalog.open_catalog`: skills, deferral behind ``tool_search``, schema
sizes) bound to the session's system context, from which every request takes its tools.
``mtagent tools list`` opens the same catalog (:func:`project_catalog`) without opening a session,
and ``mtagent mcp list`` the same servers (:func:`open_mcp`).

A built-in tool is registered in :func:`mtagent.tools.default_tools` (one line there); every front
end then has it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from mtagent.config import Settings
from mtagent.context.opener import OpenedSession, SystemContext
from mtagent.context.opener.catalog import open_catalog
from mtagent.context.static.tiers import StaticContext
from mtagent.context.toolset import Toolset
from mtagent.context.toolset.binding import bind_toolset, restore_loads
from mtagent.context.toolset.late import add_late_tools
from mtagent.errors import ConfigError
from mtagent.events import EventBus
from mtagent.tools import ToolContext, ToolSession, default_tools
from mtagent.tools.mcp import McpManager
from mtagent.tools.skill_tool import make_skill_tool
from mtagent.tools.tool_search import make_tool_search_tool

log = logging.getLogger(__name__)

ToolsSpec = Sequence[BaseTool] | Callable[[ToolContext], Sequence[BaseTool]] | None


@dataclass
class SessionParts:
    """An opened session with the agent's tools. ``runnable``: every tool the session runs, by name —
    built-in or given, the host's, MCP (also those a server adds later), ``tool_search`` and ``skill``."""

    opened: OpenedSession
    tool_context: ToolContext
    toolset: Toolset
    runnable: dict[str, BaseTool] = field(default_factory=dict)
    mcp: McpManager | None = None  # the session's MCP servers; None when it was given its own tools

    def close(self) -> None:
        """Every MCP server process stops with the session."""
        if self.mcp is not None:
            self.mcp.close()


def open_mcp(settings: Settings, root: Path, events: EventBus | None = None) -> McpManager:
    """The project's MCP servers (the one place a manager is opened; nothing starts until their tools
    are asked for). ``events``: a session's bus — its first request waits at most
    ``mcp.ready_wait_seconds`` and each server it went on without is told there."""
    return McpManager.for_project(settings, root, events)


def open_tools(opened: OpenedSession, tools: ToolsSpec = None, *, window: int,
               host: Callable[[ToolContext], list[BaseTool]] | None = None) -> SessionParts:
    """The agent's tools for ``opened`` in a window of ``window`` tokens (see the module docstring).

    ``tools``: None for :func:`mtagent.tools.default_tools` and the project's MCP servers; a list to use
    as is; or a callable given the session's :class:`ToolContext`. ``host(context)``: tools the session
    hosts besides (the ``task`` tool)."""
    settings, root = opened.settings, opened.project_root
    context = ToolContext.create(root, ToolSession(opened.artifacts, opened.sink, opened.events, opened.stats),
                                 settings, read_state=opened.read_state)
    context.budgeter = opened.engine.budgeter  # one budget for the tools and the engine
    given = default_tools(root, context=context) if tools is None else tools(context) if callable(tools) else tools
    tool_list = [*given, *(host(context) if host is not None else [])]
    mcp = open_mcp(settings, root, opened.events) if tools is None else None
    toolset = open_catalog(tool_list, settings, root, window=window, system=opened.system,
                           counter=opened.window.counter, source=mcp,
                           warn=lambda exc: log.warning("warning: %s; tool search uses keywords only", exc))
    parts = SessionParts(opened, context, toolset, mcp=mcp)
    _runnable(parts, [e.tool for e in toolset.catalog.entries if isinstance(e.tool, BaseTool)])
    if toolset.catalog.deferral.deferring:
        _runnable(parts, [_tool_search(toolset)])
    if toolset.skills.skills:
        _runnable(parts, [make_skill_tool(lambda: toolset)])
    _runnable(parts, [t for t in tool_list if t.name not in parts.runnable])  # left out of the catalog: still runs
    restore_loads(toolset, opened.records)
    bind_toolset(toolset, opened.system, parts.runnable.values(), compactions=lambda: opened.stats.compactions,
                 last_tokens=lambda: opened.window.last_plan.tokens if opened.window.last_plan else 0,
                 record_event=opened.engine.recorder.event)
    if mcp is not None:
        mcp.offered.on_new_tools(lambda late: _add_late_tools(parts, late))
    return parts


def _runnable(parts: SessionParts, tools: Sequence[BaseTool]) -> None:
    parts.runnable.update((t.name, t) for t in tools)


def _tool_search(toolset: Toolset) -> BaseTool:
    tcfg = toolset.catalog.settings.tools
    return make_tool_search_tool(lambda: toolset, default_k=tcfg.search_default_k, max_k=tcfg.search_max_k)


def _add_late_tools(parts: SessionParts, tools: list[BaseTool]) -> None:
    """Tools an MCP server added after start (``tools/list_changed``): into the catalog under the start's
    deferral rule (:func:`~mtagent.context.toolset.late.add_late_tools`: appended, deferred when the
    catalog defers or now should, else loaded and priced like a load) and runnable from now on."""
    toolset, before = parts.toolset, len(parts.toolset.catalog.loaded)
    names, started = add_late_tools(toolset.catalog, tools, after_tokens=toolset.after_tokens())
    added = set(names)
    _runnable(parts, [t for t in tools if t.name in added])
    if started:  # the same rule as at start now defers: tool_search is offered from here on
        _runnable(parts, [_tool_search(toolset)])
    toolset.loaded(toolset.catalog.loaded[before:])  # a catalog that does not defer loads them at once


class _ListedOnly:
    """The launcher of a ``task`` tool built to be listed (``mtagent tools list``), never to run."""

    def launch(self, request: Any) -> str:
        raise RuntimeError("this task tool only lists what a session would send; open a session to run it")


def _listed_default_tools(root: Path, settings: Settings) -> list[BaseTool]:
    """The built-in tools in a session's order, ``read_tool_result`` included: a session always has an
    artifact store to page saved results from; a listing has none, but counts the tool all the same."""
    from mtagent.tools.registry import tool_context
    from mtagent.tools.files import ReadToolResultTool

    tools = default_tools(root, settings=settings)
    if not any(t.name == ReadToolResultTool.model_fields["name"].default for t in tools):
        at = next(i for i, t in enumerate(tools) if t.name == "update_plan") + 1
        tools.insert(at, ReadToolResultTool(context=tool_context(tools)))
    return tools


def _listed_task_tool(root: Path, settings: Settings) -> list[BaseTool]:
    """The ``task`` tool a main session in ``root`` would host (the same schema and profile list), so
    the listing counts what a session sends (it counted the tools without it: 9 of 11)."""
    cfg = settings.subagents
    if not (cfg.enabled and cfg.max_depth > 0):
        return []
    from mtagent.agent.subagents import load_profiles
    from mtagent.tools.task import build_task_tool

    return [build_task_tool(_ListedOnly(), agents=load_profiles(root).names)]


@contextmanager
def project_catalog(root: Path, settings: Settings, *, window: int | None, mcp: bool,
                    warn: Callable[[ConfigError], None]) -> Iterator[tuple[Toolset, list[str]]]:
    """The catalog a session in ``root`` would open, without opening a session (``mtagent tools list``),
    and notes: MCP servers that did not start, skills skipped. The servers stop when it closes."""
    manager = open_mcp(settings, root) if mcp and settings.mcp.enabled else None
    try:
        system = SystemContext(StaticContext(root, settings.memory), root)
        toolset = open_catalog([*_listed_default_tools(root, settings), *_listed_task_tool(root, settings)],
                               settings, root, window=window or settings.context.token_limit, system=system,
                               source=manager, warn=warn)
        notes = [f"MCP server {s.name}: {s.state}{' — ' + s.note if s.note else ''}"
                 for s in (manager.servers() if manager is not None else []) if s.state != "ready"]
        yield toolset, [*notes, *(f"skill skipped: {s}" for s in toolset.skills.discovery.skipped)]
    finally:
        if manager is not None:
            manager.close()
