"""Deferred tool schemas for ``MTContextMiddleware``: a ``create_agent``'s many tools behind ``tool_search``.

The middleware does not own the agent's tools, but every model request passes through it. Per
thread session it keeps a :class:`~mtagent.context.toolset.Toolset` over the request's tools and,
when their definitions would take more than ``tools.defer_share`` of the window (or ``tools.defer
= always``), sends only the core ones (tools named in ``tools.core``; a ``create_agent``'s tools
are all the caller's, so none is core by default), ``tool_search`` and the tools loaded so far,
in load order — the same rule as the CLI. The deferred tools' listing is appended to the system
message. The agent still runs every tool by name: a loaded tool's call reaches its ``ToolNode``.
In a small window the tools sent are compact schema dicts, chosen by the catalog's rule (never
dropping a caller's tool: ``agent.compact_drop_tools`` names mtagent's own); ``create_agent`` binds
them without checking them against its tool registry. Provider-native tool dicts stay as they are.

``tool_search`` is registered by the middleware (``AgentMiddleware.tools``) and finds the calling
thread's toolset through the injected ``ToolRuntime``. A compaction of the thread (its session's
statistics: the middleware's event bus is shared by all threads) brings the post-compaction delta,
as in the CLI.

(No ``from __future__ import annotations``: LangChain reads the tool's signature at run time.)
"""

import threading
from typing import Annotated, Any

from langchain.tools import ToolRuntime
from langchain_core.messages import SystemMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field

from mtagent.config import Settings
from mtagent.context.opener.catalog import open_catalog
from mtagent.context.toolset import TOOL_SEARCH, Toolset
from mtagent.context.tokens import count_text_tokens, message_text
from mtagent.context.toolset.catalog import tool_search_schema
from mtagent.context.toolset.schemas import SchemaChoice
from mtagent.integrations.engine import ThreadSessions


class RequestToolsets:
    """One toolset per thread session, built from the first request's tools (see the module docstring)."""

    def __init__(self, sessions: ThreadSessions, settings: Settings) -> None:
        self.sessions = sessions
        self.settings = settings
        self._toolsets: dict[str, tuple[tuple[str, ...], Toolset]] = {}
        self.last_schemas: SchemaChoice | None = None  # the latest request's schema choice (inspect it, or log it)
        self._lock = threading.Lock()

    def for_runtime(self, runtime: Any, tools: list[Any] | None = None) -> Toolset | None:
        """The thread's toolset (built from ``tools`` on first use, or when the agent's tools changed)."""
        session = self.sessions.get(runtime)
        with self._lock:
            known = self._toolsets.get(session.session_id)
            if tools is None:
                return known[1] if known else None
            own = [t for t in tools if isinstance(t, BaseTool) and t.name != TOOL_SEARCH]
            key = tuple(t.name for t in own)
            if known is None or known[0] != key:
                toolset = open_catalog(own, self.settings, session.project_root,
                                       window=self.settings.context.token_limit, agent=False)
                known = self._toolsets[session.session_id] = (key, toolset)
            known[1].caught_up(session.stats.compactions)  # the thread's own count (the bus is shared)
            return known[1]

    def called(self, request: Any) -> None:
        """A tool call is about to run: a deferred tool called by name without a search is loaded too."""
        toolset = self.for_runtime(request.runtime)
        if toolset is not None:
            toolset.load_called(str(request.tool_call.get("name") or ""))

    def apply(self, request: Any) -> Any:
        """``request`` with the deferred tools left out and their listing in the system message (nothing
        deferred: ``tool_search`` is not offered either), then with compact schemas in a small window
        (:meth:`~mtagent.context.toolset.catalog.ToolCatalog.request_schemas`); unchanged when neither applies."""
        tools = list(getattr(request, "tools", None) or [])
        if not any(isinstance(t, BaseTool) for t in tools):
            return request
        toolset = self.for_runtime(request.runtime, tools)
        if toolset is None:
            return request
        return self._compact(toolset, self._deferred(toolset, request, tools))

    def _deferred(self, toolset: Toolset, request: Any, tools: list[Any]) -> Any:
        if not toolset.catalog.deferral.deferring:
            unsent = [t for t in tools if getattr(t, "name", None) != TOOL_SEARCH]
            return request if len(unsent) == len(tools) else request.override(tools=unsent)
        by_name = {getattr(t, "name", None): t for t in tools}
        sent = []
        for item in toolset.bound():
            name = item["function"]["name"] if isinstance(item, dict) else getattr(item, "name", None)
            sent.append(by_name.get(name, item))  # the agent's own object (and its tool_search) where there is one
        sent += [t for t in tools if not isinstance(t, BaseTool)]  # provider-native tools stay as they are
        listing = "\n\n".join(str(m.content) for m in toolset.messages())
        system = getattr(request, "system_message", None)
        text = f"{system.content}\n\n{listing}" if system is not None and system.content else listing
        return request.override(tools=sent, system_message=SystemMessage(content=text))

    def _compact(self, toolset: Toolset, request: Any) -> Any:
        tools = list(getattr(request, "tools", None) or [])
        if not any(isinstance(t, BaseTool) for t in tools):
            return request
        system = getattr(request, "system_message", None)
        tokens = count_text_tokens(message_text(system), self.settings.context.encoding) if system is not None else 0
        sent, self.last_schemas = toolset.catalog.request_schemas(tools, tokens)
        return request if self.last_schemas.mode == "full" else request.override(tools=sent)


def make_tool_search(toolsets: RequestToolsets, default_k: int, max_k: int) -> BaseTool:
    """``tool_search`` for a ``create_agent``: searches and loads in the calling thread's toolset."""
    schema = tool_search_schema(default_k, max_k)["function"]
    props = schema["parameters"]["properties"]

    def tool_search(
        query: Annotated[str, Field(description=props["query"]["description"])],
        runtime: ToolRuntime,
        k: Annotated[int | None, Field(ge=1, le=max_k, description=props["k"]["description"])] = None,
    ) -> str:
        toolset = toolsets.for_runtime(runtime)
        if toolset is None:
            return "No tools are deferred in this conversation; call the tools you were given directly."
        return toolset.run_search(query, k)

    return StructuredTool.from_function(tool_search, name=TOOL_SEARCH, description=schema["description"])
