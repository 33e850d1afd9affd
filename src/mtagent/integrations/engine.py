"""The engine session of each thread: how the LangChain adapters get an :class:`EngineSession`.

:class:`ThreadSessions` opens (or resumes) one mtagent session per LangGraph thread through the
one opener (:func:`~mtagent.context.opener.open_engine_session`, as the CLI does), so the
middleware (:mod:`mtagent.integrations.langchain`) and the graph hook
(:mod:`mtagent.integrations.graph_hook`) are thin adapters that only translate LangChain's request
and state shapes.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.utils.function_calling import convert_to_openai_tool

from mtagent.config import Settings, load_settings
from mtagent.context.compaction.summarize import Summarizer
from mtagent.context.opener import OpenedSession
from mtagent.context.toolset.schemas import schema_tokens
from mtagent.events import EventBus
from mtagent.integrations.thread_session import open_thread_session, session_id_for_thread, thread_id_of
from mtagent.session.schema import new_session_id
from mtagent.session.store import open_store


class ToolsTokens:
    """Tokens of a request's tool schemas (they count against the window too), counted once per set of
    tool names — as the catalog counts them (:func:`~mtagent.context.toolset.schemas.schema_tokens`, in
    the configured encoding), so ``mtagent tools list`` and the middleware agree."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._known: dict[tuple[str, ...], int] = {}

    def __call__(self, tools: Sequence[Any]) -> int:
        key = tuple(sorted(json.dumps(t, sort_keys=True, default=str) if isinstance(t, dict)  # a schema as sent
                           else str(getattr(t, "name", None) or t) for t in tools))
        if key not in self._known:
            self._known[key] = schema_tokens([_schema(t) for t in tools], self.encoding)
        return self._known[key]


def _schema(tool: Any) -> Any:
    try:
        return tool if isinstance(tool, dict) else convert_to_openai_tool(tool)
    except Exception:  # a provider-native tool spec we cannot render: count its repr
        return {"tool": repr(tool)}


class ThreadSessions:
    """The open sessions of one integration object, one per thread, each with its engine.

    Without a ``thread_id`` (no checkpointer) every call of this object shares one new session.
    """

    def __init__(self, *, settings: Settings | None = None, token_limit: int | None = None,
                 project_root: str | os.PathLike[str] | None = None, session_id: str | None = None,
                 summarizer_model: BaseChatModel | None = None, summarizer: Summarizer | None = None,
                 events: EventBus | None = None, secrets: Sequence[str] = (), store: Any = None) -> None:
        self.project_root = Path(project_root) if project_root is not None else Path.cwd()
        settings = settings or load_settings(self.project_root)  # the CLI's: files + MTAGENT_* environment
        self.settings = settings if token_limit is None else settings.with_token_limit(token_limit)
        self._owns_store = store is None
        self.store = store if store is not None else open_store(self.settings)  # files by default
        self.session_id = session_id
        self.summarizer_model = summarizer_model
        self.summarizer = summarizer
        self.events = events or EventBus()
        self.secrets = tuple(secrets)
        self.tools_tokens = ToolsTokens(self.settings.context.encoding)
        self._open: dict[str, OpenedSession] = {}
        self._default: str | None = None
        self._lock = threading.Lock()

    def key(self, runtime: Any = None) -> str:
        if self.session_id:
            return self.session_id
        thread = thread_id_of(runtime)
        if thread:
            return session_id_for_thread(thread)
        with self._lock:
            if self._default is None:
                self._default = new_session_id()
            return self._default

    def get(self, runtime: Any = None, *, model_name: str | None = None) -> OpenedSession:
        """The session of the running thread, opened (or resumed) on first use."""
        key = self.key(runtime)
        with self._lock:
            found = self._open.get(key)
            if found is None:
                found = open_thread_session(self.project_root, key, self.settings, model_name=model_name,
                                            events=self.events, secrets=self.secrets, store=self.store,
                                            summarizer=self.summarizer, summarizer_model=self.summarizer_model)
                self._open[key] = found
            return found

    def for_thread(self, thread_id: str) -> OpenedSession | None:
        return self._open.get(self.session_id or session_id_for_thread(thread_id))

    def close(self) -> None:
        """Flush and close every transcript (releasing their locks)."""
        with self._lock:
            sessions, self._open = list(self._open.values()), {}
        for session in sessions:
            session.close()
        if self._owns_store:
            self.store.close()
            self._owns_store = False
