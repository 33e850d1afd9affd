"""``mtagent replay --tune``: search the context policy's knobs on the user's own recorded sessions.

Every candidate setting replays the same sessions through the ``mtagent`` strategy (the real
engine) at the chosen window; the raw replay is the reference. A candidate is scored by its
cache-aware cost as a share of raw (one cache model: Anthropic-style by default) and by fact
retention on the sessions that reach the compaction threshold (*pressured* — elsewhere every
strategy keeps everything). The best setting is the cheapest whose pressured retention stays
within ``retention_slack`` of the current configuration's; it is printed as a TOML snippet to
paste into ``.mtagent/config.toml``.

The knobs searched (:data:`GRID`): the trigger (cost-aware or threshold), the tail a cost-triggered
compaction keeps, the tail a threshold compaction keeps, how many calls the cost trigger waits
for, and size-based clearing of old tool results. Each candidate changes only those keys on top of the user's settings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mtagent.config import Settings
from mtagent.errors import MTAgentError
from mtagent.replay.cost import DEFAULT_CACHE_MODELS
from mtagent.replay.executors.base import Executor
from mtagent.replay.simulate import ReplayResult
from mtagent.replay.trajectory import Trajectory
from mtagent.replay.units import ReplayUnit, SessionRef, run_replay_unit

RETENTION_SLACK = 0.01

# (section, key) → value, per candidate. The first is "as configured" (no change).
Candidate = dict[tuple[str, str], Any]
GRID: tuple[Candidate, ...] = (
    {},
    {("context", "compaction_trigger"): "threshold"},
    {("context", "cost_tail_min_tokens"): 1_500, ("context", "cost_tail_max_tokens"): 5_000},
    {("context", "cost_tail_min_tokens"): 3_000, ("context", "cost_tail_max_tokens"): 10_000},
    {("context", "cost_tail_min_tokens"): 5_000, ("context", "cost_tail_max_tokens"): 20_000},
    {("context", "cost_tail_min_tokens"): 2_000, ("context", "cost_tail_max_tokens"): 6_000},
    {("context", "cost_tail_min_tokens"): 500, ("context", "cost_tail_max_tokens"): 3_000},
    # the tail a threshold compaction keeps (the ceiling the cost trigger leaves in place)
    {("context", "compression_preserve_min_tokens"): 5_000, ("context", "compression_preserve_max_tokens"): 20_000},
    {("context", "compression_preserve_min_tokens"): 2_000, ("context", "compression_preserve_max_tokens"): 10_000},
    {("context", "cost_min_calls"): 4},
    {("context", "cost_min_calls"): 16},
    {("microcompact", "size_trigger_fraction"): 0.5},
    {("context", "compaction_trigger"): "threshold", ("microcompact", "size_trigger_fraction"): 0.6},
)


def apply(settings: Settings, candidate: Candidate) -> Settings:
    """``settings`` with ``candidate``'s keys replaced (validated like a config file)."""
    sections: dict[str, dict[str, Any]] = {}
    for (section, key), value in candidate.items():
        sections.setdefault(section, {})[key] = value
    update = {
        name: getattr(settings, name).model_validate({**getattr(settings, name).model_dump(), **values})
        for name, values in sections.items()
    }
    return settings.model_copy(update=update)


@dataclass(slots=True)
class Score:
    """One candidate's totals over the sessions."""

    candidate: Candidate
    cost: float = 0.0
    raw_cost: float = 0.0
    compactions: int = 0
    overflows: int = 0
    violations: int = 0
    retentions: list[float] = field(default_factory=list)
    pressured: list[float] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.cost / self.raw_cost if self.raw_cost else 1.0

    @property
    def retention(self) -> float | None:
        values = self.pressured or self.retentions
        return sum(values) / len(values) if values else None

    @property
    def valid(self) -> bool:
        return self.overflows == 0 and self.violations == 0


def describe(candidate: Candidate) -> str:
    if not candidate:
        return "as configured"
    return ", ".join(f"{section}.{key}={value}" for (section, key), value in candidate.items())


