"""Workspace tools: read_file, write_file, edit_file, grep, glob, ls, shell, read_tool_result.

Each is a LangChain ``BaseTool`` confined to the workspace roots; results pass through the
tool-result budget (:mod:`mtagent.context.tool_results.budgeter`) the moment they are produced.
"""

from mtagent.tools.base import ApprovalDecision, ApprovalHook, ToolContext, ToolInputError, ToolSession
from mtagent.tools.read_state import ReadState, RecentRead
from mtagent.tools.registry import default_tools, tool_context
from mtagent.tools.workspace import Workspace

__all__ = [
    "ApprovalDecision", "ApprovalHook", "ReadState", "RecentRead", "ToolContext", "ToolInputError",
    "ToolSession", "Workspace", "default_tools", "tool_context",
]
