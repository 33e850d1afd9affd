"""One turn of an :class:`~mtagent.agent.session.AgentSession`: drive the graph until the model
answers without tool calls, a call waits for approval, the step limit is hit or the user presses
Ctrl-C — and then what the turn produced (:class:`TurnResult`) and the end-of-turn memory extraction.

Kept apart from the session (which owns construction, resume and the engine's passthroughs) so
each has one job; the session calls :func:`drive_turn` for a new message and for an approval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.types import Command

from mtagent.agent.host import TurnHost

log = logging.getLogger(__name__)

TurnStatus = Literal["done", "approval_required", "interrupted", "max_steps"]
Approver = Callable[[list["ApprovalRequest"]], Any]


@dataclass(slots=True, frozen=True)
class ApprovalRequest:
    """A tool call waiting for the user's yes or no."""

    tool_call_id: str
    tool: str
    args: dict[str, Any]
    rule: str


@dataclass(slots=True)
class TurnResult:
    status: TurnStatus
    reply: str = ""
    approvals: list[ApprovalRequest] = field(default_factory=list)
    model_calls: int = 0
    tool_executions: int = 0
    executed_tool_call_ids: list[str] = field(default_factory=list)
    messages: list[BaseMessage] = field(default_factory=list)


def drive_turn(session: TurnHost, payload: Any, approver: Approver | None) -> TurnResult:
    """Run the graph on ``payload`` (a new turn's state or an approval's ``Command``)."""
    counters, stats = session.runtime.engine.counters, session.runtime.engine.stats
    before = (stats.model_calls, len(counters.executed))
    size_before = len(session.conversation.messages)
    status: TurnStatus = "done"
    session.subagents.asks.turn_approver = approver  # a subagent's question goes where the parent's would
    if not isinstance(payload, Command) and session.subagents.children:
        session.subagents.abandon()  # a new message: children still waiting on an earlier question stop
    try:
        while True:
            session.graph.invoke(payload, session.graph_config)
            requests = session.pending_approval
            if not requests:
                break
            if approver is None:
                status = "approval_required"
                break
            answer = approver(requests)
            session.policy.remember_answers(requests, answer)
            payload = Command(resume=answer)
    except KeyboardInterrupt:
        status = "interrupted"
        session.runtime.engine.recorder.event("turn_interrupted", turn=session.turn_count)
    finally:
        session.opened.end_turn()
    values = session.graph.get_state(session.graph_config).values or {}
    if status == "done" and values.get("status") == "max_steps":
        status = "max_steps"
    if status == "done":
        extract_memories(session)
    messages = session.conversation.messages
    new = messages[size_before:]
    reply = next((m.text for m in reversed(messages)
                  if isinstance(m, AIMessage) and not m.tool_calls), "") if status == "done" else ""
    return TurnResult(
        status=status, reply=reply,
        approvals=session.pending_approval if status == "approval_required" else [],
        model_calls=stats.model_calls - before[0], tool_executions=len(counters.executed) - before[1],
        executed_tool_call_ids=list(counters.executed[before[1]:]), messages=list(new),
    )


@dataclass(slots=True)
class UnattendedTurn:
    """A turn run with nobody to say yes (``run`` without a terminal, ``batch``, ``eval``): every call
    that waited for approval was denied with one reason and the model went on. ``result`` is the last
    leg's (status, reply); ``messages`` and ``model_calls`` cover every leg; ``denied``: the refused
    requests, in order."""

    result: TurnResult
    messages: list[BaseMessage]
    denied: list[ApprovalRequest]
    model_calls: int


def run_unattended(session: Any, task: str, reason: str, *, approver: Approver | None = None) -> UnattendedTurn:
    """Run ``task`` on ``session`` (an :class:`~mtagent.agent.session.AgentSession`), denying with
    ``reason`` whatever asks for approval and ``approver`` (if any) did not answer."""
    result = session.run_turn(task, approver=approver)
    turn = UnattendedTurn(result, list(result.messages), [], result.model_calls)
    while result.status == "approval_required":
        turn.denied += result.approvals
        result = session.resume_approval({r.tool_call_id: {"decision": "deny", "reason": reason}
                                          for r in result.approvals})
        turn.result = result
        turn.messages += result.messages
        turn.model_calls += result.model_calls
    return turn


def extract_memories(session: TurnHost) -> None:
    """``memory.auto_extract``: propose project memories after a turn that ended without tool
    calls. A failure is recorded and logged, never the turn's failure — the answer is already given."""
    if session.memory_extractor is None:
        return
    try:
        result = session.memory_extractor.maybe_extract(session.conversation.messages)
    except Exception as exc:  # noqa: BLE001 - a flaky extraction call must not cost the user the turn
        log.warning("memory extraction failed: %s", exc)
        session.runtime.engine.recorder.event("memory_extract_failed", error=session.redactor.text(str(exc))[:300])
    else:
        if result.ran:
            session.runtime.engine.recorder.event("memory_extracted", added=result.added, skipped=len(result.skipped))
    session.opened.end_turn()
