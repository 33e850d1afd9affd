"""Replay comparison in the UI: pick a recorded trajectory, strategies and a window; compare.

The trajectories offered are this home's mtagent sessions and the files under the folders the
user passed to ``mtagent ui --replay-dir`` — nothing else on the machine can be named, because a
source is an index into those lists, never a path typed into a form. The numbers are exactly
``mtagent replay``'s (:func:`mtagent.replay.units.replay_parallel` and :func:`row`); results are
cached per (file version, strategies, window) since a replay costs seconds of CPU.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent.config import Settings
from mtagent.errors import ReplayFormatError, UsageError
from mtagent.replay.names import STRATEGY_NAMES
from mtagent.ui.catalog import Catalog

TRAJECTORY_SUFFIXES = (".jsonl", ".json", ".traj", ".yaml", ".yml", ".md")
MAX_LISTED_FILES = 500
CACHED_REPLAYS = 8
MIN_WINDOW = 1024


@dataclass(slots=True, frozen=True)
class Source:
    """A trajectory the page can replay; ``ref`` is what the form sends back."""

    ref: str
    label: str
    path: Path


def _listed(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    found = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in TRAJECTORY_SUFFIXES
                   and p.name not in ("README.md", "FORMATS.md"))
    return found[:MAX_LISTED_FILES]


def list_sources(catalog: Catalog, roots: Sequence[Path]) -> list[Source]:
    """mtagent sessions first (newest first), then each replay folder's files."""
    out: list[Source] = []
    for project in catalog.projects():
        for entry in catalog.sessions(project):
            out.append(Source(f"session:{project}:{entry.key}", f"mtagent session {entry.key} ({project})", entry.path))
    for i, root in enumerate(roots):
        base = root if root.is_dir() else root.parent
        for path in _listed(root):
            rel = path.relative_to(base).as_posix()
            out.append(Source(f"dir:{i}:{rel}", f"{root.name}/{rel}" if root.is_dir() else rel, path))
    return out


def resolve_source(catalog: Catalog, roots: Sequence[Path], ref: str) -> Source:
    """The source ``ref`` names; a file outside the offered ones is refused."""
    kind, _, rest = ref.partition(":")
    if kind == "session":
        project, _, key = rest.partition(":")
        path = catalog.transcript_path(project, key)
        return Source(ref, f"mtagent session {key}", path)
    if kind == "dir":
        index, _, rel = rest.partition(":")
        if not index.isdigit() or int(index) >= len(roots):
            raise UsageError(f"unknown replay source {ref!r}; pick one from the list")
        root = roots[int(index)]
        base = (root if root.is_dir() else root.parent).resolve()
        target = (base / rel).resolve()
        if (base not in target.parents and target != base) or not target.is_file() \
                or (root.is_file() and target != root.resolve()):
            raise UsageError(f"replay source {ref!r} is not one of the offered files")
        return Source(ref, rel, target)
    raise UsageError(f"unknown replay source {ref!r}; pick one from the list")


def check_choice(strategies: Sequence[str], window: int) -> list[str]:
    unknown = [s for s in strategies if s not in STRATEGY_NAMES]
    if unknown:
        raise UsageError(f"unknown strategy {unknown[0]!r}; choose from {', '.join(STRATEGY_NAMES)}")
    if window < MIN_WINDOW:
        raise UsageError(f"window {window} is too small; use at least {MIN_WINDOW} tokens")
    names = ["raw", *[s for s in dict.fromkeys(strategies) if s != "raw"]]
    return names


@dataclass(slots=True)
class Comparison:
    """Per-call series and totals of each strategy for each session in the file."""

    source: Source
    window: int
    strategies: list[str]
    sessions: list[Any]  # mtagent.replay.report.SessionReplay
    rows: list[list[dict[str, Any]]]  # per session: one totals row per strategy


@dataclass(slots=True)
class ReplayRunner:
    """Runs replays (in a worker thread of the server) and keeps the last few results."""

    settings: Settings
    _cache: OrderedDict[tuple[Any, ...], Comparison] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def compare(self, source: Source, strategies: Sequence[str], window: int) -> Comparison:
        names = check_choice(strategies, window)
        stat = source.path.stat()
        key = (str(source.path), stat.st_size, stat.st_mtime_ns, tuple(names), window)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        from mtagent.replay.executors.local import LocalExecutor  # the engine and LangChain load only here
        from mtagent.replay.report import row
        from mtagent.replay.units import replay_parallel

        sessions, failures = replay_parallel([source.path], names, window, None, self.settings, LocalExecutor(1))
        if failures:  # a unit that failed twice: the page says which and why
            failed = failures[0]
            raise ReplayFormatError(f"cannot replay {failed.label} with {failed.strategy}: {failed.error}")
        result = Comparison(source, window, names, sessions, [[row(s, n) for n in names] for s in sessions])
        with self._lock:
            self._cache[key] = result
            while len(self._cache) > CACHED_REPLAYS:
                self._cache.popitem(last=False)
        return result
