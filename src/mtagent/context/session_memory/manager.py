"""Session memory (spec 000 M6): running notes that make auto compaction free.

While a session runs, :class:`SessionMemoryManager` keeps structured notes in
``…/artifacts/<session-id>/session-memory/summary.md`` (template and updaters in
:mod:`mtagent.context.session_memory.notes`). When the context must be compacted, the notes
*are* the summary: :meth:`~SessionMemoryManager.try_session_memory_compact` keeps the messages
the notes do not cover yet (extended back to a 10K–40K-token, ≥5-text-message tail that never
splits an API round) behind the notes — no model call at compaction time. If that view would
still be over the auto-compact threshold it returns ``None`` and the engine runs a full compact.

When to update (:meth:`~SessionMemoryManager.should_extract_memory`, spec M6 / spec 002):
first once the context reaches ``init_tokens`` (10K); after that when ``update_min_tokens``
(5K) were added since the last update **and** either ``update_min_tool_calls`` (3) tool calls
happened since, or the last assistant turn made no tool call (a natural pause).

Updates are sequential with a trailing run: one update at a time; a request that arrives while
one runs is parked (merged with any other parked request) and runs once right after, so no
message is ever skipped and two updates never write the file at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from mtagent.config import Settings
from mtagent.context.session_memory import notes as N
from mtagent.context.boundary import is_summary_message
from mtagent.context.compaction.compactor import (
    CompactionOptions,
    CompactionResult,
    SummaryOutcome,
    build_compaction_result,
    region_start,
    tail_bounds,
)
from mtagent.context.invariants import (
    adjust_index_to_preserve_message_groups,
    find_last_compact_boundary,
)
from mtagent.context.session_memory.notes import DEFAULT_SESSION_MEMORY_TEMPLATE, Notes
from mtagent.context.compaction.summarize import ChatModel
from mtagent.context.tokens import MessageTokenCounter, count_text_tokens, message_text
from mtagent.events import EventBus, EventType
from mtagent.session.artifacts import SESSION_MEMORY_DIR
from mtagent.session.schema import (
    COMPACT_BOUNDARY,
    SESSION_MEMORY_UPDATE,
    session_memory_update_record,
)
from mtagent.session.transcript import RecordSink

__all__ = [
    "DEFAULT_SESSION_MEMORY_TEMPLATE",
    "SESSION_MEMORY_RELATIVE_PATH",
    "SessionMemoryManager",
    "SessionMemoryUpdate",
    "load_session_memory",
    "session_memory_for_resume",
]

SESSION_MEMORY_RELATIVE_PATH = f"{SESSION_MEMORY_DIR}/summary.md"


@dataclass(slots=True, frozen=True)
class SessionMemoryUpdate:
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


def load_session_memory(path: Path) -> str | None:
    """The notes for resume (``None`` when missing or still the empty template)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    return None if N.parse_notes(text).is_empty() else text


def session_memory_for_resume(path: Path, records: Sequence[dict[str, Any]]) -> str | None:
    """The notes to show on resume beside the last summary (``build_resume_view(session_memory=…)``).

    ``None`` when there are no notes, or when the last compaction was a session-memory one and
    the notes have not changed since — the summary message already *is* the notes, and sending
    them twice would cost up to ``total_max_tokens`` for nothing.
    """
    notes = load_session_memory(path)
    if notes is None:
        return None
    for rec in reversed(records):
        kind = rec.get("type")
        if kind == SESSION_MEMORY_UPDATE:
            return notes
        if kind == COMPACT_BOUNDARY:
            return None if rec.get("summary_source") == "session_memory" else notes
    return notes


def _is_text_message(m: BaseMessage) -> bool:
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


