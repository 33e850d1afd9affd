"""When the session-memory notes are due an update (spec 000 M6 / spec 002), as pure functions.

First once the context reaches ``init_tokens`` (10K); after that when ``update_min_tokens`` (5K)
were added since the last update **and** either ``update_min_tool_calls`` (3) tool calls happened
since, or the last assistant turn made no tool call (a natural pause). "Since the last update" is
measured on the messages the notes do not cover yet (:class:`Coverage`), not as "context now
minus context then", so a compaction in between does not stall the next update.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from mtagent.config import SessionMemorySettings
from mtagent.context.boundary import is_summary_message

__all__ = ["Coverage", "is_text_message", "last_turn_had_tool_calls", "notes_due"]


def is_text_message(m: BaseMessage) -> bool:
    """A user or assistant message that says something (not only tool calls)."""
    if not isinstance(m, (HumanMessage, AIMessage)) or is_summary_message(m):
        return False
    content = m.content
    if isinstance(content, str):
        return bool(content.strip())
    return any((isinstance(b, str) and b.strip()) or (isinstance(b, dict) and b.get("type") == "text"
               and str(b.get("text", "")).strip()) for b in content)


def last_turn_had_tool_calls(messages: Sequence[BaseMessage]) -> bool:
    for m in reversed(messages):
        if isinstance(m, AIMessage) and not is_summary_message(m):
            return bool(m.tool_calls)
    return False


@dataclass(slots=True)
class Coverage:
    """Which messages the notes already cover: the last one by id, and every id folded in."""

    last_id: str | None = None
    ids: set[str] = field(default_factory=set)

    def last_index(self, messages: Sequence[BaseMessage]) -> int:
        """Index of the newest message the notes cover, or -1."""
        for i in range(len(messages) - 1, -1, -1):
            mid = messages[i].id
            if mid is not None and (mid in self.ids or mid == self.last_id):
                return i
        return -1

    def uncovered(self, messages: Sequence[BaseMessage]) -> Sequence[BaseMessage]:
        return messages[self.last_index(messages) + 1:]

    def add(self, ids: Sequence[str]) -> None:
        self.ids.update(ids)
        if ids:
            self.last_id = ids[-1]


def notes_due(
    cfg: SessionMemorySettings,
    *,
    initialized: bool,
    tokens: int,
    tokens_added: Callable[[], int],
    tool_calls: Callable[[], int],
    last_turn_called_tools: Callable[[], bool],
) -> bool:
    """The update rule (module docstring); the callables are evaluated only when needed."""
    if not cfg.enabled:
        return False
    if not initialized:
        return tokens >= cfg.init_tokens
    if tokens_added() < cfg.update_min_tokens:
        return False
    return tool_calls() >= cfg.update_min_tool_calls or not last_turn_called_tools()
