"""mtagent's context engine — the library's front door.

Everything a library user needs is importable from here; nothing else in ``mtagent`` has to be
imported to use the engine with langchain-core messages (whose types are re-exported too)::

    from mtagent.context import HumanMessage, MemorySink, build_engine_session

    engine = build_engine_session(sink=MemorySink())
    call = engine.call_model([HumanMessage("hi")], my_model.invoke)

The layout shows the pipeline: the per-call core at this level (``window`` → ``meter``,
``clearing``, ``plan_builder``; ``tokens``, ``budget``, ``invariants``, ``boundary``, ``view``), the
stages in subpackages (``tool_results/``, ``compaction/``, ``session_memory/``, ``static/``,
``recall/``), and :class:`EngineSession` (``engine_session``) as the one object both front ends
call. Names load on first use (PEP 562), so importing a submodule never drags in the whole engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # the engine session and how to build one
    "EngineSession": "mtagent.context.engine_session",
    "ModelCall": "mtagent.context.engine_session",
    "ToolGuard": "mtagent.context.engine_session",
    "without_stale_usage": "mtagent.context.engine_session",
    "build_engine_session": "mtagent.context.opener",
    "open_engine_session": "mtagent.context.opener",
    # the per-call pipeline
    "ContextWindowManager": "mtagent.context.window",
    "CallView": "mtagent.context.window",
    "SessionMemory": "mtagent.context.window",
    "ContextMeter": "mtagent.context.meter",
    "ContextPlan": "mtagent.context.plan",
    "Bucket": "mtagent.context.budget",
    "BudgetBuckets": "mtagent.context.budget",
    "auto_compact_threshold": "mtagent.config",
    "MessageTokenCounter": "mtagent.context.tokens",
    "count_text_tokens": "mtagent.context.tokens",
    "message_text": "mtagent.context.tokens",
    "validate_view": "mtagent.context.invariants",
    "find_safe_split_index": "mtagent.context.invariants",
    "InvalidView": "mtagent.context.invariants",
    "is_summary_message": "mtagent.context.boundary",
    "build_resume_view": "mtagent.context.view",
    "load_session": "mtagent.context.view",
    # model errors
    "ErrorKind": "mtagent.context.model_errors",
    "classify": "mtagent.context.model_errors",
    "is_context_length_error": "mtagent.context.model_errors",
    # the stages
    "ToolResultBudgeter": "mtagent.context.tool_results.budgeter",
    "ToolResultPolicy": "mtagent.context.tool_results.budgeter",
    "CompactionOptions": "mtagent.context.compaction.compactor",
    "CompactionResult": "mtagent.context.compaction.compactor",
    "compact": "mtagent.context.compaction.compactor",
    "compact_from": "mtagent.context.compaction.compactor",
    "Summarizer": "mtagent.context.compaction.summarize",
    "ExtractiveSummarizer": "mtagent.context.compaction.summarize",
    "LLMSummarizer": "mtagent.context.compaction.summarize",
    "SessionMemoryManager": "mtagent.context.session_memory.manager",
    # the records' destination, settings and secrets (from the layers below)
    "MemorySink": "mtagent.session.transcript",
    "TranscriptWriter": "mtagent.session.transcript",
    "ArtifactStore": "mtagent.session.artifacts",
    "Settings": "mtagent.config",
    "Redactor": "mtagent.redaction",
    "EventBus": "mtagent.events",
    # the message types the engine speaks (langchain-core)
    "AIMessage": "langchain_core.messages",
    "BaseMessage": "langchain_core.messages",
    "HumanMessage": "langchain_core.messages",
    "SystemMessage": "langchain_core.messages",
    "ToolMessage": "langchain_core.messages",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mtagent.context' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

    from mtagent.config import Settings, auto_compact_threshold
    from mtagent.context.opener import build_engine_session, open_engine_session
    from mtagent.context.boundary import is_summary_message
    from mtagent.context.budget import Bucket, BudgetBuckets
    from mtagent.context.compaction.compactor import CompactionOptions, CompactionResult, compact, compact_from
    from mtagent.context.compaction.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
    from mtagent.context.engine_session import EngineSession, ModelCall, ToolGuard, without_stale_usage
    from mtagent.context.invariants import InvalidView, find_safe_split_index, validate_view
    from mtagent.context.meter import ContextMeter
    from mtagent.context.model_errors import ErrorKind, classify, is_context_length_error
    from mtagent.context.plan import ContextPlan
    from mtagent.context.session_memory.manager import SessionMemoryManager
    from mtagent.context.tokens import MessageTokenCounter, count_text_tokens, message_text
    from mtagent.context.tool_results.budgeter import ToolResultBudgeter, ToolResultPolicy
    from mtagent.context.view import build_resume_view, load_session
    from mtagent.context.window import CallView, ContextWindowManager, SessionMemory
    from mtagent.events import EventBus
    from mtagent.redaction import Redactor
    from mtagent.session.artifacts import ArtifactStore
    from mtagent.session.transcript import MemorySink, TranscriptWriter
