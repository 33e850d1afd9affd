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
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from mtagent import paths
from mtagent.agent import prompts, subagents
from mtagent.agent.approval import ApprovalPolicy
from mtagent.agent.graph import APPROVAL_KIND, AgentRuntime, build_graph
from mtagent.agent.opener import ToolsSpec, open_tools
from mtagent.agent.subagents.report import settle_after_crash
from mtagent.agent.models import create_chat_model, model_window
from mtagent.redaction import collect_secrets, redact_messages
from mtagent.agent.state import Conversation, initial_state
from mtagent.agent.turns import (  # noqa: F401 - re-exported: front ends import them from here
    ApprovalRequest, Approver, TurnResult, drive_turn,
)
from mtagent.agent.summary_model import EXTRACTIVE, summary_model
from mtagent.agent import storage as agent_storage
from mtagent.agent.storage import open_session_storage
from mtagent.config import Settings, load_settings
from mtagent.context.compaction.compactor import CompactionResult
from mtagent.context.opener import OpenedSession, open_engine_session
from mtagent.context.static.memory_extract import MemoryExtractor
from mtagent.context.plan import ContextPlan
from mtagent.context.session_memory.manager import session_memory_for_resume
from mtagent.context.view import ResumedSession, build_resume_view, load_from_store
from mtagent.errors import ModelError, SessionNotFound
from mtagent.events import EventBus
from mtagent.session import schema
from mtagent.session.store import shared_store
from mtagent.tools import ReadState, sandbox

# Model names recorded by scripted policies (the demo): not something a resume can reconnect to.
SCRIPTED_PREFIX = "scripted"


