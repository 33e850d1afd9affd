"""Microcompact on the view, before each model call: clear stale tool results to placeholders.

Time-based clearing runs after an idle gap (the provider's prompt cache has expired, so rewriting
the prefix costs nothing extra); size-based clearing runs over its trigger fraction of the window.
Only the view changes — the history and the transcript keep every result — and each clearing is
recorded (``microcompact`` record, event, statistics). Kept apart from the window's pipeline
(:mod:`mtagent.context.window`) so its schedule is one small piece of state with one job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from mtagent.config import MicrocompactSettings
from mtagent.context.compaction.microcompact import (
    MicrocompactResult,
    maybe_size_based_microcompact,
    maybe_time_based_microcompact,
)
from mtagent.context.compaction.policy import RecordSink
from mtagent.context.meter import ContextMeter
from mtagent.context.plan_builder import CallLog
from mtagent.events import EventBus, EventType, SessionStats
from mtagent.session.schema import microcompact_record

__all__ = ["SizeClearingSchedule", "ViewClearing"]


@dataclass(slots=True)
class SizeClearingSchedule:
    """When size-based clearing may run again.

    It fires above the trigger fraction; after a batch that could not reach the target it waits
    for another (trigger − target) share of growth, so a view full of referenced results is not
    rescanned on every call.
    """

    trigger_fraction: float
    target_fraction: float
    retry_floor: int = 0

    def next_attempt(self, token_limit: int) -> int:
        return max(int(token_limit * self.trigger_fraction), self.retry_floor)

    def ran(self, token_limit: int, tokens_after: int) -> None:
        step = max(1, int(token_limit * (self.trigger_fraction - self.target_fraction)))
        self.retry_floor = tokens_after + step


@dataclass
class ViewClearing:
    """Runs both clearings on a meter's view and records what they cleared."""

    settings: MicrocompactSettings
    meter: ContextMeter
    sink: RecordSink | None = None
    bus: EventBus | None = None
    stats: SessionStats | None = None

    def __post_init__(self) -> None:
        self.schedule = SizeClearingSchedule(self.settings.size_trigger_fraction, self.settings.size_target_fraction)

    def run(self, history: Sequence[BaseMessage], *, now: float, last_ts: float | None, extra: int,
            token_limit: int, log: CallLog) -> tuple[int, bool]:
        """Time-based clearing after an idle gap, then size-based clearing over its trigger; returns the
        meter's measure of the view they leave (the call's one metering)."""
        meter = self.meter
        if last_ts is not None and now - last_ts > self.settings.gap_threshold_minutes * 60:
            result = maybe_time_based_microcompact(meter.view, now, last_ts, settings=self.settings,
                                                   already_cleared=meter.cleared)
            self._apply(history, result, log)
        tokens, anchored = meter.measure(extra)
        if tokens > self.schedule.next_attempt(token_limit):
            result = maybe_size_based_microcompact(
                meter.view, tokens, token_limit, token_of=meter.view_tokens, settings=self.settings,
                already_cleared=meter.cleared,
            )
            self._apply(history, result, log)
            self.schedule.ran(token_limit, tokens - result.tokens_saved)
            return meter.measure(extra)
        return tokens, anchored

    def _apply(self, history: Sequence[BaseMessage], result: MicrocompactResult, log: CallLog) -> None:
        if not result.cleared_ids:
            return
        trigger = result.trigger or "size"
        log.compressed += self.meter.clear(history, result.cleared_ids, trigger)
        if self.sink is not None:
            self.sink.append(microcompact_record(trigger, result.cleared_ids))
        if self.bus is not None:
            self.bus.emit(EventType.MICRO_COMPACTED, trigger=result.trigger, cleared_ids=list(result.cleared_ids))
        if self.stats is not None:
            self.stats.microcompactions += 1