def tune(
    sessions: Sequence[Trajectory | SessionRef],
    settings: Settings,
    *,
    window: int,
    cache_model: str = "anthropic",
    grid: Iterable[Candidate] = GRID,
    progress: Callable[[int, int], None] | None = None,
    executor: Executor | None = None,
    run: Callable[[ReplayUnit], ReplayResult] = run_replay_unit,
) -> list[Score]:
    """Score every candidate of ``grid`` on ``sessions``; the list is in grid order.

    Each session's raw reference and each (session × candidate) replay is a work unit on ``executor``
    (default: this process, one unit after another). The merge walks the outcomes in unit order, so the
    floating-point sums — and so the chosen setting — are the same on every executor. A unit that
    fails twice raises :class:`TuneFailed`: a score missing a session would compare unlike totals.
    """
    if cache_model not in {m.name for m in DEFAULT_CACHE_MODELS}:
        raise ValueError(f"unknown cache model {cache_model!r}")
    if executor is None:
        from mtagent.replay.executors.local import LocalExecutor

        executor = LocalExecutor(1)  # one worker: the units run inline
    scores = [Score(c) for c in grid]
    configured = [apply(settings, s.candidate) for s in scores]
    per_session = 1 + len(configured)
    units = []
    for ref, label in map(_ref, sessions):
        units.append(ReplayUnit(ref, label, "raw", window, settings))
        units += [ReplayUnit(ref, label, "mtagent", window, cand) for cand in configured]
    total = len(sessions) * len(configured)
    raw: ReplayResult | None = None
    done = 0
    for outcome in executor.map(run, units):
        if not outcome.ok:
            raise TuneFailed(f"tuning replay of {outcome.unit.label} failed after {outcome.attempts} attempts: "
                             f"{outcome.error}; check that file with `mtagent replay` first")
        slot = outcome.index % per_session
        if slot == 0:
            raw = outcome.value
            continue
        assert raw is not None
        add_result(scores[slot - 1], outcome.value, raw, cache_model, raw.peak_tokens >= raw.threshold)
        done += 1
        if progress is not None:
            progress(done, total)
    return scores


def add_result(score: Score, r: Any, raw: Any, cache_model: str, pressured: bool) -> None:
    """One replay of one candidate on one session, added to its totals."""
    score.cost += r.cached_cost[cache_model]
    score.raw_cost += raw.cached_cost[cache_model]
    score.compactions += r.compactions
    score.overflows += r.overflows
    score.violations += r.violations
    if r.retention is not None:
        score.retentions.append(r.retention)
        if pressured:
            score.pressured.append(r.retention)


class TuneFailed(MTAgentError):
    """A tuning replay failed twice; the scores would be incomparable without it."""


def _ref(session: Trajectory | SessionRef) -> tuple[SessionRef, str]:
    """The unit's session and its label."""
    if isinstance(session, SessionRef):
        return session, f"{session.path}#{session.index}"
    source = str(session.meta.get("source", ""))
    return SessionRef(source, trajectory=session), source


def best(scores: Sequence[Score], retention_slack: float = RETENTION_SLACK) -> Score:
    """The cheapest valid candidate whose retention is within the slack of the configured one."""
    baseline = scores[0].retention
    floor = (baseline - retention_slack) if baseline is not None else None
    eligible = [s for s in scores if s.valid and (floor is None or s.retention is None or s.retention >= floor)]
    return min(eligible or [scores[0]], key=lambda s: s.share)


def toml_snippet(score: Score) -> str:
    """The candidate as lines to paste into ``.mtagent/config.toml`` (empty: keep the config)."""
    if not score.candidate:
        return "# the current configuration is already the best of those tried"
    sections: dict[str, list[str]] = {}
    for (section, key), value in score.candidate.items():
        rendered = f'"{value}"' if isinstance(value, str) else str(value)
        sections.setdefault(section, []).append(f"{key} = {rendered}")
    return "\n\n".join(f"[{section}]\n" + "\n".join(lines) for section, lines in sections.items())


def report_lines(scores: Sequence[Score], chosen: Score, *, window: int, cache_model: str) -> list[str]:
    """A plain-text table of the candidates and the chosen one's snippet."""
    lines = [f"tuning at a {window:,}-token window · cost: {cache_model}-style cache, share of raw · "
             "retention: mean over the sessions that reach the compaction threshold (all sessions if none)",
             f"{'cost':>7}  {'ret.':>6}  {'comp.':>5}  setting"]
    for s in sorted(scores, key=lambda s: s.share):
        mark = "*" if s is chosen else " "
        ret = f"{s.retention:.3f}" if s.retention is not None else "-"
        flag = "" if s.valid else "  (over the window or broken pairing: not eligible)"
        lines.append(f"{s.share:7.3f}{mark} {ret:>6}  {s.compactions:5d}  {describe(s.candidate)}{flag}")
    ret = f"{chosen.retention:.3f}" if chosen.retention is not None else "-"
    lines += ["", f"best: {describe(chosen.candidate)} — cost {chosen.share:.3f} of raw, retention {ret}",
              "paste into .mtagent/config.toml:", "", toml_snippet(chosen)]
    return lines


def to_json(scores: Sequence[Score], chosen: Score) -> dict[str, Any]:
    def one(s: Score) -> dict[str, Any]:
        return {"setting": {f"{sec}.{key}": v for (sec, key), v in s.candidate.items()},
                "cost_share_of_raw": round(s.share, 4),
                "retention": round(s.retention, 4) if s.retention is not None else None,
                "compactions": s.compactions, "overflows": s.overflows, "violations": s.violations}

    return {"candidates": [one(s) for s in scores], "best": one(chosen), "toml": toml_snippet(chosen)}
