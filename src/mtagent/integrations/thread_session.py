"""One LangGraph thread ↔ one mtagent session: its transcript, artifact store and bookkeeping.

A LangChain agent keeps its conversation in a checkpointer keyed by ``thread_id``; mtagent keeps
the truth in an append-only JSONL transcript keyed by a session id. This module ties the two so
``mtagent sessions show <id>`` and ``mtagent replay`` work on agents built with LangChain:

* the session id is the thread id when that is a valid file name, else a sanitised form of it
  with a short hash (so two thread ids never share a transcript);
* the session is opened by :func:`~mtagent.context.opener.open_engine_session`, like every other
  front end's: one redacting, recall-indexing, audited sink (secret values from the environment,
  the settings and the caller); reopening an existing transcript (a new process resuming the
  thread) reads back which message ids are already recorded and which tool calls had started, so
  the engine session writes nothing twice and runs no tool twice.

Nothing here knows about LangChain's middleware API; :mod:`mtagent.integrations.langchain` and
:mod:`mtagent.integrations.graph_hook` are the two users.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtagent.config import Settings
from mtagent.context.compaction.summarize import Summarizer
from mtagent.context.opener import OpenedSession, open_engine_session
from mtagent.events import EventBus
from mtagent.redaction import collect_secrets
from mtagent.session.store import open_store

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
THREAD_PREFIX = "lc-"


def session_id_for_thread(thread_id: str) -> str:
    """A transcript-safe session id for a LangGraph ``thread_id`` (the id itself when it is safe)."""
    if _SESSION_ID_RE.match(thread_id) and ".." not in thread_id:
        return thread_id
    digest = hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:10]
    stem = _UNSAFE.sub("-", thread_id).strip("-.")[:60]
    return f"{THREAD_PREFIX}{stem}-{digest}" if stem else f"{THREAD_PREFIX}{digest}"


def thread_id_of(runtime: Any = None) -> str | None:
    """The ``thread_id`` of the running graph, from a node runtime, a tool runtime or the config."""
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    if thread:
        return str(thread)
    config = getattr(runtime, "config", None)
    if isinstance(config, dict):
        thread = (config.get("configurable") or {}).get("thread_id")
        if thread:
            return str(thread)
    try:
        from langgraph.config import get_config

        thread = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:
        return None
    return str(thread) if thread else None


def open_thread_session(project_root: str | os.PathLike[str], session_id: str, settings: Settings, *,
                        model_name: str | None = None, events: EventBus | None = None, secrets: Sequence[str] = (),
                        store: Any = None, summarizer: Summarizer | None = None,
                        summarizer_model: Any = None) -> OpenedSession:
    """Open (or resume) a thread's session in ``store`` (default: the one ``settings`` names), by the one
    opener. Secrets: ``secrets``, what ``settings`` names, and the environment's."""
    return open_engine_session(
        store if store is not None else open_store(settings), Path(project_root), settings, session_id=session_id,
        resume=True, model_name=model_name or settings.agent.model, model=summarizer_model, summarizer=summarizer,
        secrets=collect_secrets(None, secrets, settings=settings), events=events, source="langchain-middleware")
