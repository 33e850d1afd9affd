"""When to compact automatically, and the circuit breaker.

:class:`AutoCompactPolicy` (spec 000 M4) fires at ``Settings.auto_compact_threshold_tokens``
(``token_limit - summary_reserved - buffer``: 131072 → 98072, raised above a large fixed part), never for a request that is
itself a compaction or session-memory call, and after ``compact_max_consecutive_failures`` (3)
failures in a row disables auto compaction for the session — without that breaker a session
whose context cannot shrink retries a doomed compaction on every turn (spec 002 §熔断器).
Manual and reactive compaction stay available.

A provider's "prompt too long" rejection is recognised in one place,
:func:`mtagent.context.model_errors.is_context_length_error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mtagent.config import Settings
from mtagent.context.compaction.trigger import CostEstimate, CostTrigger, cost_trigger_enabled
from mtagent.context.tokens import count_text_tokens
from mtagent.events import EventBus, EventType, SessionStats
from mtagent.session.schema import event_record
from mtagent.session.transcript import RecordSink

# Query sources that are themselves compaction work: compacting them would recurse.
SKIP_QUERY_SOURCES: tuple[str, ...] = ("compact", "session_memory")

@dataclass(slots=True, frozen=True)
class CompactDecision:
    compact: bool
    reason: str
    tokens: int
    threshold: int
    early: bool = False
    estimate: CostEstimate | None = None


@dataclass(slots=True)
class AutoCompactPolicy:
    """Threshold, query-source skip and circuit breaker for automatic compaction."""

    settings: Settings
    token_limit: int | None = None
    bus: EventBus | None = None
    sink: RecordSink | None = None
    stats: SessionStats | None = None
    consecutive_failures: int = 0
    disabled: bool = False
    last_pre_tokens: int = 0
    last_post_tokens: int = 0
    rounds_since_compact: int = 0  # user rounds, for context.compact_every_rounds
    _last_round_id: str | None = None
    cost: CostTrigger | None = None

    @property
    def window(self) -> int:
        return self.token_limit or self.settings.context.token_limit

    @property
    def threshold(self) -> int:
        return self.settings.auto_compact_threshold_tokens(self.window)

    def threshold_for(self, extra_tokens: int = 0) -> int:
        """The threshold for a view whose fixed part (system prompt, tool schemas) is ``extra_tokens``
        (:meth:`~mtagent.config.Settings.auto_compact_threshold_tokens`, the one definition)."""
        return self.settings.auto_compact_threshold_tokens(self.window, extra_tokens)

    def decide(self, tokens: int, *, query_source: str = "user", extra_tokens: int = 0) -> CompactDecision:
        """Compact at the threshold (the hard ceiling), or earlier when the cost trigger says a
        compaction pays for itself (:mod:`mtagent.context.compaction.trigger`)."""
        threshold = self.threshold_for(extra_tokens)
        if self.stats is not None:
            self.stats.last_auto_compact_threshold = threshold
            self.stats.last_context_tokens = tokens
        if query_source.startswith(SKIP_QUERY_SOURCES):
            return CompactDecision(False, f"query source {query_source!r} is compaction work", tokens, threshold)
        if self.disabled:
            return CompactDecision(False, "auto compaction disabled after repeated failures", tokens, threshold)
        estimate = self._cost_estimate(tokens, extra_tokens)
        every = self.settings.context.compact_every_rounds
        if (every and self.rounds_since_compact >= every and tokens < threshold
                and tokens > self.settings.context.compression_preserve_max_tokens):
            return CompactDecision(True, f"{self.rounds_since_compact} rounds since the last compaction "
                                   f"(context.compact_every_rounds = {every})", tokens, threshold)
        if tokens < threshold:
            if estimate is not None:
                reason = (f"{tokens} tokens: compacting saves ≈{estimate.saving:,.0f} over "
                          f"{estimate.expected_calls} calls for ≈{estimate.cost:,.0f} (cost trigger)")
                return CompactDecision(True, reason, tokens, threshold, early=True, estimate=estimate)
            return CompactDecision(False, f"{tokens} tokens < threshold {threshold}", tokens, threshold)
        return CompactDecision(True, f"{tokens} tokens >= threshold {threshold}", tokens, threshold)

    def _cost_estimate(self, tokens: int, extra_tokens: int) -> CostEstimate | None:
        if not cost_trigger_enabled(self.settings):
            return None
        if self.cost is None:
            self.cost = CostTrigger(self.settings)
        return self.cost.decide(tokens, extra_tokens)

    def observe_round(self, last: Any) -> None:
        """Count a user round when the history ends in a new human message (spec 002's service
        example compacts every 25 rounds). Below the recent tail's size a round never triggers:
        there would be nothing to summarize, and a failed compaction counts toward the breaker."""
        if getattr(last, "type", None) == "human" and last.id != self._last_round_id:
            self._last_round_id = last.id
            self.rounds_since_compact += 1

    def record_success(self, pre_tokens: int, post_tokens: int) -> None:
        self.consecutive_failures = 0
        self.rounds_since_compact = 0
        self.last_pre_tokens = pre_tokens
        self.last_post_tokens = post_tokens
        if self.cost is not None:
            self.cost.compacted(post_tokens)
        if self.stats is not None:
            self.stats.compactions += 1
            self.stats.compression_failure_count = 0
            self.stats.last_context_tokens = post_tokens

    def record_compaction(self, pre_tokens: int, post_tokens: int, threshold: int) -> None:
        """A committed auto compaction: a success when it brought the view under ``threshold``.

        One that left the view at or over the threshold freed too little to make progress — the
        next call would compact again (a read too large for the window, kept because the model has
        not seen it): it is counted, and a re-read is answered by reference (``low_progress`` on the
        ``compact_failed`` event), so a session cannot compact on every call for ever (issue #38)."""
        if post_tokens < threshold:
            self.record_success(pre_tokens, post_tokens)
            return
        failures = self.consecutive_failures
        self.record_success(pre_tokens, post_tokens)  # it happened: counted, the cost trigger re-based
        self.consecutive_failures = failures
        self.record_failure(f"compaction freed too little to make progress: {pre_tokens:,} → {post_tokens:,} "
                            f"tokens, still at or over the threshold {threshold:,}", low_progress=True)

    def summary_written(self, text: str | None) -> None:
        """The summary model's last output: the cost trigger's next estimate of ``S`` (a delta
        hand-off is much shorter than a first, full one)."""
        if text and self.cost is not None:
            self.cost.last_summary_tokens = count_text_tokens(text, self.settings.context.encoding)

    def record_failure(self, error: BaseException | str, *, early: bool = False, tokens: int = 0,
                       low_progress: bool = False) -> None:
        """Count a failed auto compaction; the limit-th one in a row disables auto compaction.

        A failed *early* (cost-triggered) compaction does not count towards the breaker — the
        threshold compaction must stay available — but the cost trigger backs off until the
        context has grown by another cost tail."""
        if early and self.cost is not None:
            self.cost.failed(tokens)
            self._publish(EventType.COMPACT_FAILED, {"error": str(error), "early": True})
            return
        self.consecutive_failures += 1
        limit = self.settings.context.compact_max_consecutive_failures
        if self.stats is not None:
            self.stats.compression_failure_count = self.consecutive_failures
        data: dict[str, Any] = {"error": str(error), "consecutive_failures": self.consecutive_failures}
        if low_progress:
            data["low_progress"] = True
        self._publish(EventType.COMPACT_FAILED, data)
        if self.consecutive_failures >= limit and not self.disabled:
            self.disabled = True
            self._publish(
                EventType.AUTO_COMPACT_DISABLED,
                {"consecutive_failures": self.consecutive_failures, "limit": limit,
                 "hint": "run /compact manually, or start a new session"},
            )

    def _publish(self, event: EventType, data: dict[str, Any]) -> None:
        if self.bus is not None:
            self.bus.emit(event, **data)
        if self.sink is not None:
            self.sink.append(event_record(event, data))
