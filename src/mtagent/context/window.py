"""ContextWindowManager: the per-call pipeline that decides what the model sees (spec 000 M4).

``prepare(history, system=…, tools_tokens=…)`` runs, cheapest first::

    usage-anchored estimate → time microcompact → size microcompact
      → auto compact (session memory first, full compact otherwise; circuit breaker)
      → re-estimate → ContextPlan

and returns one immutable :class:`CallView`: ``.messages`` to send, ``.plan`` (its ``tokens`` are
the call's one metering), ``.history`` the caller keeps from now on (a new list only when a compaction
happened). Everything it does is appended to ``sink`` (``compact_boundary``, ``microcompact``,
``context_plan``, ``event`` records) and emitted on ``bus``.

**Incremental.** The token view lives in :class:`~mtagent.context.meter.ContextMeter` (a call
only processes the appended messages; the estimate is anchored on the provider's reported usage);
the plan is built by :mod:`mtagent.context.plan_builder`; this module is the pipeline's order and
its records. Compactions asked for from outside it (``/compact``, reactive) are in
:mod:`mtagent.context.requested_compaction`.

**Session memory** plugs in as ``session_memory`` (:class:`SessionMemory` protocol): it is
updated every call (it decides cheaply whether to extract) and tried first for auto and no-argument
manual compaction; a result still at or above the threshold falls back to full compaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from langchain_core.messages import BaseMessage

from mtagent.config import Settings
from mtagent.context.compaction.compactor import CompactionOptions, CompactionResult, compact
from mtagent.context.compaction.policy import AutoCompactPolicy, RecordSink
from mtagent.context.compaction.reattach import RecentReads
from mtagent.context.compaction.manual import memoise, shrink_or_explain
from mtagent.context.compaction.summarize import Summarizer
from mtagent.context.compaction.cache_align import align_summarizer
from mtagent.context.compaction.trigger import early_compaction_settings
from mtagent.context.ledger.extract import rule_sources
from mtagent.context.clearing import ViewClearing
from mtagent.context.meter import ContextMeter
from mtagent.context.plan import CompressedItem, ContextPlan, DroppedItem, id_range
from mtagent.context.plan_builder import CallLog, PlanFrame, plan_for_view
from mtagent.context.recall.retrieved import CompactedRecall
from mtagent.context.static.authority import Conflict
from mtagent.context.tokens import MessageTokenCounter
from mtagent.errors import CompactionFailed
from mtagent.events import EventBus, EventType, SessionStats


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


@dataclass(frozen=True, slots=True)
class CallView:
    """One call's view, computed once: what to send (system + history as sent + any recalled
    bucket), the plan (its tokens: callers read them there rather than count again), and
    ``history``: the caller's, or a new list when this call compacted."""

    messages: tuple[BaseMessage, ...]
    plan: ContextPlan
    history: list[BaseMessage]
    compaction: CompactionResult | None = None


