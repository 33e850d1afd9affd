"""``AgentSession``: the one object a front end (CLI, REPL, tests, the demo) drives.

::

    with AgentSession.create(cwd, model="openai:gpt-4o-mini") as session:
        result = session.run_turn("add a --verbose flag", approver=ask_user)
        print(result.reply)

    session = AgentSession.resume(None, cwd)          # the latest session of this project
    session.run_turn("continue")                      # summary + recent tail, as it was

A session owns the transcript writer (the truth), the live history, the context engine, the
tools and a LangGraph graph checkpointed in ``<artifacts>/checkpoints.sqlite``. A turn that
needs the user's approval either calls ``approver(requests)`` or returns
``status="approval_required"``; :meth:`AgentSession.resume_approval` continues it later — even
in a new process after :meth:`AgentSession.resume`. Ctrl-C during a turn returns
``status="interrupted"`` with everything recorded, and the session stays usable.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from mtagent import paths
from mtagent.agent import prompts, subagents
from mtagent.agent.approval import ApprovalPolicy
from mtagent.agent.graph import APPROVAL_KIND, AgentRuntime, build_graph
from mtagent.agent.opener import ToolsSpec, open_tools
from mtagent.agent.models import WindowChoice, model_window
from mtagent.agent.session_open import load_resumed, resolve_model, settle_resumed
from mtagent.redaction import redact_messages
from mtagent.agent.state import Conversation, initial_state
from mtagent.agent.turns import (  # noqa: F401 - re-exported: front ends import them from here
    ApprovalRequest, Approver, TurnResult, drive_turn,
)
from mtagent.agent.storage import open_session_storage
from mtagent.config import Settings, load_settings
from mtagent.context.compaction.compactor import CompactionResult
from mtagent.context.requested_compaction import manual_compact, partial_compact
from mtagent.context.opener import OpenedSession, open_engine_session
from mtagent.context.static.memory_extract import MemoryExtractor
from mtagent.context.plan import ContextPlan
from mtagent.errors import SessionNotFound
from mtagent.events import EventBus
from mtagent.session import schema
from mtagent.session.store import shared_store
from mtagent.tools import ReadState, sandbox


class AgentSession:
    """See the module docstring. Build with :meth:`create` or :meth:`resume`."""

    def __init__(self, *, opened: OpenedSession, model: BaseChatModel, model_name: str,
                 window: WindowChoice, history: list[BaseMessage], tools: ToolsSpec,
                 approval: str, on_token: Callable[[str], None] | None,
                 summarizer_model: BaseChatModel | None, child: subagents.ChildSpec | None = None) -> None:
        self.opened = opened
        self.project_root = project_root = opened.project_root
        self.session_id = opened.session_id
        self.model_name = model_name
        self.events = opened.events
        self.stats = opened.stats
        self.window, self.window_source, self.window_warnings = window.tokens, window.source, list(window.warnings)
        self.settings = opened.settings
        self.redactor = opened.redactor
        self.sink = opened.sink  # redacted, indexed for recall, audited
        self.artifacts = opened.artifacts
        self._db = open_session_storage(self.settings, opened.artifacts.root)  # the checkpoints beside the artifacts
        self.policy = child.policy if child is not None else ApprovalPolicy.from_rules(
            self.settings.agent.approval, approval, sandboxed=sandbox.status(self.settings).active)
        self.resume_warnings: list[str] = []
        self.turn_count = sum(1 for m in history if isinstance(m, HumanMessage))
        self.subagents = subagents.SubagentRunner(self, tools, model, child)  # the task tool and its children
        self.parts = parts = open_tools(opened, tools, window=self.window, host=self.subagents.hosted_tools)
        self.window_manager = opened.window  # the context window manager (compaction, plans)
        self.tools = parts.runnable  # by name; an MCP server's tools added later join it
        self.static = opened.system.static
        self.schema_choice = parts.toolset.catalog.schema_choice
        self.conversation = Conversation(guard=opened.engine.recorder.guard)  # one answered set: the engine's
        self.conversation.replace(redact_messages(self.redactor, history))  # today's secrets, on resume too
        self.runtime = AgentRuntime(
            model=model, model_name=model_name, engine=opened.engine, tools=self.tools, policy=self.policy,
            conversation=self.conversation, settings=self.settings, on_token=on_token,
            secrets=self.redactor.secrets, system=opened.system, toolset=parts.toolset,
            ready_result=self.subagents.ready_result)  # Ctrl-C keeps a finished sibling's report
        opened.system.touch(history)
        # End-of-turn memory extraction (memory.auto_extract): the compaction model when set, else the main one.
        self.memory_extractor = (MemoryExtractor(summarizer_model or model, project_root, self.settings)
                                 if self.settings.memory.auto_extract else None)
        self.graph = build_graph(self.runtime, self._db.checkpointer)  # SQLite beside the artifacts, or PostgreSQL
        self.graph_config = {"configurable": {"thread_id": f"{self._db.thread_prefix}{self.session_id}"}}

    # construction ------------------------------------------------------------------------
    @classmethod
    def open(cls, root: Path, session_id: str, settings: Settings, model: Any, model_name: str, *,
             secrets: Sequence[str], summarizer_model: BaseChatModel | None, tools: ToolsSpec,
             approval: str, events: EventBus | None, on_token: Callable[[str], None] | None,
             resume: bool | Sequence[dict[str, Any]] = False, history: Sequence[BaseMessage] = (),
             child: subagents.ChildSpec | None = None) -> AgentSession:
        """Open the session through the one opener (:func:`open_engine_session`, then :func:`open_tools`),
        in this model's window, and wrap it. ``child``: a subagent child's link, role, tools and policy."""
        window = model_window(settings, model_name, model)
        settings = settings.with_token_limit(window.tokens)
        opened = open_engine_session(
            shared_store(settings), root, settings, session_id=session_id, resume=resume,
            model_name=model_name, model=summarizer_model, main_model=summarizer_model is model, secrets=secrets,
            events=events, read_state=ReadState(), parent=child.link if child else None,
            role=child.role if child else None, rules=child.rules if child else True)
        try:
            return cls(opened=opened, model=model, model_name=model_name, window=window, history=list(history),
                       tools=child.tools if child else tools, approval=approval, on_token=on_token,
                       summarizer_model=summarizer_model, child=child)
        except BaseException:
            opened.close()
            raise

    @classmethod
    def create(cls, project_root: str | os.PathLike[str] = ".", *, model: str | BaseChatModel | None = None,
               settings: Settings | None = None, base_url: str | None = None, api_key: str | None = None,
               approval: str = "ask", tools: ToolsSpec = None, session_id: str | None = None,
               events: EventBus | None = None, on_token: Callable[[str], None] | None = None,
               environ: dict[str, str] | None = None) -> AgentSession:
        """A new session in ``project_root``; writes its ``session_start`` record."""
        root = Path(project_root).resolve()
        settings = settings or load_settings(root)
        chat, name, secrets, summarizer = resolve_model(model, settings, base_url, api_key, environ)
        sid = paths.validate_session_id(session_id or schema.new_session_id())
        return cls.open(root, sid, settings, chat, name, secrets=secrets, summarizer_model=summarizer, tools=tools,
                        approval=approval, events=events, on_token=on_token)

    @classmethod
    def resume(cls, session_id: str | None = None, project_root: str | os.PathLike[str] = ".", *,
               model: str | BaseChatModel | None = None, settings: Settings | None = None,
               base_url: str | None = None, api_key: str | None = None, approval: str = "ask",
               tools: ToolsSpec = None, events: EventBus | None = None,
               on_token: Callable[[str], None] | None = None, environ: dict[str, str] | None = None,
               skip_corrupt: bool = False) -> AgentSession:
        """Continue a session (``None`` = the latest of this project): summary + recent tail."""
        root = Path(project_root).resolve()
        settings = settings or load_settings(root)
        resumed, records, recorded, history = load_resumed(settings, root, session_id, model, skip_corrupt=skip_corrupt)
        chat, name, secrets, summarizer = resolve_model(model or recorded, settings, base_url, api_key, environ)
        session = cls.open(root, resumed.session_id, settings, chat, name, secrets=secrets, summarizer_model=summarizer,
                           tools=tools, approval=approval, events=events, on_token=on_token, resume=records,
                           history=history)
        settle_resumed(session, resumed, records)
        return session

    # the turn ----------------------------------------------------------------------------
    @property
    def history(self) -> list[BaseMessage]:
        """The persistent history the engine plans from (summary + messages since the boundary)."""
        return list(self.conversation.messages)

    @property
    def pending_approval(self) -> list[ApprovalRequest]:
        """Tool calls of a paused turn that wait for :meth:`resume_approval`."""
        snapshot = self.graph.get_state(self.graph_config)
        requests: list[ApprovalRequest] = []
        for item in snapshot.interrupts:
            value = item.value if isinstance(item.value, dict) else {}
            if value.get("kind") == APPROVAL_KIND:
                requests += [ApprovalRequest(r["tool_call_id"], r["name"], dict(r["args"]), r["rule"])
                             for r in value.get("requests", [])]
        return requests

    def run_turn(self, text: str, *, approver: Approver | None = None, author: str | None = None) -> TurnResult:
        """Add the user's message and run the loop until the model answers without tool calls.

        ``author``: who wrote ``text`` when it is not the user (a subagent's brief is the parent
        model's: ``"parent_model"``); recorded so recall never gives it the user's authority."""
        self._abandon_unanswered_calls()
        message = HumanMessage(content=self.redactor.text(text), id=schema.new_message_id())  # a pasted secret too
        if author is not None:
            message.response_metadata = {"mtagent": {"author": author}}
        self.runtime.add(message)
        self.turn_count += 1
        return drive_turn(self, initial_state(self.turn_count), approver)

    def _abandon_unanswered_calls(self) -> None:
        """The user moved on (a new message) while tool calls waited: answer them as not run."""
        for call in self.conversation.unanswered_calls():
            self.runtime.add(ToolMessage(
                content=prompts.denied_result(call["name"], call["args"], "the user sent a new message instead"),
                tool_call_id=call["id"], name=call["name"], status="error", id=schema.new_message_id()))

    def resume_approval(self, answer: Any, *, approver: Approver | None = None) -> TurnResult:
        """Continue a paused turn. ``answer``: ``"allow"``/``"deny"`` for all, or ``{call_id: decision}``
        where a decision is a string or ``{"decision": ..., "reason": ..., "remember": bool}``."""
        if not self.pending_approval:
            raise SessionNotFound(f"session {self.session_id} has no tool call waiting for approval")
        self.policy.remember_answers(self.pending_approval, answer)
        return drive_turn(self, Command(resume=answer), approver)

    # compaction and the engine's state --------------------------------------------------
    def compact(self, instructions: str | None = None, *, from_message_id: str | None = None) -> CompactionResult:
        """``/compact [instructions]``: session memory first without instructions, else a full compact
        with them in the prompt; ``from_message_id`` (``/compact from <id>``): summarize what precedes
        that message's round, keep the rest. The new history is adopted; the boundary is recorded."""
        self._abandon_unanswered_calls()
        system, tools_tokens = self.opened.system.messages(), self.opened.system.schema_tokens()
        if from_message_id:
            result = partial_compact(self.window_manager, self.history, from_message_id, instructions=instructions,
                                     system=system, tools_tokens=tools_tokens)
        else:
            result = manual_compact(self.window_manager, self.history, instructions, system=system,
                                    tools_tokens=tools_tokens)
        self.parts.toolset.caught_up(self.stats.compactions)  # its loads carried past the boundary now
        self.conversation.replace(result.new_history())
        self.opened.end_turn()
        return result

    @property
    def last_plan(self) -> ContextPlan | None:
        """The plan of the last model call (``/context explain``; ``.to_record()`` for a dict)."""
        return self.window_manager.last_plan

    @property
    def session_memory(self) -> Any:
        """The session-memory notes manager (None when ``session_memory.enabled`` is off)."""
        return self.opened.session_memory

    @property
    def threshold(self) -> int:
        """Tokens at which auto compaction fires for this session (its window and fixed part)."""
        return self.opened.threshold

    # lifecycle ---------------------------------------------------------------------------
    @property
    def transcript_path(self) -> Path:
        return self.opened.transcript_path

    def close(self) -> None:
        self.subagents.close()
        self.parts.close()  # every MCP server process stops with the session
        self.opened.close()  # the writer, then what the recall index still holds
        self._db.close()

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
