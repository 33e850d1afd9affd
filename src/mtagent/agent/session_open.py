"""What a session does before its first turn: the model it binds (``create``, ``resume``), the
history a resume continues from, and the tool calls a crash left open (settled once, at resume).

:class:`~mtagent.agent.session.AgentSession` calls these; none of it runs in a turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from mtagent import paths
from mtagent.agent import storage as agent_storage
from mtagent.agent.models import create_chat_model
from mtagent.agent.subagents.report import settle_after_crash
from mtagent.agent.summary_model import EXTRACTIVE, summary_model
from mtagent.config import Settings
from mtagent.context.engine_session import without_stale_usage
from mtagent.context.session_memory.manager import session_memory_for_resume
from mtagent.context.view import ResumedSession, build_resume_view, load_from_store
from mtagent.errors import ModelError, SessionNotFound
from mtagent.redaction import collect_secrets
from mtagent.session import schema
from mtagent.session.store import shared_store

# Model names recorded by scripted policies (the demo): not something a resume can reconnect to.
SCRIPTED_PREFIX = "scripted"


def load_resumed(settings: Settings, root: Path, session_id: str | None, model: Any, *, skip_corrupt: bool
                 ) -> tuple[ResumedSession, list[dict[str, Any]], str | None, list[BaseMessage]]:
    """The session to continue (``None``: the latest of this project), the records its view was built
    from, the model it recorded (None for the scripted demo's, which needs ``model`` or a configured one)
    and the history to continue from.

    The session-memory notes go beside the last summary when they say more than it does: they cover
    what happened after the last boundary too, and a session-memory compaction whose notes did not
    change since already *is* the summary (:func:`session_memory_for_resume` decides)."""
    sid = session_id or next(reversed(agent_storage.session_ids(settings, root)), None)
    if sid is None:
        raise SessionNotFound(f"no sessions yet for project {root}; start one with `mtagent`")
    resumed, records = load_from_store(shared_store(settings), paths.project_hash(root), sid,
                                        skip_corrupt=skip_corrupt)
    notes = settings.session_memory.enabled and session_memory_for_resume(resumed.artifacts.session_memory_path,
                                                                           records)
    if notes:
        resumed.view = build_resume_view(records, session_memory=notes)
    recorded = (resumed.session_start or {}).get("model")
    if recorded and str(recorded).startswith(SCRIPTED_PREFIX):
        if model is None and not settings.agent.model:
            raise ModelError(
                f"session {sid} was driven by the scripted demo policy, not a model; continue it with a "
                "real one: --model openai:gpt-4o-mini (with OPENAI_API_KEY) or --model ollama:<name>"
            )
        recorded = None
    return resumed, records, recorded, _without_stale_usage(resumed.messages, records)


def settle_resumed(session: Any, resumed: ResumedSession, records: Sequence[dict[str, Any]]) -> None:
    """Settle a resumed ``session`` (an ``AgentSession``): the tool calls the transcript left without a
    result (the view filled them in) are answered — a ``task`` call whose child finished with its recorded
    report. Calls of a round paused for approval stay open (``resume_approval`` runs or answers them); any
    other was cut off by a crash: its synthetic "interrupted" result is written to the transcript, so the
    file and the history agree, and the call is never run again. Then the engine knows the history."""
    session.resume_warnings = list(resumed.warnings)
    synthetic = resumed.view.interrupted_messages()
    settle_after_crash(synthetic, records, sink=session.sink, max_tokens=session.settings.subagents.report_max_tokens)
    waiting: set[str] = set()
    if session.pending_approval:
        waiting = {c["id"] for c in (session.graph.get_state(session.graph_config).values or {}).get("pending", [])}
    drop = {m.id for m in synthetic if m.tool_call_id in waiting}
    if drop:
        session.conversation.replace([m for m in session.conversation.messages if m.id not in drop])
    for message in synthetic:
        if message.tool_call_id not in waiting:
            session.sink.append(schema.message_to_record(message))
    session.parts.opened.engine.recorder.known(session.conversation.messages)


def _without_stale_usage(history: Sequence[BaseMessage], records: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """The resumed history, minus the usage of assistant messages kept from before the last boundary.

    Their usage describes the longer view before that compaction; anchoring the first estimate on
    it would compact again at once. Messages written after the boundary keep theirs (the transcript
    always keeps the original).
    """
    last = max((i for i, r in enumerate(records) if r.get("type") == schema.COMPACT_BOUNDARY), default=None)
    if last is None:
        return list(history)
    return without_stale_usage(history, keep={r.get("id") for r in records[last + 1:]
                                              if r.get("type") == schema.TRANSCRIPT_MESSAGE})


def resolve_model(model: str | BaseChatModel | None, settings: Settings, base_url: str | None,
                  api_key: str | None, environ: dict[str, str] | None
                  ) -> tuple[BaseChatModel, str, tuple[str, ...], BaseChatModel | None]:
    """The chat model, its display name, the secrets to redact, and the compaction model."""
    secrets = collect_secrets(environ, [api_key], settings=settings)
    spec = settings.agent.compact_model
    summarizer = (create_chat_model(spec, settings=settings, base_url=base_url, api_key=api_key, environ=environ)
                  if spec and spec != EXTRACTIVE else None)
    if isinstance(model, BaseChatModel):
        name = getattr(model, "model_name", None) or type(model).__name__
        return model, str(name), secrets, summary_model(model, summarizer, spec)
    spec_or_default = model or settings.agent.model
    if not spec_or_default:
        raise ModelError(
            "no model configured: pass --model provider:name (e.g. --model openai:gpt-4o-mini with "
            "OPENAI_API_KEY set, or --model ollama:qwen2.5-coder --base-url http://localhost:11434/v1), "
            "set agent.model in ~/.mtagent/config.toml, or try `mtagent demo` which needs no model")
    chat = create_chat_model(spec_or_default, settings=settings, base_url=base_url, api_key=api_key,
                             environ=environ)
    return chat, spec_or_default, secrets, summary_model(chat, summarizer, spec)
