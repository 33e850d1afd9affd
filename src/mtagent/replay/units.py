"""Replay work units: one (session × strategy × window × setting) each, run by any executor.

A unit names its session by :class:`SessionRef` — a path the worker reads (shared storage), the
file's bytes when it is small (so a Ray worker on another node needs no shared disk), or an
already-loaded trajectory. Workers keep the last few loaded files, so the strategies of one
session do not re-parse it. :func:`replay_parallel` turns the outcomes back into the same
:class:`~mtagent.replay.report.SessionReplay` list the serial replay builds, in file, session
and strategy order; a session any of whose units failed (twice) is left out and its failures
are returned for the caller to report.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from mtagent.config import Settings
from mtagent.replay.executors.base import Executor, Outcome, UnitError
from mtagent.replay.formats import load_trajectories
from mtagent.replay.probes import ProbeSet, build_probes
from mtagent.replay.report import ReplayProgress, SessionReplay, replay_names, session_label
from mtagent.replay.simulate import ReplayResult, simulate
from mtagent.replay.trajectory import Trajectory

INLINE_BYTES_MAX = 4 * 1024 * 1024  # files up to this size travel with the unit instead of by path
_LOADED_FILES = 4


@dataclass(frozen=True, slots=True)
class SessionRef:
    """Where a worker finds one session: ``path`` (+ its bytes when small) and the index in the file."""

    path: str
    index: int = 0
    fmt: str | None = None
    data: bytes | None = None
    trajectory: Trajectory | None = None


@dataclass(frozen=True, slots=True)
class ReplayUnit:
    session: SessionRef
    label: str
    strategy: str
    window: int
    settings: Settings
    summary_price: float = 1.0  # summary calls at this share of the main model's price


@dataclass(slots=True)
class UnitFailure:
    """A unit that failed twice: what it was and why (printed by the CLI, listed by ``--json``)."""

    label: str
    strategy: str
    error: UnitError
    attempts: int

    def as_dict(self) -> dict[str, object]:
        return {"file": self.label, "strategy": self.strategy, "error": str(self.error), "attempts": self.attempts}


def refs_for(path: Path, count: int, fmt: str | None, *, inline: bool) -> list[SessionRef]:
    data = path.read_bytes() if inline and path.stat().st_size <= INLINE_BYTES_MAX else None
    return [SessionRef(str(path), i, fmt, data) for i in range(count)]


@lru_cache(maxsize=_LOADED_FILES)
def _load_file(path: str, fmt: str | None, data: bytes | None) -> tuple[tuple[Trajectory, ProbeSet], ...]:
    if data is None:
        trajs = load_trajectories(path, fmt)
    else:  # the bytes under the file's own name: format detection may look at the suffix
        with tempfile.TemporaryDirectory(prefix="mtagent-unit-") as tmp:
            local = Path(tmp) / Path(path).name
            local.write_bytes(data)
            trajs = load_trajectories(local, fmt)
            for t in trajs:
                t.meta["source"] = path
    return tuple((t, build_probes(t)) for t in trajs)


def load_session(ref: SessionRef) -> tuple[Trajectory, ProbeSet]:
    if ref.trajectory is not None:
        return ref.trajectory, build_probes(ref.trajectory)
    loaded = _load_file(ref.path, ref.fmt, ref.data)  # cached by the bytes themselves when they travel
    if ref.index >= len(loaded):
        raise ValueError(f"{ref.path} holds {len(loaded)} session(s), not {ref.index + 1}")
    return loaded[ref.index]


def run_replay_unit(unit: ReplayUnit) -> ReplayResult:
    """The worker side: one strategy over one session (module-level, so it pickles by name)."""
    traj, probes = load_session(unit.session)
    return simulate(traj, unit.strategy, window=unit.window, probes=probes, label=unit.label, settings=unit.settings,
                    summary_price=unit.summary_price)


def replay_parallel(
    paths: Sequence[Path],
    strategies: Sequence[str],
    window: int,
    fmt: str | None,
    settings: Settings,
    executor: Executor,
    progress: ReplayProgress | None = None,
    *,
    run: Callable[[ReplayUnit], ReplayResult] = run_replay_unit,
    summary_price: float = 1.0,
) -> tuple[list[SessionReplay], list[UnitFailure]]:
    """Every session of ``paths`` × ``raw`` and ``strategies``, on ``executor``, in serial order."""
    names = replay_names(strategies)
    inline = executor.name != "local"
    sessions: list[tuple[Path, int, str, Trajectory]] = []
    units: list[ReplayUnit] = []
    for i, path in enumerate(paths):
        if progress is not None:
            progress.file_started(path, i, len(paths))
        trajs = load_trajectories(path, fmt)
        for ref, traj in zip(refs_for(path, len(trajs), fmt, inline=inline), trajs, strict=True):
            label = session_label(path, ref.index, len(trajs))
            sessions.append((path, len(trajs), label, traj))
            units += [ReplayUnit(ref, label, name, window, settings, summary_price) for name in names]
    results: list[Outcome] = []
    for outcome in executor.map(run, units):
        session_index, slot = divmod(outcome.index, len(names))
        path, count, label, _ = sessions[session_index]
        if progress is not None and slot == 0 and (session_index == 0 or sessions[session_index - 1][0] != path):
            progress.file_started(path, paths.index(path), len(paths))
            progress.file_loaded(path, count, count * len(names))
        if progress is not None:
            progress.replay_done(label, names[slot])
        results.append(outcome)
    out: list[SessionReplay] = []
    failures: list[UnitFailure] = []
    for session_index, (_, _, label, traj) in enumerate(sessions):
        group = results[session_index * len(names):(session_index + 1) * len(names)]
        failed = [o for o in group if not o.ok]
        failures += [UnitFailure(label, o.unit.strategy, o.error, o.attempts) for o in failed]
        if not failed:
            out.append(SessionReplay(label, traj, window, {o.unit.strategy: o.value for o in group}))
    return out, failures
