"""The LangGraph state of one agent turn — control data only, never the conversation.

The conversation lives in the session's transcript (the truth) and in the live history the
session keeps beside it (:class:`Conversation`). The checkpointed graph state holds only what
the loop needs to pause and resume: the tool calls waiting for approval or execution, and the
decisions taken on them. So a checkpoint stays a few hundred bytes per step instead of a copy
of the whole window, and compaction (which rewrites the history) never has to touch it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent.context.engine_session import ToolGuard

TurnStatus = Literal["running", "done", "max_steps"]
# A tool call whose arguments were not valid JSON keeps its raw text under this key, so the
# call stays in ``tool_calls`` (and is answered by an error ToolMessage) — see graph.normalize.
INVALID_ARGS_KEY = "_invalid_json_arguments"


class PendingCall(TypedDict):
    id: str
    name: str
    args: dict[str, Any]


class ToolDecision(TypedDict, total=False):
    decision: Literal["allow", "deny", "invalid"]
    reason: str
    rule: str


class AgentState(TypedDict, total=False):
    turn: int
    steps: int
    pending: list[PendingCall]
    decisions: dict[str, ToolDecision]
    status: TurnStatus


def initial_state(turn: int) -> AgentState:
    return {"turn": turn, "steps": 0, "pending": [], "decisions": {}, "status": "running"}


@dataclass(slots=True)
class Conversation:
    """The persistent history the engine sees (summary + messages since the last boundary).

    Which calls are answered is the engine session's :class:`~mtagent.context.engine_session.ToolGuard`
    (one set for the engine and the loop, kept by the engine as it records): the tool node consults it so that no call is ever
    executed twice — not after an approval resume, not after a crash (a started call without a
    result is answered as interrupted instead).
    """

    messages: list[BaseMessage] = field(default_factory=list)
    guard: ToolGuard = field(default_factory=ToolGuard)

    @property
    def answered(self) -> set[str]:
        return self.guard.answered

    def replace(self, messages: list[BaseMessage]) -> None:
        """Adopt a compacted (or resumed) history; what was answered stays answered (the guard's)."""
        self.messages = list(messages)

    def unanswered_calls(self) -> list[PendingCall]:
        """Tool calls of the last assistant message that have no result yet."""
        for message in reversed(self.messages):
            if isinstance(message, AIMessage):
                return [
                    {"id": str(c["id"]), "name": c["name"], "args": dict(c.get("args") or {})}
                    for c in message.tool_calls
                    if c.get("id") and c["id"] not in self.answered
                ]
            if not isinstance(message, ToolMessage):
                return []
        return []
