"""The ``tool_search`` tool: the model finds deferred tools and loads them (context/toolset).

Its schema is the catalog's (:func:`mtagent.context.toolset.catalog.tool_search_schema`), so what is
counted and bound is what runs here. ``toolset`` is a callable returning the session's
:class:`~mtagent.context.toolset.Toolset` — one per session, also when one tool object serves the
LangChain middleware's many threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from mtagent.context.toolset import TOOL_SEARCH, Toolset
from mtagent.context.toolset.catalog import tool_search_schema


class ToolSearchArgs(BaseModel):
    query: str = Field(description="what the tool should do, or select:<names>")
    k: int | None = Field(None, ge=1, description="tools to return and load")


def make_tool_search_tool(toolset: Callable[[], Toolset], *, default_k: int = 5, max_k: int = 20) -> BaseTool:
    """A ``tool_search`` tool answering from ``toolset()``: the hits, loaded for the rest of the session."""
    description = tool_search_schema(default_k, max_k)["function"]["description"]

    def run(query: str, k: int | None = None, **_: Any) -> str:
        return toolset().run_search(str(query), k)

    return StructuredTool.from_function(run, name=TOOL_SEARCH, description=description, args_schema=ToolSearchArgs)
