"""Assemble one session's engine: engine session, window manager, session memory, tools, static context.

The agent is a thin user of the engine; this module is the one place that knows how the
parts are wired for a session — the same sink (the session's redacting transcript writer),
event bus and statistics for all of them, the tools' :class:`ReadState` shared with the
compactor (so it re-attaches recently read files), and the summarizer: an LLM one on
``agent.compact_model`` when configured, the extractive one otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool

from mtagent.agent.model_gate import background
from mtagent.config import Settings
from mtagent.context.assembly import build_engine_session
from mtagent.context.compaction.summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Summarizer,
)
from mtagent.context.engine_session import EngineSession
from mtagent.context.session_memory.manager import SessionMemoryManager
from mtagent.context.static.rules import touched_paths
from mtagent.context.static.tiers import RuntimeContext, StaticContext, StaticParts
from mtagent.context.tool_results.budgeter import ToolResultBudgeter
from mtagent.context.window import ContextWindowManager
from mtagent.events import EventBus, SessionStats
from mtagent.redaction import Redactor
from mtagent.session.artifacts import ArtifactStore
from mtagent.tools import ToolContext, ToolSession, default_tools
from mtagent.context.toolset.schemas import SchemaChoice, choose_schemas

ToolsSpec = Sequence[BaseTool] | Callable[[ToolContext], Sequence[BaseTool]] | None


@dataclass
class EngineParts:
    engine: ContextWindowManager
    tools: list[BaseTool]
    static: StaticContext
    tool_context: ToolContext
    budgeter: ToolResultBudgeter
    session_memory: SessionMemoryManager | None
    summarizer: Summarizer
    session: EngineSession


def make_summarizer(settings: Settings, model: BaseChatModel | None) -> Summarizer:
    if model is not None:
        return LLMSummarizer(model, tool_result_chars=settings.tool_results.preview_chars)
    return ExtractiveSummarizer()


@dataclass(slots=True)
class CacheAlignedModel:
    """The main model (main tools bound) writing session-memory notes: ``cache_aligned`` tells the
    updater it may send the main request + one instruction (a prompt-cache hit)."""

    model: Any
    cache_aligned: bool = True

    def invoke(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return self.model.invoke(request, *args, **kwargs)


def share_main_request(summarizer: Summarizer, is_main: bool, bound_model: Any, settings: Settings,
                       memory: SessionMemoryManager | None = None) -> None:
    """When the session's own model writes the hand-offs (and notes), give the summarizer that model
    *with the main tools bound* and mark it cache-aligned: a summary or notes request is then the
    last main request + one instruction, served from the provider's prompt cache
    (``context/compaction/cache_align.py``). Another model (``agent.compact_model``) cannot share
    the main model's cache: left as is."""
    if not (is_main and settings.context.cache_aligned_summaries):
        return
    if isinstance(summarizer, LLMSummarizer):
        summarizer.model = bound_model
        summarizer.cache_aligned = True
    if memory is not None and memory.model is not None:
        memory.model = background(CacheAlignedModel(bound_model))


def build(*, project_root: Path, settings: Settings, sink: Any, events: EventBus, stats: SessionStats,
          artifacts: ArtifactStore, tools: ToolsSpec = None,
          summarizer_model: BaseChatModel | None = None, redactor: Redactor | None = None) -> EngineParts:
    """Wire the engine parts of one session (see the module docstring).

    ``tools``: None for :func:`mtagent.tools.default_tools`; a list to use as is; or a callable
    given the session's :class:`ToolContext` (to add tools to the defaults, as tests do).
    """
    context = ToolContext.create(project_root, ToolSession(artifacts, sink, events, stats), settings)
    if tools is None:
        tool_list = default_tools(project_root, context=context)
    elif callable(tools):
        tool_list = list(tools(context))
    else:
        tool_list = list(tools)
    summarizer = make_summarizer(settings, summarizer_model)
    memory = (SessionMemoryManager(path=artifacts.session_memory_path, settings=settings,
                                   model=background(summarizer_model),  # yields to the main call
                                   sink=sink, events=events)
              if settings.session_memory.enabled else None)
    session = build_engine_session(
        settings, sink=sink, summarizer=summarizer, session_memory=memory, events=events, stats=stats,
        redactor=redactor, budgeter=context.budgeter, read_state=context.read_state, root=project_root,
    )
    engine = session.window
    static = StaticContext(project_root, settings.memory)
    return EngineParts(engine, tool_list, static, context, context.budgeter, memory, summarizer, session)


def static_parts(static: StaticContext, tools: Iterable[Any], project_root: Path, *,
                 list_tools: bool = True) -> StaticParts:
    """This call's system prompt, ``<session_context>`` and the authority conflicts resolved in
    them (re-read, so hand edits apply). ``list_tools=False``: no ``## Tools`` list (compact schemas)."""
    return static.build(list(tools), RuntimeContext(working_directory=str(project_root)), list_tools=list_tools)


def chosen_static_parts(static: StaticContext, tools: Iterable[BaseTool], choice: SchemaChoice,
                        project_root: Path) -> StaticParts:
    """:func:`static_parts` for the schema set a session chose: compact leaves out the tools it does
    not offer and the ``## Tools`` list."""
    if choice.mode == "full":
        return static_parts(static, tools, project_root)
    return static_parts(static, [t for t in tools if t.name in choice.offered], project_root, list_tools=False)


def choose_tool_schemas(parts: EngineParts, settings: Settings, window: int,
                        project_root: Path) -> tuple[list[Any], SchemaChoice]:
    """The tools to bind, full or compact (:mod:`mtagent.context.toolset.schemas`), measured with the
    system prompt each set goes with, as the engine counts it for the window."""
    def system_tokens(tools: Sequence[Any], mode: str) -> int:
        built = static_parts(parts.static, tools, project_root, list_tools=mode == "full")
        return parts.engine.counter.estimate(built.messages)

    agent = settings.agent
    return choose_schemas(parts.tools, window=window, setting=agent.tool_schemas, max_share=agent.tool_schema_max_share,
                          drop=agent.compact_drop_tools, system_tokens=system_tokens)


def touch_paths(static: StaticContext, message: BaseMessage, project_root: Path) -> None:
    """Switch on path-scoped rules for files a new message names (incremental, per message)."""
    static.touch(touched_paths([message], project_root))
