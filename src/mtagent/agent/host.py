"""What the turn driver and the subagents use of a session: the seam between them and the session.

:class:`~mtagent.agent.session.AgentSession` implements :class:`SessionHost`; :mod:`mtagent.agent.turns`
and :mod:`mtagent.agent.subagents` are written against this Protocol, so the session module imports
them and never the other way round (no import cycle, not even for type hints).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from mtagent.agent.approval import ApprovalPolicy
from mtagent.agent.opener import SessionParts
from mtagent.agent.graph import AgentRuntime
from mtagent.agent.state import Conversation
from mtagent.config import Settings
from mtagent.context.opener import OpenedSession
from mtagent.redaction import Redactor

__all__ = ["SessionHost"]


class SessionHost(Protocol):
    """A running agent session as its turn driver and its subagents see it."""

    project_root: Path
    session_id: str
    model_name: str
    settings: Settings
    window: int
    redactor: Redactor
    policy: ApprovalPolicy
    opened: OpenedSession
    parts: SessionParts
    runtime: AgentRuntime
    conversation: Conversation
    graph: Any  # the compiled LangGraph graph
    graph_config: dict[str, Any]  # its thread
    subagents: Any  # the session's SubagentRunner
    memory_extractor: Any
    turn_count: int

    @property
    def pending_approval(self) -> list[Any]: ...

    @property
    def transcript_path(self) -> Path: ...

    def remember(self, answer: Any) -> None: ...

    def run_turn(self, text: str, *, approver: Any = None, author: str | None = None) -> Any: ...

    def close(self) -> None: ...
