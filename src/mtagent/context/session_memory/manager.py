"""Session memory (spec 000 M6): running notes that make auto compaction free.

While a session runs, :class:`SessionMemoryManager` keeps structured notes in
``…/artifacts/<session-id>/session-memory/summary.md`` (template and updaters in
:mod:`mtagent.context.session_memory.notes`). When the context must be compacted, the notes
*are* the summary: :meth:`~SessionMemoryManager.try_compact` keeps the messages
the notes do not cover yet (extended back to a 10K–40K-token, ≥5-text-message tail that never
splits an API round) behind the notes — no model call at compaction time. If that view would
still be over the auto-compact threshold it returns ``None`` and the engine runs a full compact.

When to update (:meth:`~SessionMemoryManager.should_extract_memory`, spec M6 / spec 002):
first once the context reaches ``init_tokens`` (10K); after that when ``update_min_tokens``
(5K) were added since the last update **and** either ``update_min_tool_calls`` (3) tool calls
happened since, or the last assistant turn made no tool call (a natural pause).

Updates are sequential with a trailing run (:mod:`~mtagent.context.session_memory.serial`): no
message is ever skipped and two updates never write the file at once.

The manager composes one-job pieces: :mod:`.store` (the notes file), :mod:`.triggers` (when to
update), :mod:`.serial` (threading), :mod:`.updater` (what an update writes) and :mod:`.split`
(where a session-memory compaction cuts).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from mtagent.config import Settings
from mtagent.context.compaction.compactor import (
    CompactionOptions,
    CompactionResult,
    SummaryOutcome,
    build_compaction_result,
)
from mtagent.context.compaction.summarize import ChatModel
from mtagent.context.session_memory import notes as N
from mtagent.context.session_memory.notes import DEFAULT_SESSION_MEMORY_TEMPLATE, Notes
from mtagent.context.session_memory.serial import SerialUpdates
from mtagent.context.session_memory.split import memory_split_index
from mtagent.context.session_memory.store import (
    SESSION_MEMORY_RELATIVE_PATH,
    load_session_memory,
    read_notes,
    session_memory_for_resume,
    write_notes,
)
from mtagent.context.session_memory.triggers import Coverage, last_turn_had_tool_calls, notes_due
from mtagent.context.session_memory.updater import fold_into_notes
from mtagent.context.tokens import MessageTokenCounter, count_text_tokens
from mtagent.events import EventBus, EventType
from mtagent.session.schema import COMPACT_BOUNDARY, SESSION_MEMORY_UPDATE, session_memory_update_record
from mtagent.session.transcript import RecordSink

__all__ = [
    "DEFAULT_SESSION_MEMORY_TEMPLATE",
    "SESSION_MEMORY_RELATIVE_PATH",
    "SessionMemoryManager",
    "SessionMemoryResult",
    "last_turn_had_tool_calls",
    "load_session_memory",
    "session_memory_for_resume",
]


@dataclass(slots=True, frozen=True)
class SessionMemoryResult:
    """One finished update (also written as a ``session_memory_update`` record)."""

    path: str
    last_summarized_message_id: str | None
    tokens: int
    sections: dict[str, int]
    source: str  # "model" | "extractive" | "model+extractive"
    repairs: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        return session_memory_update_record(
            self.path, last_summarized_message_id=self.last_summarized_message_id, tokens=self.tokens,
            sections=self.sections, source=self.source, repairs=list(self.repairs),
        )


class SessionMemoryManager:
    """One session's notes: triggers, sequential updates, compaction, resume state.

    ``model`` is any LangChain chat model (``.invoke(messages)``); without one the extractive
    updater writes the notes. ``sink`` receives ``session_memory_update`` records (the
    ``compact_boundary`` of a session-memory compaction is in the returned
    :class:`CompactionResult`; the window manager appends it, as for every compaction).

    It satisfies :class:`mtagent.context.window.SessionMemory` (``maybe_update`` and
    ``try_compact``), so it plugs into ``ContextWindowManager(session_memory=...)``.
    ``background_updates`` runs model updates on a thread so a turn never waits for one.
    """

    def __init__(
        self,
        path: Path,
        settings: Settings | None = None,
        model: ChatModel | None = None,
        sink: RecordSink | None = None,
        events: EventBus | None = None,
        counter: MessageTokenCounter | None = None,
        last_summarized_message_id: str | None = None,
        tokens_at_last_update: int = 0,
        initialized: bool = False,
        background_updates: bool = False,
        token_limit: int | None = None,
    ) -> None:
        self.path = path
        self.settings = settings or Settings()
        self.model = model
        self.sink = sink
        self.events = events
        self.counter = counter or MessageTokenCounter(encoding=self.settings.context.encoding,
                                                      overhead_tokens=self.settings.context.message_overhead_tokens)
        self.coverage = Coverage(last_summarized_message_id)
        self.tokens_at_last_update = tokens_at_last_update
        self.initialized = initialized
        self.background_updates = background_updates
        self.token_limit = token_limit
        self._serial: SerialUpdates[SessionMemoryResult] = SerialUpdates(self._run_update)
        self._request_system: tuple[BaseMessage, ...] = ()

    @property
    def last_summarized_message_id(self) -> str | None:
        return self.coverage.last_id

    @last_summarized_message_id.setter
    def last_summarized_message_id(self, value: str | None) -> None:
        self.coverage.last_id = value

    # ── files and resume ────────────────────────────────────────────────────────────

    @property
    def relative_path(self) -> str:
        return SESSION_MEMORY_RELATIVE_PATH

    def read_notes(self) -> Notes:
        """The notes as on disk now (a hand edit counts), or the empty template."""
        return read_notes(self.path)

    def load(self) -> str | None:
        return load_session_memory(self.path)

    def _write(self, text: str) -> None:
        write_notes(self.path, text)

    def restore(self, records: Sequence[dict[str, Any]]) -> None:
        """Resume the trigger state from the transcript (records from the last boundary on do).

        The last ``session_memory_update`` names the last message the notes cover; a
        session-memory ``compact_boundary`` carries the same id, for when the update record
        lies before the boundary. Notes on disk without any record still count as started.
        """
        for rec in reversed(records):
            kind = rec.get("type")
            if kind == SESSION_MEMORY_UPDATE or (kind == COMPACT_BOUNDARY and "last_summarized_message_id" in rec):
                self.last_summarized_message_id = rec.get("last_summarized_message_id")
                self.initialized = True
                if self.last_summarized_message_id:
                    self.coverage.ids.add(str(self.last_summarized_message_id))
                return
        if self.load() is not None:
            self.initialized = True

    def _count(self, text: str) -> int:
        return count_text_tokens(text, self.settings.context.encoding)

    # ── when to update ──────────────────────────────────────────────────────────────

    def tool_calls_since_update(self, messages: Sequence[BaseMessage]) -> int:
        return sum(len(m.tool_calls) for m in self.coverage.uncovered(messages) if isinstance(m, AIMessage))

    def tokens_added_since_update(self, messages: Sequence[BaseMessage], token_count: int) -> int:
        """Tokens of the messages the notes do not cover yet (see :mod:`.triggers`)."""
        if self.coverage.last_index(messages) >= 0:
            return self.counter.estimate(self.coverage.uncovered(messages))
        if token_count < self.tokens_at_last_update:
            return token_count
        return token_count - self.tokens_at_last_update

    def should_extract_memory(self, messages: Sequence[BaseMessage], token_count: int | None = None,
                              tool_call_count: int | None = None) -> bool:
        """Whether the notes are due an update (see :mod:`.triggers` for the rule).

        ``token_count`` is the context size now (default: estimated); ``tool_call_count`` the
        tool calls since the last update (default: counted from ``messages``).
        """
        if not self.settings.session_memory.enabled:
            return False
        tokens = self.counter.estimate(messages) if token_count is None else token_count
        due = notes_due(
            self.settings.session_memory, initialized=self.initialized, tokens=tokens,
            tokens_added=lambda: self.tokens_added_since_update(messages, tokens),
            tool_calls=lambda: (self.tool_calls_since_update(messages) if tool_call_count is None
                                else tool_call_count),
            last_turn_called_tools=lambda: last_turn_had_tool_calls(messages),
        )
        if due and not self.initialized:
            self.initialized = True
        return due

    # ── updating ────────────────────────────────────────────────────────────────────

    def update_session_memory(self, messages: Sequence[BaseMessage], token_count: int | None = None,
                              *, _scheduled: bool = False) -> SessionMemoryResult | None:
        """Fold ``messages`` into the notes now, or park them if an update is running.

        Returns the update, or ``None`` when the request was parked: the running caller then
        runs one trailing update with every parked message before it returns.
        """
        return self._serial.run(messages, token_count, scheduled=_scheduled)

    def align_to(self, system: Sequence[BaseMessage]) -> None:
        """The system messages of the main requests: an update request can then be the last main
        request + one instruction (a prompt-cache hit, when the model is ``cache_aligned``)."""
        self._request_system = tuple(system)

    def maybe_update(self, messages: Sequence[BaseMessage], *, tokens: int | None = None,
                     background: bool | None = None) -> SessionMemoryResult | threading.Thread | None:
        """Per-call hook: update when :meth:`should_extract_memory` says so.

        In the background (``background`` or ``background_updates``) the update runs on a
        daemon thread (returned) so the turn does not wait; a compaction waits for it
        (``compact_wait_seconds``).
        """
        if not self.should_extract_memory(messages, tokens):
            return None
        if not (self.background_updates if background is None else background):
            return self.update_session_memory(messages, tokens)
        return self._serial.start(messages, tokens)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no update is running (or ``timeout`` seconds passed); True when idle."""
        return self._serial.wait_idle(timeout)

    def _run_update(self, messages: list[BaseMessage], token_count: int | None) -> SessionMemoryResult:
        new = list(self.coverage.uncovered(messages))
        prefix = [*self._request_system, *messages] if self._request_system else []
        folded = fold_into_notes(self.read_notes(), new, model=self.model, settings=self.settings,
                                 token_of=self.counter.message_tokens, count=self._count, prefix=prefix)
        rendered = folded.notes.render()
        self._write(rendered)
        self.coverage.add([str(m.id) for m in messages if m.id is not None])
        self.tokens_at_last_update = self.counter.estimate(messages) if token_count is None else token_count
        self.initialized = True
        update = SessionMemoryResult(
            path=self.relative_path, last_summarized_message_id=self.last_summarized_message_id,
            tokens=self._count(rendered),
            sections={n: self._count(folded.notes.bodies.get(n, "")) for n in N.SECTIONS},
            source=folded.source, repairs=folded.repairs,
        )
        if self.sink is not None:
            self.sink.append(update.record())
        if self.events is not None:
            self.events.emit(EventType.SESSION_MEMORY_UPDATED, path=str(self.path), tokens=update.tokens,
                             last_summarized_message_id=update.last_summarized_message_id, source=folded.source)
        return update

    # ── compaction ──────────────────────────────────────────────────────────────────

    def try_compact(self, messages: Sequence[BaseMessage], *, trigger: str = "auto", tokens: int | None = None,
                    threshold: int | None = None, extra_tokens: int = 0) -> CompactionResult | None:
        """Notes + recent tail as the new history, or ``None`` to fall back to a full compact (the window
        manager's entry point, ``SessionMemory`` protocol; ``tokens``: the view's size before it).

        ``None`` when session memory is off, the notes are empty, the notes do not cover any
        message of ``messages``, nothing before the tail would be replaced, or the result would
        still be at or over the auto-compact threshold.
        """
        cfg = self.settings.session_memory
        if not cfg.enabled:
            return None
        self.wait_idle(cfg.compact_wait_seconds)
        text = self.load()
        if text is None:
            return None
        token_limit = self.token_limit
        if threshold is None:
            threshold = self.settings.auto_compact_threshold_tokens(token_limit, extra_tokens)
        split = memory_split_index(messages, self.coverage, settings=self.settings,
                                   token_of=self.counter.message_tokens, available=max(1, threshold - extra_tokens))
        if split is None:
            return None
        options = CompactionOptions(
            settings=self.settings, counter=self.counter, trigger=trigger,
            reason=f"{trigger}: session memory", pre_tokens=tokens, extra_tokens=extra_tokens,
            token_limit=token_limit,
        )
        result = build_compaction_result(messages, split, SummaryOutcome(text, "session_memory"), options)
        if result.post_tokens >= threshold:
            return None
        result.boundary_record["last_summarized_message_id"] = self.last_summarized_message_id
        return result
