"""ContextWindowManager: the per-call pipeline that decides what the model sees (spec 000 M4).

``prepare(history, system=…, tools_tokens=…)`` runs, cheapest first::

    usage-anchored estimate → time microcompact → size microcompact
      → auto compact (session memory first, full compact otherwise; circuit breaker)
      → re-estimate → ContextPlan

and returns :class:`PreparedContext`: ``.messages`` to send, ``.history`` the caller keeps from
now on (a new list only when a compaction happened), ``.plan`` and ``.compaction``. Everything it
does is appended to ``sink`` (``compact_boundary``, ``microcompact``, ``context_plan``,
``event`` records) and emitted on ``bus``.

**Incremental.** A long session calls ``prepare`` thousands of times on a history that only
grows at the end. The manager keeps the previous call's view, per-message token counts, prefix
sums and per-bucket totals, keyed by the history's length and its last message; a call only
processes the appended messages, so its cost does not grow with the session (a changed history
— another caller's edit, a resume — is detected and rebuilt once). The estimate is the provider's
reported usage of the last call plus the tokens of what came after it; after a compaction or a
clearing the anchor floor moves past the kept messages, whose usage describes the old view.

**Session memory** plugs in as ``session_memory`` (:class:`SessionMemory` protocol): it is
updated every call (it decides cheaply whether to extract) and tried first for auto and no-argument
manual compaction; a result still at or above the threshold falls back to full compaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.budget import Bucket, BudgetBuckets
from mtagent.context.compaction.compactor import CompactionResult, compact, compact_from
from mtagent.context.compaction.microcompact import (
    MicrocompactResult,
    cleared_copy,
    maybe_size_based_microcompact,
    maybe_time_based_microcompact,
)
from mtagent.context.static.authority import Conflict
from mtagent.context.plan import (
    CompressedItem,
    ContextItem,
    ContextPlan,
    DroppedItem,
    add_static_tokens,
    bucket_of,
    context_item,
    id_range,
)
from mtagent.context.compaction.policy import AutoCompactPolicy, RecordSink
from mtagent.context.compaction.reattach import ReadState
from mtagent.context.compaction.summarize import Summarizer
from mtagent.context.tokens import MessageTokenCounter, reported_context_tokens
from mtagent.errors import CompactionFailed
from mtagent.events import EventBus, EventType, SessionStats
from mtagent.session.schema import microcompact_record, parse_timestamp


class SessionMemory(Protocol):
    """What the window manager needs from session memory (``context/session_memory/manager.py``)."""

    def maybe_update(self, history: Sequence[BaseMessage], *, tokens: int) -> None:
        """Called on every ``prepare``; extract/update summary.md when its triggers are met."""

    def try_compact(
        self,
        history: Sequence[BaseMessage],
        *,
        trigger: str,
        tokens: int,
        threshold: int,
        extra_tokens: int,
    ) -> CompactionResult | None:
        """A session-memory compaction of ``history`` (``summary_source="session_memory"``,
        built with :func:`mtagent.context.compaction.compactor.build_compaction_result`), or None when
        there is no usable memory yet."""


@dataclass(slots=True)
class PreparedContext:
    """One call's context. ``messages`` is what to send: the manager reuses that list (it extends
    it in place on the next ``prepare`` when only new messages were appended, so a call costs
    O(new messages), not O(session)) — copy it if you keep it past the next call. ``history`` is
    the caller's history, or a new list when this call compacted."""

    messages: list[BaseMessage]
    history: list[BaseMessage]
    plan: ContextPlan
    compaction: CompactionResult | None = None
    cleared_ids: list[str] = field(default_factory=list)


def _message_ts(message: BaseMessage) -> float | None:
    """POSIX time an engine-aware writer stamped on a message, if any."""
    meta = (message.response_metadata or {}).get("mtagent") or {}
    value = meta.get("ts", meta.get("timestamp"))
    if isinstance(value, int | float):
        return float(value)
    parsed = parse_timestamp(value)
    return parsed.timestamp() if parsed else None


