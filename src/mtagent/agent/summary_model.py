"""Which model writes hand-off summaries and session-memory notes.

A user who steers ``/compact <instructions>`` expects a model to read them: extractive summaries
cannot follow instructions. So the session's own model writes summaries by default;
``agent.compact_model`` names another (usually cheaper) one; ``agent.compact_model = "extractive"``
chooses no model call. A scripted or fake model (tests, the demo, ``--model scripted:FILE``)
replays answers it was given, so it cannot summarize: those sessions stay extractive — unless it
says it ``summarizes`` (the context-test model, a summarizer told the task).
"""

from __future__ import annotations

from typing import Any

EXTRACTIVE = "extractive"


def is_scripted(model: Any) -> bool:
    """A model that replays a script (mtagent's scripted model, LangChain's fake chat models)."""
    from mtagent.agent.scripted import ScriptedChatModel

    if getattr(model, "summarizes", False) is True:  # a fake that writes hand-offs itself (agent/context_model)
        return False
    if isinstance(model, ScriptedChatModel):
        return True
    kind = type(model)
    return kind.__module__.startswith("langchain_core.language_models.fake") or kind.__name__.startswith(
        ("Fake", "GenericFake"))


def summary_model(chat: Any, configured: Any | None, spec: str | None) -> Any | None:
    """The summarizing model: ``configured`` (from ``agent.compact_model``), else the session's
    ``chat`` model; None (extractive) when chosen or when ``chat`` is scripted."""
    if spec == EXTRACTIVE:
        return None
    if configured is not None:
        return configured
    return None if chat is None or is_scripted(chat) else chat
