"""Workspace tools: read_file, write_file, edit_file, grep, glob, ls, shell, read_tool_result.

Each is a LangChain ``BaseTool`` confined to the workspace roots; results pass through the
tool-result budget (:mod:`mtagent.context.tool_results.budgeter`) the moment they are produced.
"""

from mtagent.tools.base import ToolContext, ToolSession
from mtagent.tools.read_state import ReadState
from mtagent.tools.registry import default_tools
from mtagent.tools.workspace import Workspace

__all__ = ["ReadState", "ToolContext", "ToolSession", "Workspace", "default_tools"]
