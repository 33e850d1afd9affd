"""Compact tool schemas for ``MTContextMiddleware`` requests in a small window.

The middleware does not own the tool list — ``create_agent`` binds the caller's tools — but each
model request passes through it, so it can send a compact copy of their schemas instead
(:mod:`mtagent.context.toolset.schemas`: first sentences, no parameter documentation). It never drops
a caller's tool: ``agent.compact_drop_tools`` names mtagent's own optional tools, and a caller's
tool of the same name is theirs. The agent still runs the original tools by name; the compact
schemas travel as plain OpenAI function dicts, which ``create_agent`` binds without validating
them against its tool registry. Provider-native tool dicts are left as they are.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool

from mtagent.config import Settings
from mtagent.context.tokens import count_text_tokens, message_text
from mtagent.context.toolset.schemas import SchemaChoice, choose_schemas


class RequestSchemas:
    """The schema set for each request's tools, chosen once per tool set and system prompt size."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.last: SchemaChoice | None = None  # the latest request's choice (inspect it, or log it)
        self._chosen: dict[tuple[Any, ...], tuple[list[Any], SchemaChoice]] = {}
        self._lock = threading.Lock()

    def choose(self, tools: Sequence[Any], system_tokens: int) -> tuple[list[Any], SchemaChoice]:
        """The tools to send (compact dicts in place of ``BaseTool`` s when the window is small)."""
        own = [t for t in tools if isinstance(t, BaseTool)]
        key = (tuple(t.name for t in own), len(tools), system_tokens)
        with self._lock:
            if key not in self._chosen:
                agent = self.settings.agent
                sent, choice = choose_schemas(own, window=self.settings.context.token_limit,
                                              setting=agent.tool_schemas, max_share=agent.tool_schema_max_share,
                                              drop=(), system_tokens=lambda _tools, _mode: system_tokens,
                                              encoding=self.settings.context.encoding)
                compact = iter(sent)
                self._chosen[key] = ([next(compact) if isinstance(t, BaseTool) else t for t in tools], choice)
            tools_out, self.last = self._chosen[key]
        return list(tools_out), self.last

    def apply(self, request: Any) -> Any:
        """``request`` with compact tool schemas when they are chosen; unchanged otherwise."""
        tools = list(getattr(request, "tools", None) or [])
        if not any(isinstance(t, BaseTool) for t in tools):
            return request
        system = getattr(request, "system_message", None)
        encoding = self.settings.context.encoding
        system_tokens = count_text_tokens(message_text(system), encoding) if system is not None else 0
        sent, choice = self.choose(tools, system_tokens)
        return request if choice.mode == "full" else request.override(tools=sent)
