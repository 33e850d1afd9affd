"""When to compact automatically, the circuit breaker, and context-length error classification.

:class:`AutoCompactPolicy` (spec 000 M4) fires at ``Settings.auto_compact_threshold_tokens``
(``token_limit - summary_reserved - buffer``: 131072 → 98072), never for a request that is
itself a compaction or session-memory call, and after ``compact_max_consecutive_failures`` (3)
failures in a row disables auto compaction for the session — without that breaker a session
whose context cannot shrink retries a doomed compaction on every turn (spec 002 §熔断器).
Manual and reactive compaction stay available.

:func:`is_context_length_error` / :func:`parse_context_length_gap` recognise a provider's
"prompt too long" rejection (OpenAI, Anthropic, vLLM/llama.cpp-style, generic 400/413) so
the agent and the LangChain middleware can run a *reactive* compact and retry, and the
compactor can drop the oldest rounds of a too-long summary request.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mtagent.config import Settings
from mtagent.context.compaction.trigger import CostEstimate, CostTrigger, cost_trigger_enabled
from mtagent.context.tokens import count_text_tokens
from mtagent.errors import ContextLengthExceeded
from mtagent.events import EventBus, EventType, SessionStats
from mtagent.session.schema import event_record
from mtagent.session.transcript import RecordSink

# Query sources that are themselves compaction work: compacting them would recurse.
SKIP_QUERY_SOURCES: tuple[str, ...] = ("compact", "session_memory")

_CONTEXT_PATTERNS = re.compile(
    r"context_length_exceeded|maximum context length|context length|context window|"
    r"prompt is too long|prompt too long|input is too long|too many (?:input )?tokens|"
    r"reduce the length of the messages|request too large|exceeds the (?:model's )?(?:maximum|max)|"
    r"string_above_max_length|max_tokens_exceeded|input length .* exceeds|"
    # llama.cpp (exceed_context_size_error), LM Studio (n_keep/n_ctx), Ollama ("max context length")
    r"exceed_context_size_error|exceeds the available context size|context the overflows|"
    r"n_keep \(?\d+\)? ?>= ?n_ctx|max context length",
    re.IGNORECASE,
)
_OPENAI_GAP = re.compile(
    r"maximum context length is (\d[\d,]*) tokens.*?(?:requested|resulted in|you have) (\d[\d,]*) tokens",
    re.IGNORECASE | re.DOTALL,
)
_ANTHROPIC_GAP = re.compile(r"(\d[\d,]*) tokens? > (\d[\d,]*)", re.IGNORECASE)
_GENERIC_GAP = re.compile(
    r"(\d[\d,]*) (?:input )?tokens?.{0,80}?(?:exceeds|greater than|larger than|over).{0,40}?(\d[\d,]*)",
    re.IGNORECASE | re.DOTALL,
)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _error_text(exc: BaseException) -> str:
    parts = [str(exc)]
    body = getattr(exc, "body", None)
    if body is not None:
        parts.append(str(body))
    code = getattr(exc, "code", None)
    if code is not None:
        parts.append(str(code))
    return " ".join(parts)


def is_context_length_error(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it wraps) says the prompt exceeds the context window."""
    for err in _chain(exc):
        if isinstance(err, ContextLengthExceeded):
            return True
        text = _error_text(err)
        if _CONTEXT_PATTERNS.search(text):
            return True
        status = getattr(err, "status_code", None) or getattr(getattr(err, "response", None), "status_code", None)
        if status == 413:
            return True
    return False


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_context_length_gap(exc: BaseException) -> int | None:
    """How many tokens over the limit the provider says the request was, when it says so."""
    for err in _chain(exc):
        if isinstance(err, ContextLengthExceeded) and err.requested_tokens and err.limit_tokens:
            return max(0, err.requested_tokens - err.limit_tokens)
        text = _error_text(err)
        match = _OPENAI_GAP.search(text)
        if match:
            return max(0, _int(match.group(2)) - _int(match.group(1)))
        for pattern in (_ANTHROPIC_GAP, _GENERIC_GAP):
            match = pattern.search(text)
            if match:
                requested, limit = _int(match.group(1)), _int(match.group(2))
                if requested > limit:
                    return requested - limit
    return None


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
    _on_disable: list[Callable[[], None]] = field(default_factory=list)
    cost: CostTrigger | None = None

    @property
    def window(self) -> int:
        return self.token_limit or self.settings.context.token_limit

    @property
    def threshold(self) -> int:
        return self.settings.auto_compact_threshold_tokens(self.window)

    def threshold_for(self, extra_tokens: int = 0) -> int:
        """The threshold for a view whose fixed part (system prompt, tool schemas) is ``extra_tokens``.

        The default threshold is never below that fixed part plus ``min_threshold_fraction`` of the
        room left beside it: in a 2,048-token window the spec's floor (921) sat below the system
        prompt and compact tool schemas alone (1,069), so every call of a llama-server session tried a
        compaction that could not shrink anything. A threshold the user set is kept exactly."""
        threshold = self.threshold
        if self.settings.context.auto_compact_threshold is not None or not 0 < extra_tokens < self.window:
            return threshold
        room = self.window - extra_tokens
        return max(threshold, extra_tokens + int(room * self.settings.context.min_threshold_fraction))

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

    def should_compact(self, tokens: int, *, query_source: str = "user") -> bool:
        return self.decide(tokens, query_source=query_source).compact

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

    def summary_written(self, text: str | None) -> None:
        """The summary model's last output: the cost trigger's next estimate of ``S`` (a delta
        hand-off is much shorter than a first, full one)."""
        if text and self.cost is not None:
            self.cost.last_summary_tokens = count_text_tokens(text, self.settings.context.encoding)

    def record_failure(self, error: BaseException | str, *, early: bool = False, tokens: int = 0) -> None:
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
        data = {"error": str(error), "consecutive_failures": self.consecutive_failures}
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
