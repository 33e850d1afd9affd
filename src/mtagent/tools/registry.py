"""``default_tools``: every workspace tool, sharing one :class:`ToolContext` per session."""

from __future__ import annotations

import os

from langchain_core.tools import BaseTool

from mtagent.config import Settings
from mtagent.session.local import local_home
from mtagent.tools.base import ToolContext, ToolSession
from mtagent.tools.edit import EditFileTool, WriteFileTool
from mtagent.tools.files import ReadFileTool, ReadToolResultTool
from mtagent.tools.memory_tool import build_save_memory_tool
from mtagent.tools.recall import RecallTool
from mtagent.tools.search import GlobTool, GrepTool, LsTool
from mtagent.tools.shell import ShellTool
from mtagent.tools.update_plan import build_update_plan_tool

WORKSPACE_TOOLS = (ReadFileTool, WriteFileTool, EditFileTool, GrepTool, GlobTool, LsTool, ShellTool)


def default_tools(
    workspace_root: str | os.PathLike[str],
    session: ToolSession | None = None,
    settings: Settings | None = None,
    *,
    context: ToolContext | None = None,
    include_memory: bool = True,
) -> list[BaseTool]:
    """read_file, write_file, edit_file, grep, glob, ls, shell, update_plan, read_tool_result (+ save_memory, recall).

    Results go through the session's budgeter as they are produced; ``tools[0].context``
    gives the shared :class:`ToolContext` (its ``budgeter.finalize_turn`` and ``read_state``
    are what the agent loop and the compactor use). ``read_tool_result`` is included only
    when the session has an artifact store to read from.
    """
    ctx = context or ToolContext.create(workspace_root, session, settings)
    tools: list[BaseTool] = [cls(context=ctx) for cls in WORKSPACE_TOOLS]
    tools.append(build_update_plan_tool())  # the plan the engine keeps through compactions (context/ledger)
    if ctx.artifacts is not None:
        tools.append(ReadToolResultTool(context=ctx))
    if include_memory:
        tools.append(build_save_memory_tool(ctx.workspace.root, home=local_home(ctx.settings)))
        if ctx.settings.recall.enabled:  # the project's memory of earlier work: recall (spec 003 v1.1)
            tools.append(RecallTool(context=ctx))
    return tools


def tool_context(tools: list[BaseTool]) -> ToolContext:
    """The shared context of tools made by :func:`default_tools`."""
    for tool in tools:
        ctx = getattr(tool, "context", None)
        if isinstance(ctx, ToolContext):
            return ctx
    raise ValueError("these tools were not made by default_tools: none carries a ToolContext")
