"""Replay results as rows (shared by the CLI, the UI and the benchmark); files run as units (:mod:`.units`).

A row is one (session, strategy, window): ``ratio_to_raw`` divides by the same session's
``raw`` replay at the same window (replayed even when not asked for, since every ratio needs
it); ``cached_cost`` is an object with one entry per cache model (input-token equivalents,
see :mod:`mtagent.replay.cost`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mtagent.config import Settings
from mtagent.replay.cost import DEFAULT_CACHE_MODELS, lower_bounds
from mtagent.replay.probes import build_probes
from mtagent.replay.simulate import DEFAULT_WINDOW, ReplayResult, simulate, sum_by_key
from mtagent.replay.trajectory import Trajectory
from mtagent.replay.work_state import WorkStateCount


@dataclass(slots=True)
class SessionReplay:
    """All strategies' results for one session at one window."""

    label: str
    trajectory: Trajectory
    window: int
    results: dict[str, ReplayResult]

    @property
    def raw(self) -> ReplayResult:
        return self.results["raw"]

    @property
    def bounds(self) -> dict[str, list[float]]:
        """Per cache model, the session's two cost floors ``[b1, b2]`` (:func:`~mtagent.replay.cost.lower_bounds`,
        from the raw replay's requests): every token written once; that + a 10K working context re-read."""
        requests = [(t.view_tokens, t.shared_tokens) for t in self.raw.turns]
        return {m.name: [round(b, 1) for b in lower_bounds(requests, m)] for m in DEFAULT_CACHE_MODELS}


def session_label(path: Path, index: int, count: int) -> str:
    return f"{path.name}#{index}" if count > 1 else path.name


class ReplayProgress(Protocol):
    """Told as a long replay advances (the CLI draws a progress bar from it)."""

    def file_started(self, path: Path, index: int, count: int) -> None: ...

    def file_loaded(self, path: Path, sessions: int, replays: int) -> None: ...

    def replay_done(self, label: str, strategy: str) -> None: ...


def replay_session(
    traj: Trajectory,
    label: str,
    strategies: Sequence[str],
    window: int = DEFAULT_WINDOW,
    settings: Settings | None = None,
    summary_price: float = 1.0,
) -> SessionReplay:
    settings = settings or Settings()
    probes = build_probes(traj)
    results = {}
    for name in replay_names(strategies):
        results[name] = simulate(traj, name, window=window, probes=probes, label=label, settings=settings,
                                 summary_price=summary_price)
    return SessionReplay(label, traj, window, results)


def replay_names(strategies: Sequence[str]) -> list[str]:
    """What actually runs: ``raw`` first (every ratio needs it), then the asked strategies."""
    return ["raw", *[s for s in strategies if s != "raw"]]


def row(session: SessionReplay, strategy: str) -> dict[str, Any]:
    r = session.results[strategy]
    raw = session.raw.cumulative_tokens
    return {
        "file": session.label,
        "format": r.format,
        "strategy": strategy,
        "window": r.window,
        "turns": len(r.turns),
        "cumulative_tokens": r.cumulative_tokens,
        "ratio_to_raw": round(r.cumulative_tokens / raw, 4) if raw else None,
        "cached_cost": {k: round(v, 1) for k, v in r.cached_cost.items()},
        "peak_tokens": r.peak_tokens,
        "compactions": r.compactions,
        "summary_calls": r.summary_calls,
        "violations": r.violations,
        "overflows": r.overflows,
        "retention": round(r.retention, 4) if r.retention is not None else None,
        "work_state": r.work_state.as_dict(),
        "summary_output_tokens": r.summary_output_tokens,
        "bounds": session.bounds,
        "recorded_input_tokens": r.recorded_input,
    }


def rows(sessions: Iterable[SessionReplay], strategies: Sequence[str]) -> list[dict[str, Any]]:
    return [row(s, name) for s in sessions for name in strategies]


def overall_rows(table_rows: Sequence[dict[str, Any]], strategies: Sequence[str]) -> list[dict[str, Any]]:
    """One row per strategy across every session: sums, the ratio of the sums, mean retention.

    ``ratio_to_raw`` divides the strategy's total tokens by raw's total over the same sessions,
    so long sessions weigh what they cost (a mean of per-session ratios would not).
    """
    out = []
    raw_by_file = {r["file"]: r["cumulative_tokens"] for r in table_rows if r["strategy"] == "raw"}
    for name in strategies:
        group = [r for r in table_rows if r["strategy"] == name]
        if not group:
            continue
        tokens = sum(r["cumulative_tokens"] for r in group)
        raw = sum(raw_by_file.get(r["file"], 0) for r in group)
        kept = [r["retention"] for r in group if r["retention"] is not None]
        costs = sum_by_key(r["cached_cost"] for r in group)
        bounds: dict[str, list[float]] = {}
        work = WorkStateCount()
        for r in group:
            for model, pair in (r.get("bounds") or {}).items():
                mine = bounds.setdefault(model, [0.0, 0.0])
                mine[0], mine[1] = mine[0] + pair[0], mine[1] + pair[1]
            work.merge(WorkStateCount.from_dict(r.get("work_state")))
        out.append({
            "strategy": name, "sessions": len(group), "turns": sum(r["turns"] for r in group),
            "cumulative_tokens": tokens, "ratio_to_raw": round(tokens / raw, 4) if raw else None,
            "cached_cost": {k: round(v, 1) for k, v in costs.items()},
            "peak_tokens": max(r["peak_tokens"] for r in group),
            "overflows": sum(r["overflows"] for r in group),
            "summary_calls": sum(r["summary_calls"] for r in group),
            "violations": sum(r["violations"] for r in group),
            "retention": round(sum(kept) / len(kept), 4) if kept else None,
            "work_state": work.as_dict(),
            "summary_output_tokens": sum(r.get("summary_output_tokens", 0) for r in group),
            "bounds": {m: [round(b, 1) for b in pair] for m, pair in bounds.items()},
        })
    return out
