"""What the turn driver and the subagents use of a session: the seams between them and the session.

:class:`~mtagent.agent.session.AgentSession` implements both Protocols; :mod:`mtagent.agent.turns`
and :mod:`mtagent.agent.subagents` are written against them, so the session module imports them and
never the other way round (no import cycle, not even for type hints). Each names only what its user
needs: a subagent runner sees its parent as a :class:`SubagentParent`, not the whole session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from mtagent.agent.approval import ApprovalPolicy
from mtagent.agent.graph import AgentRuntime
from mtagent.agent.state import Conversation
from mtagent.config import Settings
from mtagent.events import EventBus
from mtagent.context.opener import OpenedSession
from mtagent.redaction import Redactor

__all__ = ["SubagentParent", "TurnHost"]


class SubagentParent(Protocol):
    """The session a subagent runner serves: whose project, rules, window and model a child starts
    from, where its records go, and the parent's turn (its history, its tools round for questions)."""

    project_root: Path
    session_id: str
    model_name: str
    settings: Settings
    redactor: Redactor
    policy: ApprovalPolicy
    artifacts: Any  # the session's artifact store (a child's transcript is kept there in PostgreSQL mode)
    sink: Any  # where the ``subagent`` records go
    runtime: AgentRuntime
    conversation: Conversation
    events: EventBus  # where a child's tool calls are shown too (tagged with the child's agent)

    @property
    def session_memory(self) -> Any: ...  # the parent's task state a child's facts merge into (or None)


class TurnHost(Protocol):
    """A running session as its turn driver (:mod:`mtagent.agent.turns`) sees it."""

    redactor: Redactor
    opened: OpenedSession
    runtime: AgentRuntime
    conversation: Conversation
    graph: Any  # the compiled LangGraph graph
    graph_config: dict[str, Any]  # its thread
    subagents: Any  # the session's SubagentRunner
    memory_extractor: Any
    turn_count: int
    policy: ApprovalPolicy  # remembers the user's "always" answers

    @property
    def pending_approval(self) -> list[Any]: ...