class AgentSession:
    """See the module docstring. Build with :meth:`create` or :meth:`resume`."""

    def __init__(self, *, opened: OpenedSession, model: BaseChatModel, model_name: str,
                 window: tuple[int, str, list[str]], history: list[BaseMessage], tools: ToolsSpec,
                 approval: str, on_token: Callable[[str], None] | None,
                 summarizer_model: BaseChatModel | None, child: subagents.ChildSpec | None = None) -> None:
        self.opened = opened
        self.project_root = project_root = opened.project_root
        self.session_id = opened.session_id
        self.model_name = model_name
        self.events = opened.events
        self.stats = opened.stats
        self.window, self.window_source, self.window_warnings = window
        self.settings = opened.settings
        self.redactor = opened.redactor
        self.sink = opened.sink  # redacted, indexed for recall, audited
        self.artifacts = opened.artifacts
        self._db = open_session_storage(self.settings, opened.artifacts.root)  # the checkpoints beside the artifacts
        self.policy = child.policy if child is not None else ApprovalPolicy.from_rules(
            self.settings.agent.approval, approval, sandboxed=sandbox.status(self.settings).active)
        self.resume_warnings: list[str] = []
        self.turn_count = sum(1 for m in history if isinstance(m, HumanMessage))
        self.subagents = subagents.attach(self, tools, model, child)  # the task tool and its children
        self.parts = parts = open_tools(opened, tools, window=self.window, host=self.subagents.hosted_tools)
        self.window_manager = opened.window  # the context window manager (compaction, plans)
        self.tools = parts.runnable  # by name; an MCP server's tools added later join it
        self.static = opened.system.static
        self.schema_choice = parts.toolset.catalog.schema_choice
        self.conversation = Conversation(guard=opened.engine.guard)  # one answered set: the engine's
        self.conversation.replace(redact_messages(self.redactor, history))  # today's secrets, on resume too
        self.runtime = AgentRuntime(
            model=model, model_name=model_name, engine=opened.engine, tools=self.tools, policy=self.policy,
            conversation=self.conversation, settings=self.settings, events=self.events, stats=self.stats,
            on_token=on_token, secrets=self.redactor.secrets, system=opened.system, toolset=parts.toolset)
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
        window = model_window(settings, model_name, model).parts()
        settings = settings.with_token_limit(window[0])
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
        chat, name, secrets, summarizer = _resolve_model(model, settings, base_url, api_key, environ)
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
        sid = session_id or next(reversed(agent_storage.session_ids(settings, root)), None)
        if sid is None:
            raise SessionNotFound(f"no sessions yet for project {root}; start one with `mtagent`")
        resumed, records = load_from_store(shared_store(settings), paths.project_hash(root), sid,
                                            skip_corrupt=skip_corrupt)
        _add_session_memory(resumed, records, settings)
        recorded = (resumed.session_start or {}).get("model")
        if recorded and str(recorded).startswith(SCRIPTED_PREFIX):
            if model is None and not settings.agent.model:
                raise ModelError(
                    f"session {sid} was driven by the scripted demo policy, not a model; continue it with a "
                    "real one: --model openai:gpt-4o-mini (with OPENAI_API_KEY) or --model ollama:<name>"
                )
            recorded = None
        chat, name, secrets, summarizer = _resolve_model(model or recorded, settings, base_url, api_key, environ)
        session = cls.open(root, sid, settings, chat, name, secrets=secrets, summarizer_model=summarizer,
                           tools=tools, approval=approval, events=events, on_token=on_token, resume=records,
                           history=_without_stale_usage(resumed.messages, records))
        session.resume_warnings = list(resumed.warnings)
        settle_after_crash(resumed.view.interrupted_messages(), records, sink=session.sink,
                           max_tokens=settings.subagents.report_max_tokens)
        session._settle_interrupted_calls(resumed.view.interrupted_messages())
        session.parts.opened.engine.known(session.conversation.messages)
        return session

    def _settle_interrupted_calls(self, synthetic: list[ToolMessage]) -> None:
        """Tool calls the transcript left without a result (the view filled them in).

        Calls of a round paused for approval stay open — :meth:`resume_approval` runs or answers
        them. Any other was cut off by a crash: its synthetic "interrupted" result is written to the transcript,
        so the file and the history agree, and the call is never run again.
        """
        waiting: set[str] = set()
        if self.pending_approval:
            waiting = {c["id"] for c in (self.graph.get_state(self.graph_config).values or {}).get("pending", [])}
        drop = {m.id for m in synthetic if m.tool_call_id in waiting}
        if drop:
            history = [m for m in self.conversation.messages if m.id not in drop]
            self.conversation = Conversation(guard=self.conversation.guard)
            self.conversation.replace(history)
            self.runtime.conversation = self.conversation
        for message in synthetic:
            if message.tool_call_id not in waiting:
                self.sink.append(schema.message_to_record(message))

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
        self.remember(answer)
        return drive_turn(self, Command(resume=answer), approver)

    def remember(self, answer: Any) -> None:
        """``remember: true`` on an allow turns it into a session rule (the exact shell command)."""
        if not isinstance(answer, dict):
            return
        for request in self.pending_approval:
            decision = answer.get(request.tool_call_id)
            if isinstance(decision, dict) and decision.get("remember") and decision.get("decision") == "allow":
                self.policy.remember(request.tool, request.args)

    # engine passthroughs ----------------------------------------------------------------
    def compact(self, instructions: str | None = None, *, from_message_id: str | None = None) -> CompactionResult:
        """``/compact [instructions]``: session memory first without instructions, else a full
        compact with them in the prompt. The new history is adopted; the boundary is recorded.
        ``from_message_id`` is :meth:`compact_from` (``/compact from <id>``)."""
        if from_message_id:
            return self.compact_from(from_message_id, instructions=instructions)
        return self._adopt(lambda system, tools_tokens: self.window_manager.compact(
            self.history, trigger="manual", instructions=instructions, system=system, tools_tokens=tools_tokens))

    def compact_from(self, message_id: str, *, direction: str = "up_to",
                     instructions: str | None = None) -> CompactionResult:
        """``/compact from <id>``: summarize what precedes the message's round, keep the rest."""
        return self._adopt(lambda system, tools_tokens: self.window_manager.compact_from(
            self.history, message_id, direction=direction, instructions=instructions, system=system,
            tools_tokens=tools_tokens))

    def _adopt(self, run: Callable[[list[BaseMessage], int], CompactionResult]) -> CompactionResult:
        self._abandon_unanswered_calls()
        result = run(self.opened.system.messages(), self.opened.system.schema_tokens())
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


def _add_session_memory(resumed: ResumedSession, records: Sequence[dict[str, Any]], settings: Settings) -> None:
    """Put the session-memory notes beside the last summary when they say more than it does.

    The notes cover what happened after the last boundary too; a session-memory compaction whose
    notes did not change since already *is* the summary, so they are not sent twice
    (:func:`~mtagent.context.session_memory.manager.session_memory_for_resume` decides).
    """
    if not settings.session_memory.enabled:
        return
    notes = session_memory_for_resume(resumed.artifacts.session_memory_path, records)
    if notes:
        resumed.view = build_resume_view(records, session_memory=notes)


def _without_stale_usage(history: Sequence[BaseMessage], records: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """The resumed history, minus the usage of assistant messages kept from before the last boundary.

    Their usage describes the longer view before that compaction; anchoring the first estimate on
    it would compact again at once. Messages written after the boundary keep theirs (the transcript
    always keeps the original).
    """
    last = max((i for i, r in enumerate(records) if r.get("type") == schema.COMPACT_BOUNDARY), default=None)
    if last is None:
        return list(history)
    fresh = {r.get("id") for r in records[last + 1:] if r.get("type") == schema.TRANSCRIPT_MESSAGE}
    return [m.model_copy(update={"usage_metadata": None})
            if isinstance(m, AIMessage) and m.usage_metadata and m.id not in fresh else m
            for m in history]


def _resolve_model(model: str | BaseChatModel | None, settings: Settings, base_url: str | None,
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