@dataclass
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

    path: Path
    settings: Settings = field(default_factory=Settings)
    model: ChatModel | None = None
    sink: RecordSink | None = None
    events: EventBus | None = None
    counter: MessageTokenCounter | None = None
    last_summarized_message_id: str | None = None
    tokens_at_last_update: int = 0
    initialized: bool = False
    background_updates: bool = False
    token_limit: int | None = None
    _summarized_ids: set[str] = field(default_factory=set, init=False, repr=False)
    _cond: threading.Condition = field(default_factory=threading.Condition, init=False, repr=False)
    _running: bool = field(default=False, init=False, repr=False)
    _pending: list[BaseMessage] | None = field(default=None, init=False, repr=False)
    _scheduled: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.counter is None:
            self.counter = MessageTokenCounter(encoding=self.settings.context.encoding,
                                               overhead_tokens=self.settings.context.message_overhead_tokens)

    # ── files and resume ────────────────────────────────────────────────────────────

    @property
    def relative_path(self) -> str:
        return SESSION_MEMORY_RELATIVE_PATH

    def read_notes(self) -> Notes:
        """The notes as on disk now (a hand edit counts), or the empty template."""
        try:
            return N.parse_notes(self.path.read_text(encoding="utf-8", errors="replace"))
        except FileNotFoundError:
            return Notes.empty()

    def load(self) -> str | None:
        return load_session_memory(self.path)

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
                    self._summarized_ids.add(str(self.last_summarized_message_id))
                return
        if self.load() is not None:
            self.initialized = True

    def _count(self, text: str) -> int:
        return count_text_tokens(text, self.settings.context.encoding)

    # ── when to update ──────────────────────────────────────────────────────────────

    def _last_summarized_index(self, messages: Sequence[BaseMessage]) -> int:
        for i in range(len(messages) - 1, -1, -1):
            mid = messages[i].id
            if mid is not None and (mid in self._summarized_ids or mid == self.last_summarized_message_id):
                return i
        return -1

    def tool_calls_since_update(self, messages: Sequence[BaseMessage]) -> int:
        start = self._last_summarized_index(messages) + 1
        return sum(len(m.tool_calls) for m in messages[start:] if isinstance(m, AIMessage))

    def tokens_added_since_update(self, messages: Sequence[BaseMessage], token_count: int) -> int:
        """Tokens of the messages the notes do not cover yet.

        Measured on those messages rather than as "context now minus context then", so a
        compaction in between (which shrinks the context) does not stall the next update.
        """
        last = self._last_summarized_index(messages)
        if last >= 0:
            return self.counter.estimate(messages[last + 1:])  # type: ignore[union-attr]
        if token_count < self.tokens_at_last_update:
            return token_count
        return token_count - self.tokens_at_last_update

    def should_extract_memory(self, messages: Sequence[BaseMessage], token_count: int | None = None,
                              tool_call_count: int | None = None) -> bool:
        """Whether the notes are due an update (see the module docstring for the rule).

        ``token_count`` is the context size now (default: estimated); ``tool_call_count`` the
        tool calls since the last update (default: counted from ``messages``).
        """
        cfg = self.settings.session_memory
        if not cfg.enabled:
            return False
        tokens = self.counter.estimate(messages) if token_count is None else token_count  # type: ignore[union-attr]
        if not self.initialized:
            if tokens < cfg.init_tokens:
                return False
            self.initialized = True
            return True
        if self.tokens_added_since_update(messages, tokens) < cfg.update_min_tokens:
            return False
        calls = self.tool_calls_since_update(messages) if tool_call_count is None else tool_call_count
        return calls >= cfg.update_min_tool_calls or not last_turn_had_tool_calls(messages)

    # ── updating ────────────────────────────────────────────────────────────────────

    def update_session_memory(self, messages: Sequence[BaseMessage], token_count: int | None = None,
                              *, _scheduled: bool = False) -> SessionMemoryUpdate | None:
        """Fold ``messages`` into the notes now, or park them if an update is running.

        Returns the update, or ``None`` when the request was parked: the running caller then
        runs one trailing update with every parked message before it returns.
        """
        with self._cond:
            if _scheduled:
                self._scheduled -= 1
            if self._running:
                self._pending = _merge(self._pending, messages)
                return None
            self._running = True
            batch = _merge(self._pending, messages) if self._pending is not None else list(messages)
            self._pending = None  # left over from a failed update: folded into this one
        result: SessionMemoryUpdate | None = None
        try:
            result = self._run_update(batch, token_count)
            while True:
                with self._cond:
                    pending, self._pending = self._pending, None
                    if pending is None:  # stop under the lock, so no request parks after the last look
                        self._running = False
                        self._cond.notify_all()
                        return result
                result = self._run_update(pending, None)
        except BaseException:
            with self._cond:
                self._running = False
                self._cond.notify_all()
            raise

    def maybe_update(self, messages: Sequence[BaseMessage], *, tokens: int | None = None,
                     background: bool | None = None) -> SessionMemoryUpdate | threading.Thread | None:
        """Per-call hook: update when :meth:`should_extract_memory` says so.

        In the background (``background`` or ``background_updates``) the update runs on a
        daemon thread (returned) so the turn does not wait; a compaction waits for it
        (``compact_wait_seconds``).
        """
        token_count = tokens
        if not self.should_extract_memory(messages, token_count):
            return None
        if not (self.background_updates if background is None else background):
            return self.update_session_memory(messages, token_count)
        snapshot = list(messages)
        with self._cond:
            if self._running:  # park without a thread; the running update's trailing run takes it
                self._pending = _merge(self._pending, snapshot)
                return None
            self._scheduled += 1
        thread = threading.Thread(target=self.update_session_memory, args=(snapshot, token_count),
                                  kwargs={"_scheduled": True}, name="session-memory-update", daemon=True)
        thread.start()
        return thread

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no update is running (or ``timeout`` seconds passed); True when idle."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._running or self._scheduled > 0:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def _new_messages(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        start = self._last_summarized_index(messages) + 1
        return messages[start:]

    def _run_update(self, messages: list[BaseMessage], token_count: int | None) -> SessionMemoryUpdate:
        cfg = self.settings.session_memory
        new = self._new_messages(messages)
        notes = self.read_notes()
        source = "extractive"
        repairs: list[str] = []
        if self.model is not None and N.conversation(new):
            head, tail = self._split_for_model(new)
            if head:
                notes = N.extractive_update(notes, head)
            request = N.build_update_request(notes, tail, section_max_tokens=cfg.section_max_tokens,
                                             tool_result_chars=self.settings.tool_results.preview_chars)
            try:
                reply = self.model.invoke(request)
                text = message_text(reply) if isinstance(reply, BaseMessage) else str(reply)
            except Exception as exc:  # a failing model must not cost the notes their update
                text = ""
                repairs.append(f"model failed ({exc.__class__.__name__}: {str(exc)[:200]})")
            if text.strip():
                notes, repairs = N.merge_model_reply(notes, text, tail)
                source = "model+extractive" if head else "model"
            else:
                notes = N.extractive_update(notes, tail)
                repairs.append("extractive update used instead of the model")
        else:
            notes = N.extractive_update(notes, new)
        notes = N.enforce_budget(notes, section_max_tokens=cfg.section_max_tokens,
                                 total_max_tokens=cfg.total_max_tokens, count=self._count)
        rendered = notes.render()
        self._write(rendered)
        ids = [str(m.id) for m in messages if m.id is not None]
        self._summarized_ids.update(ids)
        if ids:
            self.last_summarized_message_id = ids[-1]
        tokens = self.counter.estimate(messages) if token_count is None else token_count  # type: ignore[union-attr]
        self.tokens_at_last_update = tokens
        self.initialized = True
        update = SessionMemoryUpdate(
            path=self.relative_path, last_summarized_message_id=self.last_summarized_message_id,
            tokens=self._count(rendered), sections={n: self._count(notes.bodies.get(n, "")) for n in N.SECTIONS},
            source=source, repairs=tuple(repairs),
        )
        if self.sink is not None:
            self.sink.append(update.record())
        if self.events is not None:
            self.events.emit(EventType.SESSION_MEMORY_UPDATED, path=str(self.path), tokens=update.tokens,
                             last_summarized_message_id=update.last_summarized_message_id, source=source)
        return update

    def _split_for_model(self, new: list[BaseMessage]) -> tuple[list[BaseMessage], list[BaseMessage]]:
        """(older part for the extractive updater, newest part that fits the model request)."""
        budget = self.settings.session_memory.update_input_max_tokens
        used = 0
        cut = len(new)
        for i in range(len(new) - 1, -1, -1):
            used += self.counter.message_tokens(new[i])  # type: ignore[union-attr]
            if used > budget and cut < len(new):
                break
            cut = i
        return new[:cut], new[cut:]

    def _write(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(self.path)

    # ── compaction ──────────────────────────────────────────────────────────────────

    def try_compact(self, history: Sequence[BaseMessage], *, trigger: str, tokens: int, threshold: int,
                    extra_tokens: int) -> CompactionResult | None:
        """The window manager's entry point (``SessionMemory`` protocol)."""
        return self.try_session_memory_compact(history, trigger=trigger, extra_tokens=extra_tokens,
                                               pre_tokens=tokens, threshold=threshold)

    def try_session_memory_compact(
        self, messages: Sequence[BaseMessage], *, trigger: str = "auto", extra_tokens: int = 0,
        token_limit: int | None = None, pre_tokens: int | None = None, threshold: int | None = None,
    ) -> CompactionResult | None:
        """Notes + recent tail as the new history, or ``None`` to fall back to a full compact.

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
        token_limit = token_limit or self.token_limit
        if threshold is None:
            threshold = self.settings.auto_compact_threshold_tokens(token_limit)
        split = self._split_index(messages, available=max(1, threshold - extra_tokens))
        if split is None:
            return None
        options = CompactionOptions(
            settings=self.settings, counter=self.counter, trigger=trigger,  # type: ignore[arg-type]
            reason=f"{trigger}: session memory", pre_tokens=pre_tokens, extra_tokens=extra_tokens,
            token_limit=token_limit,
        )
        result = build_compaction_result(messages, split, SummaryOutcome(text, "session_memory"), options)
        if result.post_tokens >= threshold:
            return None
        result.boundary_record["last_summarized_message_id"] = self.last_summarized_message_id
        return result

    def _split_index(self, messages: Sequence[BaseMessage], *, available: int) -> int | None:
        floor = find_last_compact_boundary(messages)
        last = self._last_summarized_index(messages)
        if last < 0:
            if floor < 0 or not self._summarized_ids:
                return None
            last = floor  # everything before the old boundary is in the notes already
        tail_min, tail_max = tail_bounds(self.settings, available)
        min_text = self.settings.session_memory.min_text_messages
        token_of: Callable[[BaseMessage], int] = self.counter.message_tokens  # type: ignore[union-attr]
        start = last + 1
        kept_tokens = sum(token_of(m) for m in messages[start:])
        texts = sum(1 for m in messages[start:] if _is_text_message(m))
        while start > floor + 1 and kept_tokens < tail_max and (kept_tokens < tail_min or texts < min_text):
            start -= 1
            kept_tokens += token_of(messages[start])
            texts += _is_text_message(messages[start])
        start = max(adjust_index_to_preserve_message_groups(messages, start), floor + 1)
        begin = region_start(messages)
        if start < begin or not any(not is_summary_message(m) for m in messages[begin:start]):
            return None
        return start


def _merge(pending: list[BaseMessage] | None, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Parked messages plus a new request's, each message once, in first-seen order."""
    if pending is None:
        return list(messages)
    seen = {id(m) for m in pending} | {m.id for m in pending if m.id is not None}
    out = list(pending)
    for m in messages:
        if id(m) in seen or (m.id is not None and m.id in seen):
            continue
        out.append(m)
    return out