@dataclass(frozen=True, slots=True)
class CallFrame:
    """What the last prepared call put around the history: the tokens of its system prompt and tool
    schemas, and that system prompt, whose rule files a hand-off names as in force (read only then)."""

    extra: int = 0
    system: tuple[BaseMessage, ...] = ()


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
        read_state: RecentReads | None = None,
        clock: Callable[[], float] = time.time,
        token_limit: int | None = None,
        root: Path | None = None,
        retriever: CompactedRecall | None = None,
    ) -> None:
        self.settings = settings
        self.retriever = retriever  # recall after compaction: the bounded retrieved bucket
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
        self.meter = ContextMeter(self.counter)
        self.last_plan: ContextPlan | None = None
        self.clearing = ViewClearing(settings.microcompact, self.meter, sink, bus, stats)
        self._turn = 0
        self._last_call_ts: float | None = None
        self.frame = CallFrame()
        self.summary_tokens_of = lambda result: self.counter.estimate(result.summary_messages)

    # ---- public API -------------------------------------------------------------------------

    @property
    def token_limit(self) -> int:
        return self.policy.window

    @property
    def threshold(self) -> int:
        """The auto-compact threshold for the last prepared view (its fixed part can raise it)."""
        return self.policy.threshold_for(self.frame.extra)

    def prepare(
        self,
        history: list[BaseMessage],
        *,
        system: Sequence[BaseMessage] = (),
        tools_tokens: int = 0,
        conflicts: Sequence[Conflict] = (),
    ) -> CallView:
        """Build this call's view of ``history`` (see module docstring).

        ``conflicts`` are the authority conflicts the static context resolved this turn
        (a memory or summary contradicting a rule); they are recorded in the plan.
        """
        self._turn += 1
        now = self.clock()
        meter = self.meter
        meter.sync(history)
        system_tokens = [self.counter.message_tokens(m) for m in system]  # counted once: extra and the plan
        extra = sum(system_tokens) + tools_tokens
        self.frame = CallFrame(extra, tuple(system))
        log = CallLog()
        stamps = [t for t in (meter.last_ai_ts, self._last_call_ts) if t is not None]
        tokens, anchored = self.clearing.run(history, now=now, last_ts=max(stamps) if stamps else None,
                                             extra=extra, token_limit=self.token_limit, log=log)

        if self.session_memory is not None:
            align = getattr(self.session_memory, "align_to", None)
            if align is not None:  # an update request can share the main request's cached prefix
                align(system)
            self.session_memory.maybe_update(history, tokens=tokens)

        compaction: CompactionResult | None = None
        if history:
            self.policy.observe_round(history[-1])
        decision = self.policy.decide(tokens, extra_tokens=extra)
        if decision.compact:
            try:
                compaction = self.run_compaction(history, trigger="auto", reason=decision.reason, tokens=tokens,
                                                 extra=extra, prefer_memory=True, early=decision.early, system=system)
            except Exception as exc:  # noqa: BLE001 - a failed auto compaction must never fail the turn
                self.policy.record_failure(exc, early=decision.early, tokens=tokens)
                log.notes.append(f"auto compaction failed: {exc}")
            else:
                self.policy.record_compaction(compaction.pre_tokens, compaction.post_tokens, decision.threshold)
                history = compaction.new_history()  # the meter was rebased on it (_commit)
                tokens, anchored = meter.measure(extra)
                log.compressed.append(CompressedItem(compaction.boundary_id, compaction.pre_tokens,
                                                     compaction.post_tokens, compaction.summary_source))
                log.dropped.append(DroppedItem(id_range(compaction.summarized_ids),
                                               f"summarized into {compaction.boundary_id}"))
        elif self.policy.disabled and tokens >= decision.threshold:
            log.notes.append("auto compaction is disabled after repeated failures; run /compact")

        frame = PlanFrame(self._turn, tokens, anchored, self.token_limit, self.threshold, tools_tokens,
                          self.settings.context.compression_preserve_min_tokens)
        plan = plan_for_view(meter, frame, log, system, system_tokens)
        plan.conflicts = list(conflicts)
        messages = (*system, *meter.view)
        if self.retriever is not None:
            messages = tuple(self.retriever.extend(meter.view, messages, plan))
        self._last_call_ts = now
        self.last_plan = plan
        effective = self.token_limit - self.settings.context.summary_reserved_tokens
        _publish_plan(plan, self.sink, self.bus, self.stats, effective)
        return CallView(messages, plan, history, compaction)

    # ---- compaction -------------------------------------------------------------------------

    def options(self, *, trigger: str, reason: str | None, tokens: int, extra: int,
                instructions: str | None = None) -> CompactionOptions:
        return CompactionOptions(
            settings=self.settings, counter=self.counter, trigger=trigger, reason=reason,
            instructions=instructions, read_state=self.read_state, pre_tokens=tokens, extra_tokens=extra,
            token_limit=self.token_limit, root=self.root, rules=tuple(rule_sources(self.frame.system)),
        )

    def run_compaction(
        self,
        history: Sequence[BaseMessage],
        *,
        trigger: str,
        reason: str,
        tokens: int,
        extra: int,
        prefer_memory: bool,
        instructions: str | None = None,
        early: bool = False,
        system: Sequence[BaseMessage] = (),
    ) -> CompactionResult:
        """The one compaction core: the pipeline's auto compaction, and those asked for
        (:mod:`mtagent.context.requested_compaction`)."""
        if self.bus is not None:
            self.bus.emit(EventType.COMPACT_STARTED, trigger=trigger, tokens=tokens)
        threshold = self.threshold
        result: CompactionResult | None = None
        if prefer_memory and self.session_memory is not None:
            candidate = self.session_memory.try_compact(
                history, trigger=trigger, tokens=tokens, threshold=threshold, extra_tokens=extra
            )
            if candidate is not None and candidate.post_tokens < threshold and (
                    trigger != "manual" or candidate.post_tokens < tokens):  # manual: smaller, or nothing
                result = candidate
        if result is None:
            options = self.options(trigger=trigger, reason=reason, tokens=tokens, extra=extra,
                                   instructions=instructions)
            if early:  # a cost-triggered compaction keeps the shorter cost tail
                options = replace(options, settings=early_compaction_settings(self.settings))
            ctx = self.settings.context
            summarizer = align_summarizer(self.summarizer, [*system, *self.meter.view],
                                          cache_aligned=ctx.cache_aligned_summaries,
                                          incremental=ctx.incremental_summaries)
            if trigger == "manual":
                memo, base = memoise(summarizer), options
                result = shrink_or_explain(lambda s: compact(history, memo, replace(base, settings=s)),
                                           base.settings, tokens, self.summary_tokens_of)
            else:
                result = compact(history, summarizer, options)
            self.policy.summary_written(getattr(summarizer, "last_output", None))
        if trigger != "manual" and result.post_tokens >= result.pre_tokens:
            raise CompactionFailed(
                f"compaction did not shrink the context ({result.pre_tokens} → {result.post_tokens} tokens); "
                "the recent tail alone is too large — start a new session or raise context.token_limit"
            )
        self.commit(result)
        return result

    def commit(self, result: CompactionResult) -> None:
        """Record a compaction and re-base the incremental state on the new history."""
        _publish_compaction(result, self.sink, self.bus, self.stats)
        self.meter.rebase(result.new_history())
        self.clearing.schedule.retry_floor = 0
        self.policy.rounds_since_compact = 0  # any compaction (/compact too) restarts compact_every_rounds


