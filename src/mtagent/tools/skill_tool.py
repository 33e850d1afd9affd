"""The ``skill`` tool: the model loads an Agent Skill's instructions by name (context/toolset/skills.py).

The body comes back as the tool's result, so it stays in the conversation (pinned) until the next
compaction; after one, the toolset's delta names it so it can be loaded again. ``file`` reads a file
the skill bundles, confined to the skill's folder. The schema is the
toolset's (:func:`mtagent.context.toolset.skill_schema`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from mtagent.context.toolset import Toolset, skill_schema
from mtagent.context.toolset.listing import SKILL_TOOL


class SkillArgs(BaseModel):
    name: str = Field(description="the skill's name, as listed")
    file: str | None = Field(None, description="a path relative to the skill's folder")


def make_skill_tool(toolset: Callable[[], Toolset]) -> BaseTool:
    """A ``skill`` tool reading from ``toolset()``."""
    description = skill_schema()["function"]["description"]

    def run(name: str, file: str | None = None, **_: Any) -> str:
        return toolset().run_skill(str(name), str(file) if file else None)

    return StructuredTool.from_function(run, name=SKILL_TOOL, description=description, args_schema=SkillArgs)
