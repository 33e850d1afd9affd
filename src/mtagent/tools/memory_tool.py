"""The ``save_memory`` tool: the model asks to remember a fact across sessions.

Global facts go under ``## Agent Memories`` in ``~/.mtagent/CONTEXT.md`` (they reach the
system prompt of every later session); project facts go into the project's ``MEMORY.md``.
The tool can only append to those two lists — it cannot write anywhere else.
"""

from __future__ import annotations

import os
from typing import Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from mtagent.context.static import memory
from mtagent.errors import MTAgentError

SAVE_MEMORY_DESCRIPTION = (
    "Remember one durable fact across sessions: a user preference, a project convention, or a "
    "hard-won lesson (e.g. 'tests run with `uv run pytest -x`'). Not for task progress or anything "
    "that will be stale tomorrow. scope='global' applies to every project; 'project' only to this one."
)


class SaveMemoryArgs(BaseModel):
    fact: str = Field(description="The fact, one short self-contained sentence.")
    scope: Literal["global", "project"] = Field("global", description="'global' (all projects) or 'project'.")


def build_save_memory_tool(project_root: str | os.PathLike[str]) -> BaseTool:
    """A ``save_memory`` tool bound to ``project_root`` (the project scope's memory folder)."""

    def save_memory(fact: str, scope: Literal["global", "project"] = "global") -> str:
        try:
            result = memory.save_memory(fact, scope, project_root)
        except MTAgentError as exc:
            return f"Error: {exc}"
        where = "global memory (~/.mtagent/CONTEXT.md)" if scope == "global" else "project memory (MEMORY.md)"
        if result.added:
            return f"Saved to {where}: {result.entry.text}"
        if result.reactivated:
            return f"Already in {where} but marked obsolete; it is active again: {result.entry.text}"
        return f"Already in {where}, nothing changed: {result.entry.text}"

    return StructuredTool.from_function(
        func=save_memory,
        name="save_memory",
        description=SAVE_MEMORY_DESCRIPTION,
        args_schema=SaveMemoryArgs,
    )