@dataclass(slots=True)
class _ViewCache:
    """The previous call's view of the history, extended in place when the history grows."""

    view: list[BaseMessage] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    prefix: list[int] = field(default_factory=lambda: [0])
    buckets: dict[Bucket, int] = field(default_factory=dict)
    last: BaseMessage | None = None
    first_id: str | None = None
    anchor: int | None = None
    last_ai_ts: float | None = None
    cleared: int = 0
    sent: list[BaseMessage] | None = None
    sent_system: list[BaseMessage] = field(default_factory=list)
    sent_len: int = 0

    def matches(self, history: Sequence[BaseMessage]) -> bool:
        n = len(self.view)
        if len(history) < n or (n and history[0].id != self.first_id):
            return False
        if n == 0:
            return True
        candidate = history[n - 1]
        last = self.last
        return candidate is last or (
            last is not None and candidate.id == last.id and candidate.content == last.content
        )


class ContextWindowManager:
    """Decides, before every model call, what the model sees (see module docstring)."""

    def __init__(
        self,
        settings: Settings,
        *,
        summarizer: Summarizer | None = None,
        sink: RecordSink | None = None,
        bus: EventBus | None = None,
        stats: SessionStats | None = None,
        counter: MessageTokenCounter | None = None,
        session_memory: SessionMemory | None = None,
        read_state: ReadState | None = None,
        clock: Callable[[], float] = time.time,
        token_limit: int | None = None,
        root: Path | None = None,
    ) -> None:
        self.settings = settings
        self.summarizer = summarizer
        self.sink = sink
        self.bus = bus
        self.stats = stats
        self.counter = counter or MessageTokenCounter(
            encoding=settings.context.encoding, overhead_tokens=settings.context.message_overhead_tokens
        )
        self.session_memory = session_memory
        self.read_state = read_state
        self.clock = clock
        self.root = root
        self.policy = AutoCompactPolicy(settings, token_limit, bus, sink, stats)
        self.last_plan: ContextPlan | None = None
        self.cleared: dict[str, str] = {}
        self._cache = _ViewCache()
        self._anchor_floor = 0
        self._turn = 0
        self._last_call_ts: float | None = None
        self._last_extra = 0
        self._placeholder_tokens: int | None = None
        self._size_retry_floor = 0

    # ---- public API -------------------------------------------------------------------------

    @property
    def token_limit(self) -> int:
        return self.policy.window

    @property
    def threshold(self) -> int:
        return self.policy.threshold

    def prepare(
        self,
        history: list[BaseMessage],
        *,
        system: Sequence[BaseMessage] = (),
        tools_tokens: int = 0,
        query_source: str = "user",
        conflicts: Sequence[Conflict] = (),
    ) -> PreparedContext:
        """Build this call's view of ``history`` (see module docstring).

        ``conflicts`` are the authority conflicts the static context resolved this turn
        (a memory or summary contradicting a rule); they are recorded in the plan.
        """
        self._turn += 1
        now = self.clock()
        self._sync(history)
        extra = self.counter.estimate(system) + tools_tokens
        self._last_extra = extra
        compressed: list[CompressedItem] = []
        dropped: list[DroppedItem] = []
        notes: list[str] = []
        cleared_now: list[str] = []
        tokens, anchored = self._measure(extra)
        working = not query_source.startswith(("compact", "session_memory"))

        stamps = [t for t in (self._cache.last_ai_ts, self._last_call_ts) if t is not None]
        last_ts = max(stamps) if stamps else None
        gap = self.settings.microcompact.gap_threshold_minutes * 60
        if working and last_ts is not None and now - last_ts > gap:
            result = maybe_time_based_microcompact(
                self._cache.view, now, last_ts, settings=self.settings.microcompact, already_cleared=self.cleared
            )
            cleared_now += self._apply_clearing(history, result, compressed)
        tokens, anchored = self._measure(extra)
        if working and tokens > self._size_next_attempt():
            result = maybe_size_based_microcompact(
                self._cache.view, tokens, self.token_limit, token_of=self._view_tokens,
                settings=self.settings.microcompact, already_cleared=self.cleared,
            )
            cleared_now += self._apply_clearing(history, result, compressed)
            self._size_retry_floor = tokens - result.tokens_saved + self._size_step()
        tokens, anchored = self._measure(extra)

        if self.session_memory is not None and working:
            self.session_memory.maybe_update(history, tokens=tokens)

        compaction: CompactionResult | None = None
        decision = self.policy.decide(tokens, query_source=query_source)
        if decision.compact:
            try:
                compaction = self._compact(history, trigger="auto", reason=decision.reason, tokens=tokens,
                                           extra=extra, prefer_memory=True)
            except Exception as exc:  # noqa: BLE001 - a failed auto compaction must never fail the turn
                self.policy.record_failure(exc)
                notes.append(f"auto compaction failed: {exc}")
            else:
                self.policy.record_success(compaction.pre_tokens, compaction.post_tokens)
                history = compaction.new_history()
                self._sync(history)
                tokens, anchored = self._measure(extra)
                compressed.append(CompressedItem(compaction.boundary_id, compaction.pre_tokens,
                                                 compaction.post_tokens, compaction.summary_source))
                dropped.append(DroppedItem(id_range(compaction.summarized_ids),
                                           f"summarized into {compaction.boundary_id}"))
        elif self.policy.disabled and tokens >= decision.threshold:
            notes.append("auto compaction is disabled after repeated failures; run /compact")

        plan = self._plan(tokens, anchored, extra, tools_tokens, system, compressed, dropped, notes)
        plan.conflicts = list(conflicts)
        self._last_call_ts = now
        self.last_plan = plan
        if self.sink is not None:
            self.sink.append(plan.to_record())
        if self.bus is not None:
            self.bus.emit(EventType.CONTEXT_PLANNED, turn=plan.turn, tokens=plan.tokens, threshold=plan.threshold)
        if self.stats is not None:
            self.stats.last_effective_context_limit = self.token_limit - self.settings.context.summary_reserved_tokens
            self.stats.last_auto_compact_threshold = plan.threshold
            self.stats.last_context_tokens = tokens
        return PreparedContext(self._sent_messages(system), history, plan, compaction, cleared_now)

    def compact(
        self,
        history: Sequence[BaseMessage],
        trigger: str = "manual",
        instructions: str | None = None,
        *,
        system: Sequence[BaseMessage] | None = None,
        tools_tokens: int = 0,
    ) -> CompactionResult:
        """``/compact [instructions]``: session memory first when there are no instructions,
        otherwise a full compaction with the instructions in its prompt. Never refused as
        "too long" (prompt-too-long retry, then extractive fallback)."""
        extra = self._extra(system, tools_tokens)
        self._sync(history)
        tokens, _ = self._measure(extra)
        return self._compact(history, trigger=trigger, reason=f"/compact {instructions or ''}".strip(),
                             tokens=tokens, extra=extra, prefer_memory=instructions is None,
                             instructions=instructions)

    def compact_from(
        self,
        history: Sequence[BaseMessage],
        message_id: str,
        *,
        direction: str = "up_to",
        instructions: str | None = None,
        system: Sequence[BaseMessage] | None = None,
        tools_tokens: int = 0,
    ) -> CompactionResult:
        """``/compact from <id>``: partial compaction around a message (see
        :func:`mtagent.context.compaction.compactor.compact_from`)."""
        extra = self._extra(system, tools_tokens)
        self._sync(history)
        tokens, _ = self._measure(extra)
        result = compact_from(
            history, message_id, self.summarizer, direction=direction,  # type: ignore[arg-type]
            settings=self.settings, counter=self.counter, trigger="manual", instructions=instructions,
            read_state=self.read_state, pre_tokens=tokens, extra_tokens=extra,
            token_limit=self.token_limit, root=self.root,
        )
        self._commit(result)
        return result

    def reactive_compact(
        self,
        history: Sequence[BaseMessage],
        *,
        system: Sequence[BaseMessage] | None = None,
        tools_tokens: int = 0,
    ) -> CompactionResult:
        """Forced compaction after the provider rejected a request as too long (spec M4): runs
        even when auto compaction is disabled. Raises :class:`CompactionFailed` when nothing
        can be summarized."""
        extra = self._extra(system, tools_tokens)
        self._sync(history)
        tokens, _ = self._measure(extra)
        return self._compact(history, trigger="reactive", reason="provider rejected the request as too long",
                             tokens=max(tokens, self.token_limit), extra=extra, prefer_memory=True)

    # ---- compaction -------------------------------------------------------------------------

    def _extra(self, system: Sequence[BaseMessage] | None, tools_tokens: int) -> int:
        if system is None:
            return self._last_extra + tools_tokens
        return self.counter.estimate(system) + tools_tokens

    def _compact(
        self,
        history: Sequence[BaseMessage],
        *,
        trigger: str,
        reason: str,
        tokens: int,
        extra: int,
        prefer_memory: bool,
        instructions: str | None = None,
    ) -> CompactionResult:
        if self.bus is not None:
            self.bus.emit(EventType.COMPACT_STARTED, trigger=trigger, tokens=tokens)
        threshold = self.threshold
        result: CompactionResult | None = None
        if prefer_memory and self.session_memory is not None:
            candidate = self.session_memory.try_compact(
                history, trigger=trigger, tokens=tokens, threshold=threshold, extra_tokens=extra
            )
            if candidate is not None and candidate.post_tokens < threshold:
                result = candidate
        if result is None:
            result = compact(
                history, self.summarizer, settings=self.settings, counter=self.counter, trigger=trigger,
                reason=reason, instructions=instructions, read_state=self.read_state, pre_tokens=tokens,
                extra_tokens=extra, token_limit=self.token_limit, root=self.root,
            )
        if trigger != "manual" and result.post_tokens >= result.pre_tokens:
            raise CompactionFailed(
                f"compaction did not shrink the context ({result.pre_tokens} → {result.post_tokens} tokens); "
                "the recent tail alone is too large — start a new session or raise context.token_limit"
            )
        self._commit(result)
        return result

    def _commit(self, result: CompactionResult) -> None:
        """Record a compaction and re-base the incremental state on the new history."""
        record = result.boundary_record
        if result.fallback_reason:
            record = {**record, "fallback_reason": result.fallback_reason}
        if self.sink is not None:
            self.sink.append(record)
        if self.bus is not None:
            self.bus.emit(EventType.COMPACT_BOUNDARY, id=result.boundary_id, trigger=result.trigger,
                          pre_tokens=result.pre_tokens, post_tokens=result.post_tokens,
                          summary_source=result.summary_source)
        if self.stats is not None and result.trigger != "auto":
            self.stats.compactions += 1
        new_history = result.new_history()
        keep_ids = {m.id for m in new_history if m.id}
        self.cleared = {k: v for k, v in self.cleared.items() if k in keep_ids}
        self._cache = _ViewCache()
        self._sync(new_history)
        self._anchor_floor = len(new_history)
        self._cache.anchor = None
        self._size_retry_floor = 0
        self.counter.forget(keep_ids)

    # ---- microcompact -----------------------------------------------------------------------

    def _apply_clearing(
        self, history: Sequence[BaseMessage], result: MicrocompactResult, compressed: list[CompressedItem]
    ) -> list[str]:
        if not result.cleared_ids:
            return []
        cache = self._cache
        ids = set(result.cleared_ids)
        for index, message in enumerate(cache.view):
            if message.id in ids and isinstance(message, ToolMessage):
                before = cache.tokens[index]
                copy = cleared_copy(message, result.trigger or "size")
                cache.view[index] = copy
                after = self._placeholder(copy)
                cache.tokens[index] = after
                cache.buckets[Bucket.TOOL_RESULTS] = cache.buckets.get(Bucket.TOOL_RESULTS, 0) - before + after
                cache.cleared += 1
                compressed.append(CompressedItem(str(message.id), before, after, f"cleared ({result.trigger})"))
        for cid in result.cleared_ids:
            self.cleared[cid] = result.trigger or "size"
        cache.sent = None
        self._rebuild_prefix()
        # Reported usage before the clearing counted the full results: re-anchor on the next reply.
        self._anchor_floor = len(history)
        cache.anchor = None
        if self.sink is not None:
            self.sink.append(microcompact_record(result.trigger or "size", result.cleared_ids))
        if self.bus is not None:
            self.bus.emit(EventType.MICRO_COMPACTED, trigger=result.trigger, cleared_ids=list(result.cleared_ids))
        if self.stats is not None:
            self.stats.microcompactions += 1
        return list(result.cleared_ids)

    def _size_step(self) -> int:
        ms = self.settings.microcompact
        return max(1, int(self.token_limit * (ms.size_trigger_fraction - ms.size_target_fraction)))

    def _size_next_attempt(self) -> int:
        """Size clearing fires above the trigger fraction; after a batch that could not reach the
        target it waits for another (trigger − target) share of growth, so a view full of
        referenced results is not rescanned on every call."""
        trigger = int(self.token_limit * self.settings.microcompact.size_trigger_fraction)
        return max(trigger, self._size_retry_floor)

    def _placeholder(self, cleared: BaseMessage) -> int:
        if self._placeholder_tokens is None:
            text = cleared.model_copy(update={"id": f"placeholder-probe-{id(self)}"})
            self._placeholder_tokens = self.counter.message_tokens(text)
        return self._placeholder_tokens

    def _view_tokens(self, message: BaseMessage) -> int:
        if (message.response_metadata or {}).get("mtagent", {}).get("cleared"):
            return self._placeholder(message)
        return self.counter.message_tokens(message)

    # ---- incremental view -------------------------------------------------------------------

    def _sync(self, history: Sequence[BaseMessage]) -> None:
        cache = self._cache
        if not cache.matches(history):
            self._cache = cache = _ViewCache()
            if self._anchor_floor > len(history):
                self._anchor_floor = 0
        start = len(cache.view)
        for index in range(start, len(history)):
            self._append(index, history[index])
        if history:
            cache.last = history[-1]
            cache.first_id = history[0].id

    def _append(self, index: int, message: BaseMessage) -> None:
        cache = self._cache
        if isinstance(message, ToolMessage) and message.id in self.cleared:
            message = cleared_copy(message, self.cleared[message.id])
            cache.cleared += 1
        tokens = self._view_tokens(message)
        cache.view.append(message)
        cache.tokens.append(tokens)
        cache.prefix.append(cache.prefix[-1] + tokens)
        bucket = bucket_of(message)
        cache.buckets[bucket] = cache.buckets.get(bucket, 0) + tokens
        if isinstance(message, AIMessage):
            if index >= self._anchor_floor and reported_context_tokens(message) is not None:
                cache.anchor = index
            ts = _message_ts(message)
            if ts is not None:
                cache.last_ai_ts = ts

    def _sent_messages(self, system: Sequence[BaseMessage]) -> list[BaseMessage]:
        """System + view, extended in place when the previous list is still exact."""
        cache = self._cache
        sent, old_system = cache.sent, cache.sent_system
        same_system = len(old_system) == len(system) and all(
            a is b or (a.id == b.id and a.content == b.content) for a, b in zip(old_system, system, strict=True)
        )
        if sent is None or not same_system or len(sent) != len(system) + cache.sent_len:
            sent = [*system, *cache.view]
        else:
            sent.extend(cache.view[cache.sent_len:])
        cache.sent, cache.sent_system, cache.sent_len = sent, list(system), len(cache.view)
        return sent

    def _rebuild_prefix(self) -> None:
        prefix = [0]
        for tokens in self._cache.tokens:
            prefix.append(prefix[-1] + tokens)
        self._cache.prefix = prefix

    def _measure(self, extra: int) -> tuple[int, bool]:
        """(tokens, anchored): reported usage of the last reply + tokens after it, else a count."""
        cache = self._cache
        anchor = cache.anchor
        if anchor is not None and anchor >= self._anchor_floor:
            reported = reported_context_tokens(cache.view[anchor]) or 0
            return reported + cache.prefix[-1] - cache.prefix[anchor + 1], True
        return cache.prefix[-1] + extra, False

    def _plan(
        self,
        tokens: int,
        anchored: bool,
        extra: int,
        tools_tokens: int,
        system: Sequence[BaseMessage],
        compressed: list[CompressedItem],
        dropped: list[DroppedItem],
        notes: list[str],
    ) -> ContextPlan:
        buckets = BudgetBuckets(self.token_limit, self.threshold)
        for message in system:
            add_static_tokens(buckets, message, self.counter.message_tokens(message))
        buckets.add(Bucket.TOOLS, tools_tokens)
        for bucket, count in self._cache.buckets.items():
            buckets.add(bucket, count)
        cache = self._cache
        view, token_list, system_list = cache.view, cache.tokens, list(system)
        count = len(view)

        def selector() -> list[ContextItem]:
            items = [context_item(m, self.counter.message_tokens(m), i) for i, m in enumerate(system_list)]
            offset = len(system_list)
            items += [context_item(view[i], token_list[i], offset + i) for i in range(count)]
            return items

        head = 0
        while head < min(2, count) and bucket_of(view[head]) in (Bucket.SUMMARY, Bucket.REATTACHED):
            head += 1
        selected = [f"system:{len(system_list)}", *(str(view[i].id) for i in range(head))]
        if count > head:
            first, last = str(view[head].id), str(view[count - 1].id)
            selected.append(first if count - head == 1 else f"{first}..{last} ({count - head})")
        plan = ContextPlan(
            turn=self._turn, tokens=tokens, token_limit=self.token_limit, threshold=self.threshold,
            buckets=buckets, anchored=anchored, message_count=len(view), cleared_results=self._cache.cleared,
            compressed=compressed, dropped=dropped, notes=notes, selected_ids=selected,
        )
        plan._selector = selector
        return plan
