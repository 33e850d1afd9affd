"""Events the engine emits, a small synchronous bus, and per-session statistics (spec M0)."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

log = logging.getLogger(__name__)


class EventType(str, Enum):
    TOOL_RESULT_PERSISTED = "tool_result_persisted"
    MICRO_COMPACTED = "micro_compacted"
    SESSION_MEMORY_UPDATED = "session_memory_updated"
    COMPACT_BOUNDARY = "compact_boundary"
    COMPACT_FAILED = "compact_failed"
    AUTO_COMPACT_DISABLED = "auto_compact_disabled"
    COMPACT_STARTED = "compact_started"
    CONTEXT_PLANNED = "context_planned"
    MODEL_RETRY = "model_retry"
    TOOL_STARTED = "tool_started"
    TOOL_FINISHED = "tool_finished"
    MCP_SERVER = "mcp_server"  # a server still starting after a session's bounded wait, failed, or late and ready


@dataclass(slots=True, frozen=True)
class Event:
    type: EventType
    data: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[Event], None]


class EventBus:
    """Synchronous publish/subscribe. A failing handler is logged, never fatal to the turn."""

    def __init__(self) -> None:
        self._handlers: dict[EventType | None, list[Handler]] = defaultdict(list)

    def subscribe(self, handler: Handler, event_type: EventType | None = None) -> Callable[[], None]:
        """Register ``handler`` for one type (or all when None); returns an unsubscribe function."""
        self._handlers[event_type].append(handler)
        return lambda: self._handlers[event_type].remove(handler)

    def emit(self, event_type: EventType, **data: Any) -> Event:
        event = Event(event_type, data)
        for handler in [*self._handlers.get(event_type, ()), *self._handlers.get(None, ())]:
            try:
                handler(event)
            except Exception:  # a UI or logging hook must never break the agent loop
                log.exception("event handler failed for %s", event_type.value)
        return event


@dataclass(slots=True)
class SessionStats:
    """Numbers a user (and `/context stats`) can read about the running session."""

    last_effective_context_limit: int = 0
    last_auto_compact_threshold: int = 0
    last_tool_result_chars: int = 0
    compression_failure_count: int = 0
    last_context_tokens: int = 0
    compactions: int = 0
    microcompactions: int = 0
    tool_results_persisted: int = 0
    tool_result_chars_saved: int = 0
    model_calls: int = 0
