"""Open-loop replay: at every recorded model call, what would a strategy have sent?

The recording fixes what the model said and what the tools returned; only the *view* changes.
Before each model call the messages added since the previous call go through the strategy,
and we record, per turn: the view's exact tokens, the cache-aware cost of the request (and of
any summary call it made), whether it compacted, protocol violations (orphan results,
unanswered calls) and fact retention (:mod:`mtagent.replay.probes`).

Work per turn is proportional to the view (token counts are cached per message), so a whole
session costs O(turns × view), not O(turns × history) re-tokenization.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_core.messages import SystemMessage

from mtagent.config import Settings
from mtagent.context.tokens import MessageTokenCounter, count_text_tokens
from mtagent.replay.cost import DEFAULT_CACHE_MODELS, CacheModel, PrefixCache, summary_costs
from mtagent.replay.names import DEFAULT_WINDOW
from mtagent.replay.probes import ProbeSet, build_probes
from mtagent.replay.strategies import StrategyContext, make_strategy
from mtagent.replay.trajectory import Trajectory, pairing_violations
from mtagent.replay.work_state import WorkStateCount


@dataclass(slots=True)
class TurnRecord:
    turn: int
    view_tokens: int
    shared_tokens: int
    costs: dict[str, float]
    compacted: bool
    summary_calls: int
    summary_input_tokens: int
    summary_output_tokens: int
    orphan_results: int
    unanswered_calls: int
    retention: float | None
    recorded_input: int | None = None
    summary_costs: dict[str, float] = field(default_factory=dict)
    retention_by_kind: dict[str, float] = field(default_factory=dict)
    work_checked: int = 0  # work-state items looked for after this turn's compaction (replay.work_state)
    work_lost: dict[str, int] = field(default_factory=dict)  # … and those missing, by kind


@dataclass(slots=True)
class ReplayResult:
    file: str
    format: str
    strategy: str
    window: int
    turns: list[TurnRecord] = field(default_factory=list)
    threshold: int = 0  # where auto compaction fires for this recording's fixed part (its system prompt)

    @property
    def cumulative_tokens(self) -> int:
        return sum(t.view_tokens for t in self.turns)

    @property
    def peak_tokens(self) -> int:
        return max((t.view_tokens for t in self.turns), default=0)

    @property
    def summary_calls(self) -> int:
        return sum(t.summary_calls for t in self.turns)

    @property
    def compactions(self) -> int:
        return sum(t.compacted for t in self.turns)

    @property
    def violations(self) -> int:
        return sum(t.orphan_results + t.unanswered_calls for t in self.turns)

    @property
    def overflows(self) -> int:
        """Turns whose view did not fit the window (a real run would have failed there)."""
        return sum(t.view_tokens > self.window for t in self.turns)

    @property
    def retention(self) -> float | None:
        return _mean([t.retention for t in self.turns if t.retention is not None])

    @property
    def cached_cost(self) -> dict[str, float]:
        return sum_by_key(t.costs for t in self.turns)

    @property
    def summary_cost(self) -> dict[str, float]:
        """The summary calls' part of :attr:`cached_cost`."""
        return sum_by_key(t.summary_costs for t in self.turns)

    def retention_of(self, kind: str) -> float | None:
        """Mean share of ``kind``'s probes visible, over the turns that had any."""
        return _mean([t.retention_by_kind[kind] for t in self.turns if kind in t.retention_by_kind])

    @property
    def work_state(self) -> WorkStateCount:
        """Work-state items checked at this replay's compactions and how many the next view lost."""
        count = WorkStateCount()
        for t in self.turns:
            count.merge(WorkStateCount(t.work_checked, sum(t.work_lost.values()), t.work_lost))
        return count

    @property
    def summary_output_tokens(self) -> int:
        return sum(t.summary_output_tokens for t in self.turns)

    @property
    def recorded_input(self) -> int | None:
        values = [t.recorded_input for t in self.turns if t.recorded_input is not None]
        return sum(values) if values else None