def _publish_plan(plan: ContextPlan, sink: RecordSink | None, bus: EventBus | None, stats: SessionStats | None,
                  effective_limit: int) -> None:
    """The ``context_plan`` record, its event and the statistics ``/context stats`` shows."""
    if sink is not None:
        sink.append(plan.to_record())
    if bus is not None:
        bus.emit(EventType.CONTEXT_PLANNED, turn=plan.turn, tokens=plan.tokens, threshold=plan.threshold)
    if stats is not None:
        stats.last_effective_context_limit = effective_limit
        stats.last_auto_compact_threshold = plan.threshold
        stats.last_context_tokens = plan.tokens


def _publish_compaction(result: CompactionResult, sink: RecordSink | None, bus: EventBus | None,
                        stats: SessionStats | None) -> None:
    """The ``compact_boundary`` record (with why the model's summary was not used, if so) and its event."""
    record = result.boundary_record
    if result.fallback_reason:
        record = {**record, "fallback_reason": result.fallback_reason}
    if sink is not None:
        sink.append(record)
    if bus is not None:
        bus.emit(EventType.COMPACT_BOUNDARY, id=result.boundary_id, trigger=result.trigger,
                 pre_tokens=result.pre_tokens, post_tokens=result.post_tokens, summary_source=result.summary_source)
    if stats is not None and result.trigger != "auto":
        stats.compactions += 1
