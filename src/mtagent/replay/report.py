"""Run replays over files and turn results into rows (shared by the CLI and the benchmark).

A row is one (session, strategy, window): ``ratio_to_raw`` divides by the same session's
``raw`` replay at the same window (replayed even when not asked for, since every ratio needs
it); ``cached_cost`` is an object with one entry per cache model (input-token equivalents,
see :mod:`mtagent.replay.cost`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtagent.config import Settings
from mtagent.replay.formats import load_trajectories
from mtagent.replay.probes import build_probes
from mtagent.replay.simulate import DEFAULT_WINDOW, ReplayResult, simulate
from mtagent.replay.trajectory import Trajectory


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


def session_label(path: Path, index: int, count: int) -> str:
    return f"{path.name}#{index}" if count > 1 else path.name


def replay_session(
    traj: Trajectory,
    label: str,
    strategies: Sequence[str],
    window: int = DEFAULT_WINDOW,
    settings: Settings | None = None,
) -> SessionReplay:
    settings = settings or Settings()
    probes = build_probes(traj)
    names = ["raw", *[s for s in strategies if s != "raw"]]
    results = {
        name: simulate(traj, name, window=window, probes=probes, label=label, settings=settings) for name in names
    }
    return SessionReplay(label, traj, window, results)


def replay_files(
    paths: Iterable[str | Path],
    strategies: Sequence[str],
    window: int = DEFAULT_WINDOW,
    fmt: str | None = None,
    settings: Settings | None = None,
) -> list[SessionReplay]:
    settings = settings or Settings()
    out: list[SessionReplay] = []
    for path in map(Path, paths):
        sessions = load_trajectories(path, fmt)
        for i, traj in enumerate(sessions):
            out.append(replay_session(traj, session_label(path, i, len(sessions)), strategies, window, settings))
    return out


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
        "recorded_input_tokens": r.recorded_input,
    }


def rows(sessions: Iterable[SessionReplay], strategies: Sequence[str]) -> list[dict[str, Any]]:
    return [row(s, name) for s in sessions for name in strategies]
