"""The agent loop as a LangGraph ``StateGraph``: reason → approve → tools → reason … → end.

* **reason** calls the model through the engine session
  (:meth:`~mtagent.context.engine_session.EngineSession.call_model`: prepare — microcompact, auto
  compact, plan —, transient retries with backoff, one reactive compact and retry on a
  context-length rejection) with this call's tools (:meth:`AgentRuntime.model_for_call`: what the
  session's catalog offers now, so a ``tool_search`` load shows in the next request; nothing
  re-binds the model), and records the reply at once.
* **approve** decides each requested tool call (:class:`~mtagent.agent.approval.ApprovalPolicy`);
  calls that need the user's yes are put to them through LangGraph's ``interrupt()``. The node
  has no side effects, so re-running it on resume is harmless.
* **tools** runs the approved calls in order; each result is budgeted and recorded as it arrives
  (:meth:`~mtagent.context.engine_session.EngineSession.tool_result`). A call that already has a
  result, or that had started before a crash, is never run again (the engine session's guard).

Ctrl-C (``KeyboardInterrupt``) is not swallowed: the tool node first records what happened to
the call in flight and to the calls that never started, so the history stays a valid
tool-call protocol, then lets it propagate to the session, which leaves the session resumable.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.messages.utils import message_chunk_to_message
from langchain_core.runnables import Runnable
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from mtagent.agent import prompts
from mtagent.agent.approval import ApprovalPolicy, unique_call_ids
from mtagent.agent.tool_args import parse_tool_arguments
from mtagent.agent.state import INVALID_ARGS_KEY, AgentState, Conversation, PendingCall, ToolDecision
from mtagent.config import Settings
from mtagent.context.engine_session import EngineSession
from mtagent.context.opener import SystemContext
from mtagent.context.model_errors import RETRYABLE, classify, to_model_error
from mtagent.errors import CompactionFailed, ModelError
from mtagent.session.schema import new_message_id

APPROVAL_KIND = "tool_approval"


@dataclass
class AgentRuntime:
    """Everything the nodes use that cannot live in a checkpoint (models, files, callbacks).

    ``model``: the chat model, unbound; ``system``: the session's system context — the tools the next
    request carries (:meth:`~mtagent.context.opener.SessionTools.request_tools`) and the path-scoped
    rules each new message may switch on."""

    model: Any
    model_name: str
    engine: EngineSession
    tools: dict[str, Any]
    policy: ApprovalPolicy
    conversation: Conversation
    settings: Settings
    on_token: Callable[[str], None] | None = None
    system: SystemContext | None = None
    toolset: Any = None  # the session's tool catalog: a deferred tool called by name is loaded as it starts
    secrets: tuple[str, ...] = ()
    clock: Callable[[], float] = time.time
    # A result for a call that was not run here but finished elsewhere (a subagent's report after Ctrl-C).
    ready_result: Callable[[PendingCall], tuple[str, str] | None] = lambda call: None
    tools_epoch: int = 0  # executions of the tools node (an interrupt inside it re-runs it)
    tools_round: int = 0  # completed runs of the tools node
    _bound: tuple[tuple[int, ...], Runnable[Any, Any]] | None = None

    def request_tools(self) -> list[Any]:
        """The tools the next request carries (what the session's catalog offers now)."""
        return self.system.tools.request_tools() if self.system is not None else []

    def model_for_call(self) -> Runnable[Any, Any]:
        """The model with this call's tools (the binding is reused while the tool list is the same)."""
        tools = self.request_tools()
        if not tools:
            return self.model
        key = tuple(id(t) for t in tools)
        if self._bound is None or self._bound[0] != key:
            self._bound = (key, self.model.bind_tools(tools))
        return self._bound[1]

    def add(self, message: BaseMessage) -> None:
        """Append to the live history and the transcript (a crash loses only the call in flight)."""
        self.engine.recorder.record(message)
        self._adopt(message)

    def add_result(self, message: ToolMessage) -> ToolMessage:
        """A tool's result: budgeted and recorded by the engine session, then added to the history."""
        final = self.engine.tool_result(message)
        self._adopt(final)
        return final

    def _adopt(self, message: BaseMessage) -> None:
        self.conversation.messages.append(message)
        if self.system is not None:
            self.system.touch([message])


# ── reason ─────────────────────────────────────────────────────────────────────────────


def normalize_reply(message: AIMessage) -> AIMessage:
    """Fold malformed tool calls into ``tool_calls`` (the engine session stamps the reply's id and time).

    A call whose arguments were not JSON arrives in ``invalid_tool_calls``; providers still
    expect an answer to it. Keeping it as a regular call (its raw text under
    :data:`INVALID_ARGS_KEY`) lets the tool node answer it with an error, and keeps every
    engine invariant (tool call ↔ result pairs) about one list.
    """
    calls = [dict(c) for c in message.tool_calls]
    for bad in message.invalid_tool_calls:
        calls.append({
            "name": bad.get("name") or "unknown",
            "args": {INVALID_ARGS_KEY: bad.get("args") or "", "_error": bad.get("error") or ""},
            "id": bad.get("id") or f"call_{new_message_id()[4:16]}",
            "type": "tool_call",
        })
    calls, content = unique_call_ids(calls, message.content) if calls else (calls, message.content)
    return message.model_copy(update={
        "content": content,
        "tool_calls": calls,
        "invalid_tool_calls": [],
        "response_metadata": dict(message.response_metadata or {}),
    })


def _invoke(rt: AgentRuntime, messages: list[BaseMessage]) -> AIMessage:
    model = rt.model_for_call()
    if rt.on_token is None:
        result = model.invoke(messages)
        return result if isinstance(result, AIMessage) else AIMessage(content=str(result))
    acc: AIMessageChunk | None = None
    for chunk in model.stream(messages):
        text = chunk.text
        if text:
            rt.on_token(text)
        acc = chunk if acc is None else acc + chunk
    if acc is None:
        return AIMessage(content="")
    message = message_chunk_to_message(acc)
    if not isinstance(message, AIMessage):
        return AIMessage(content=str(message.content))
    return _strict_streamed_calls(message, acc)


def _strict_streamed_calls(message: AIMessage, acc: AIMessageChunk) -> AIMessage:
    """Streaming parses tool arguments leniently (a cut-off object becomes ``{}``); treat
    arguments that are not complete JSON as malformed, exactly as a non-streamed reply would."""
    raw = {c.get("id"): c.get("args") or "" for c in acc.tool_call_chunks}
    good, bad = [], list(message.invalid_tool_calls)
    for call in message.tool_calls:
        text = raw.get(call.get("id"), "")
        try:
            if text:
                parse_tool_arguments(text)  # raw newlines in strings pass; duplicate keys do not
            good.append(call)
        except ValueError as exc:
            bad.append({"name": call["name"], "args": text, "id": call.get("id"), "error": str(exc),
                        "type": "invalid_tool_call"})
    if len(good) == len(message.tool_calls):
        return message
    return message.model_copy(update={"tool_calls": good, "invalid_tool_calls": bad})


def call_model(rt: AgentRuntime) -> AIMessage:
    """One model call through the engine session; a failure becomes one clear :class:`ModelError`."""
    try:
        call = rt.engine.call_model(list(rt.conversation.messages), lambda sent: _invoke(rt, sent))
    except Exception as exc:
        if isinstance(exc.__cause__, CompactionFailed):
            raise ModelError(
                f"{rt.model_name} rejected the request as too long, and nothing could be compacted "
                f"({exc.__cause__}); start a new session, or check agent.model_windows for this model"
            ) from exc
        kind = classify(exc)
        attempts = rt.settings.agent.max_retries + 1 if kind in RETRYABLE else 1
        raise to_model_error(exc, kind, model=rt.model_name, attempts=attempts, secrets=rt.secrets) from exc
    rt.conversation.replace(call.view.history)
    return call.reply


def make_reason(rt: AgentRuntime) -> Callable[[AgentState], AgentState]:
    def reason(state: AgentState) -> AgentState:
        if state.get("steps", 0) >= rt.settings.agent.max_steps:
            return {"status": "max_steps", "pending": []}
        reply = rt.engine.record_reply(normalize_reply(call_model(rt)), rt.clock())
        rt._adopt(reply)
        pending: list[PendingCall] = [
            {"id": str(c["id"]), "name": c["name"], "args": dict(c.get("args") or {})} for c in reply.tool_calls
        ]
        return {"steps": state.get("steps", 0) + 1, "pending": pending, "decisions": {},
                "status": "running" if pending else "done"}

    return reason


# ── approve ────────────────────────────────────────────────────────────────────────────


def _parse_answer(answer: Any, asked: list[dict[str, Any]]) -> dict[str, ToolDecision]:
    """Read the user's reply: ``"allow"`` / ``"deny"`` for all, or ``{call_id: decision}``.

    A decision may be a string or ``{"decision": ..., "reason": ...}``; a call the user did
    not answer is denied (nothing runs without a yes).
    """
    out: dict[str, ToolDecision] = {}
    for req in asked:
        raw = answer if isinstance(answer, (str, bool)) else (answer or {}).get(req["tool_call_id"])
        reason = None
        if isinstance(raw, dict):
            reason = raw.get("reason")
            raw = raw.get("decision")
        if raw is True or raw in ("allow", "yes", "y", "approve"):
            out[req["tool_call_id"]] = {"decision": "allow", "rule": "approved by the user"}
        else:
            out[req["tool_call_id"]] = {"decision": "deny", "rule": "the user",
                                        "reason": reason or "the user declined it"}
    return out


def make_approve(rt: AgentRuntime) -> Callable[[AgentState], AgentState]:
    def approve(state: AgentState) -> AgentState:
        decisions: dict[str, ToolDecision] = {}
        asked: list[dict[str, Any]] = []
        for call in state.get("pending", []):
            if call["id"] in rt.conversation.answered:
                continue
            if INVALID_ARGS_KEY in call["args"]:
                decisions[call["id"]] = {"decision": "invalid", "reason": "arguments are not valid JSON"}
                continue
            if call["name"] not in rt.tools:
                decisions[call["id"]] = {"decision": "invalid", "reason": "unknown tool"}
                continue
            verdict = rt.policy.decide(call["name"], call["args"])
            if verdict.decision == "ask":
                asked.append({"tool_call_id": call["id"], "name": call["name"], "args": call["args"],
                              "rule": verdict.rule})
            else:
                decisions[call["id"]] = {"decision": verdict.decision, "rule": verdict.rule}
        if asked:
            answer = interrupt({"kind": APPROVAL_KIND, "requests": asked})
            decisions.update(_parse_answer(answer, asked))
        return {"decisions": decisions}

    return approve


# ── tools ──────────────────────────────────────────────────────────────────────────────


def _tool_message(rt: AgentRuntime, call: PendingCall, content: str, *, status: str = "error",
                  artifact: Any = None, redact: bool = True) -> ToolMessage:
    return ToolMessage(content=rt.engine.redactor.text(content) if redact else content, tool_call_id=call["id"],
                       name=call["name"], status=status, artifact=artifact, id=new_message_id())


def run_tool(rt: AgentRuntime, call: PendingCall) -> ToolMessage:
    """Run one approved call; a tool's exception becomes an error result the model can read. A
    tool's own result is not redacted here: :meth:`AgentRuntime.add_result` is where it goes, and the
    engine redacts it there — once, or a piece at a time when it is too big to copy (#33)."""
    tool = rt.tools[call["name"]]
    try:
        result = tool.invoke({"name": call["name"], "args": call["args"], "id": call["id"], "type": "tool_call"})
    except GraphBubbleUp:  # a tool that pauses the turn (a subagent's question to the user)
        raise
    except Exception as exc:  # a failing tool is information for the model, not a crash
        return _tool_message(rt, call, prompts.tool_failed_result(call["name"], exc))
    if isinstance(result, ToolMessage):
        content = result.content if isinstance(result.content, str) else json.dumps(result.content, default=str)
        return _tool_message(rt, call, content, status=result.status or "success", artifact=result.artifact,
                             redact=False)
    return _tool_message(rt, call, str(result), status="success", redact=False)


def _decided_result(rt: AgentRuntime, call: PendingCall, decision: ToolDecision) -> ToolMessage | None:
    if decision.get("decision") == "deny":
        why = decision.get("reason") or f"denied by {decision.get('rule', 'the approval policy')}"
        rt.engine.recorder.event("tool_denied", tool_call_id=call["id"], tool=call["name"], reason=why)  # audited
        return _tool_message(rt, call, prompts.denied_result(call["name"], call["args"], why))
    if decision.get("decision") == "invalid":
        if INVALID_ARGS_KEY in call["args"]:
            return _tool_message(rt, call, prompts.invalid_arguments_result(
                call["name"], str(call["args"][INVALID_ARGS_KEY]), str(call["args"].get("_error") or "")))
        return _tool_message(rt, call, prompts.unknown_tool_result(call["name"], list(rt.tools)))
    return None


def make_tools(rt: AgentRuntime) -> Callable[[AgentState], AgentState]:
    def tools(state: AgentState) -> AgentState:
        rt.tools_epoch += 1
        pending = [c for c in state.get("pending", []) if c["id"] not in rt.conversation.answered]
        decisions = state.get("decisions", {})
        for index, call in enumerate(pending):
            if call["id"] in rt.conversation.answered:
                continue
            decided = _decided_result(rt, call, decisions.get(call["id"], {"decision": "deny",
                                                                              "reason": "no approval decision"}))
            if decided is not None and call["id"] not in rt.engine.recorder.guard.started:
                rt.add(decided)
                continue
            try:  # Ctrl-C while the start is announced stops this call as much as one during it
                started = rt.engine.tool_started(
                    call["id"], call["name"], call["args"], approved_by=decisions.get(call["id"], {}).get("rule", ""))
                if started is not True:
                    if started is not None:
                        rt._adopt(started)
                    continue
                if rt.toolset is not None:
                    rt.toolset.load_called(call["name"])
                result = run_tool(rt, call)
            except GraphBubbleUp:  # paused: on resume this node runs again and this call with it
                rt.engine.recorder.guard.started.discard(call["id"])
                raise
            except KeyboardInterrupt:
                rt.tools_round += 1
                _settle_after_interrupt(rt, call, pending[index + 1:])
                raise
            rt.add_result(result)
        rt.tools_round += 1
        return {"pending": [], "decisions": {}}

    return tools


def _settle_after_interrupt(rt: AgentRuntime, current: PendingCall, rest: Sequence[PendingCall]) -> None:
    """Ctrl-C: answer the call in flight and the calls after it — with the result that finished
    elsewhere meanwhile (a sibling subagent's report) where there is one, else as interrupted / not run."""
    for index, call in enumerate([current, *rest]):
        if call["id"] in rt.conversation.answered:
            continue
        ready = rt.ready_result(call)
        if ready is not None:
            content, status = ready
            rt.add_result(_tool_message(rt, call, content, status=status))
        elif index == 0:
            rt.add(_tool_message(rt, call, prompts.interrupted_result(call["name"], call["args"])))
        else:
            rt.add(_tool_message(rt, call, prompts.not_run_after_interrupt(call["name"], call["args"])))


# ── wiring ─────────────────────────────────────────────────────────────────────────────


def _after_reason(state: AgentState) -> str:
    return "approve" if state.get("pending") else END


def build_graph(rt: AgentRuntime, checkpointer: BaseCheckpointSaver[Any] | None = None) -> Any:
    """The compiled graph; nodes close over ``rt``, so build one per session."""
    graph = StateGraph(AgentState)
    graph.add_node("reason", make_reason(rt))
    graph.add_node("approve", make_approve(rt))
    graph.add_node("tools", make_tools(rt))
    graph.add_edge(START, "reason")
    graph.add_conditional_edges("reason", _after_reason, ["approve", END])
    graph.add_edge("approve", "tools")
    graph.add_edge("tools", "reason")
    return graph.compile(checkpointer=checkpointer)
