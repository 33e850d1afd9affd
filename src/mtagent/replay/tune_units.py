"""``replay --tune`` on an executor: each session's raw replay and each (session × candidate) is a unit.

The merge walks the outcomes in unit order and adds them exactly as the serial loop of
:func:`mtagent.replay.tune.tune` does, so the floating-point sums — and so the chosen setting —
are the same on every executor. (``add`` is that module's ``add_result``, passed in so the two
modules do not import each other.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mtagent.config import Settings
from mtagent.errors import MTAgentError
from mtagent.replay.executors.base import Executor
from mtagent.replay.simulate import ReplayResult
from mtagent.replay.trajectory import Trajectory
from mtagent.replay.units import ReplayUnit, SessionRef, run_replay_unit


if TYPE_CHECKING:
    from mtagent.replay.tune import Score


class TuneFailed(MTAgentError):
    """A tuning replay failed twice; the scores would be incomparable without it."""


@dataclass(frozen=True, slots=True)
class _Labelled:
    ref: SessionRef
    label: str


def _ref(session: Trajectory | SessionRef) -> _Labelled:
    if isinstance(session, SessionRef):
        return _Labelled(session, f"{session.path}#{session.index}")
    return _Labelled(SessionRef(str(session.meta.get("source", "")), trajectory=session), str(session.meta.get("source", "")))


def tune_parallel(
    sessions: Sequence[Trajectory | SessionRef],
    settings: Settings,
    scores: list[Score],
    configured: list[Settings],
    *,
    window: int,
    cache_model: str,
    executor: Executor,
    add: Callable[[Score, Any, Any, str, bool], None],
    progress: Callable[[int, int], None] | None = None,
    run: Callable[[ReplayUnit], ReplayResult] = run_replay_unit,
) -> list[Score]:
    refs = [_ref(s) for s in sessions]
    per_session = 1 + len(configured)
    units = []
    for item in refs:
        units.append(ReplayUnit(item.ref, item.label, "raw", window, settings))
        units += [ReplayUnit(item.ref, item.label, "mtagent", window, cand) for cand in configured]
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
        add(scores[slot - 1], outcome.value, raw, cache_model, raw.peak_tokens >= raw.threshold)
        done += 1
        if progress is not None:
            progress(done, total)
    return scores