_TEXT_CACHE_SIZE = 65_536


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def sum_by_key(parts: Iterable[dict[str, float]]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for part in parts:
        for name, value in part.items():
            totals[name] = totals.get(name, 0.0) + value
    return totals


@lru_cache(maxsize=4)
def shared_text_counter(encoding: str) -> Callable[[str], int]:
    """Exact counts memoised by text: every strategy replaying a session counts the same texts."""

    @lru_cache(maxsize=_TEXT_CACHE_SIZE)
    def count(text: str) -> int:
        return count_text_tokens(text, encoding)

    return count


def system_prefix(traj: Trajectory) -> list[SystemMessage]:
    out: list[SystemMessage] = []
    for m in traj.messages:
        if not isinstance(m, SystemMessage):
            break
        out.append(m)
    return out


def simulate(
    traj: Trajectory,
    strategy: str,
    *,
    window: int = DEFAULT_WINDOW,
    cache_models: Sequence[CacheModel] = DEFAULT_CACHE_MODELS,
    probes: ProbeSet | None = None,
    settings: Settings | None = None,
    label: str | None = None,
    workdir: Path | None = None,
    summary_price: float = 1.0,
) -> ReplayResult:
    """Replay ``traj`` through ``strategy`` at ``window`` tokens; one record per model call.

    ``summary_price`` prices every summary call at that share of the main model (a cheaper
    ``agent.compact_model``): 0.25 makes a summary cost a quarter of the same call to the main model.
    """
    settings = settings or Settings()
    counter = MessageTokenCounter(
        encoding=settings.context.encoding,
        overhead_tokens=settings.context.message_overhead_tokens,
        count_fn=shared_text_counter(settings.context.encoding),
    )
    probes = probes if probes is not None else build_probes(traj)
    system = system_prefix(traj)
    with tempfile.TemporaryDirectory(prefix="mtagent-replay-") as tmp:
        ctx = StrategyContext(
            system=system, window=window, counter=counter, settings=settings, workdir=workdir or Path(tmp)
        )
        strat = make_strategy(strategy, ctx)
        try:
            return _replay(traj, strat, ctx, cache_models, probes, ReplayResult(
                label or str(traj.meta.get("source", "")), traj.format, strategy, window, threshold=ctx.threshold),
                summary_price)
        finally:
            close = getattr(strat, "close", None)
            if close is not None:
                close()  # a session opened for the replay releases its transcript


def _replay(traj: Trajectory, strat: Any, ctx: StrategyContext, cache_models: Sequence[CacheModel],
            probes: ProbeSet, result: ReplayResult, summary_price: float = 1.0) -> ReplayResult:
    """The turns of one replay (see :func:`simulate`)."""
    counter, system = ctx.counter, ctx.system
    cache = PrefixCache(counter, cache_models, ctx.settings.context.encoding)
    last = len(system)
    for turn, call_index in enumerate(traj.model_calls):
        new = traj.messages[last:call_index]
        last = call_index
        step = strat.step(new)
        # Summary calls ran before this request: price them against the previous main request.
        summaries = {model.name: 0.0 for model in cache_models}
        for call in step.summary_calls:
            for name, value in summary_costs(call, cache).items():
                summaries[name] += value * summary_price
        request = cache.request(step.view)
        costs = {name: value + summaries[name] for name, value in request.costs.items()}
        kinds = probes.retention_by_kind(turn, step.view)
        work_checked, work_lost = 0, {}
        if step.compacted and probes.work is not None:
            work_checked, work_lost = probes.work.check(call_index, step.view)
        orphans, unanswered = pairing_violations(step.view)
        recorded = traj.recorded_usage[turn] if turn < len(traj.recorded_usage) else None
        result.turns.append(
            TurnRecord(
                turn=turn,
                view_tokens=request.tokens,
                shared_tokens=request.shared_tokens,
                costs=costs,
                compacted=step.compacted,
                summary_calls=len(step.summary_calls),
                summary_input_tokens=sum(c.input_tokens for c in step.summary_calls),
                summary_output_tokens=sum(c.output_tokens for c in step.summary_calls),
                orphan_results=orphans,
                unanswered_calls=unanswered,
                retention=_mean(list(kinds.values())),
                recorded_input=recorded.total_input if recorded is not None else None,
                summary_costs=summaries,
                retention_by_kind=kinds,
                work_checked=work_checked,
                work_lost=work_lost,
            )
        )
    return result
