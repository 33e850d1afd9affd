"""A child's "ask" reaches the user exactly as the parent's own would (issue 17: ``general`` has
the parent's approvals).

A child runs on a worker thread while the parent's thread waits inside the ``task`` tool. When
the child's approval policy says "ask", the child's turn calls :meth:`AskBridge.ask` (its
approver), which queues the requests and blocks; the parent's waiting thread serves the queue
(:meth:`AskBridge.serve`):

* with the parent turn's approver (the REPL's prompt, an interactive ``mtagent run``) it calls
  that approver — on the parent's thread, one question at a time, labelled with the child;
* without one (a front end that pauses: ``approval_required``, non-interactive ``run``, the
  library) it pauses the parent's turn with LangGraph's ``interrupt()``, carrying the child's
  requests in the parent's approval format, so ``pending_approval`` / ``resume_approval`` and
  every front end's rules (``--approval``, "no terminal to ask") treat them like the parent's own
  calls. On resume the tools node runs again and the answer goes to the waiting child. LangGraph
  matches a node's interrupts by position, so the asks of one tools round are replayed in order
  once per execution of the tools node (``AgentRuntime.tools_epoch`` counts executions,
  ``tools_round`` completed rounds; an answered ask of an earlier round is dropped).

A grandchild asks through its parent child: that child's turn approver is this bridge's ``ask``.
An "always" answer is remembered by the parent's policy too, so later children inherit it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph.types import interrupt

from mtagent.agent.graph import APPROVAL_KIND
from mtagent.agent.subagents.child import SubagentCancelled

from mtagent.agent.host import SubagentParent
from mtagent.agent.turns import ApprovalRequest

ASK_WAIT_SLICE_SECONDS = 0.1


@dataclass(slots=True)
class PendingAsk:
    """One child's approval question, waiting for the user's answer."""

    label: str
    requests: list[ApprovalRequest]
    round: int
    answer: Any = None
    done: threading.Event = field(default_factory=threading.Event)
    replayed_epoch: int = -1


def _labelled(requests: list[ApprovalRequest], label: str) -> list[ApprovalRequest]:
    return [type(r)(r.tool_call_id, r.tool, dict(r.args), f"{label}: {r.rule}") for r in requests]


class AskBridge:
    """Carries children's approval questions to the parent's thread and their answers back."""

    def __init__(self, session: SubagentParent) -> None:
        self.session = session
        self.turn_approver: Callable[[list[ApprovalRequest]], Any] | None = None
        self._asks: list[PendingAsk] = []
        self._lock = threading.Lock()

    def approver_for(self, label: str, cancel: Callable[[], bool]) -> Callable[[list[ApprovalRequest]], Any]:
        """The approver a child's turns use (``label`` names the child in the question)."""

        def ask(requests: list[ApprovalRequest]) -> Any:
            pending = PendingAsk(label, _labelled(list(requests), label), self.session.runtime.tools_round)
            with self._lock:
                self._asks.append(pending)
            while not pending.done.wait(ASK_WAIT_SLICE_SECONDS):
                if cancel():
                    raise SubagentCancelled("the parent session was interrupted while a subagent asked")
            return pending.answer

        return ask

    def serve(self) -> None:
        """On the parent's thread: put every open question to the user (may pause the turn)."""
        runtime = self.session.runtime
        with self._lock:
            for stale in (a for a in self._asks if a.round != runtime.tools_round and not a.done.is_set()):
                self._answer(stale, {r.tool_call_id: {"decision": "deny", "reason": "the parent's turn moved on"}
                                     for r in stale.requests}, remember=False)
            self._asks = [a for a in self._asks if a.round == runtime.tools_round]
            asks = list(self._asks)
        if self.turn_approver is not None:
            for pending in asks:
                if not pending.done.is_set():
                    self._answer(pending, self.turn_approver(pending.requests), remember=True)
            return
        epoch = runtime.tools_epoch
        for pending in asks:
            if pending.replayed_epoch == epoch:
                continue
            answer = interrupt({"kind": APPROVAL_KIND, "requests": [
                {"tool_call_id": r.tool_call_id, "name": r.tool, "args": r.args, "rule": r.rule}
                for r in pending.requests]})
            pending.replayed_epoch = epoch
            if not pending.done.is_set():
                self._answer(pending, answer, remember=False)  # resume_approval remembered it already

    def clear(self) -> None:
        """Forget every question (the user moved on; their children were stopped)."""
        with self._lock:
            self._asks.clear()

    def _answer(self, pending: PendingAsk, answer: Any, *, remember: bool) -> None:
        if remember:
            self.session.policy.remember_answers(pending.requests, answer)
        pending.answer = answer
        pending.done.set()
