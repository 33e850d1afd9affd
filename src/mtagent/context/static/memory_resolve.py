"""Which long-term facts are in force: namespaces, TTL and conflicts by key (spec 003 v1.2).

Facts live in four namespaces (global, user, project, team). Before they are injected:

* an **expired** fact (its ``expires`` has passed) is left out and listed as expired;
* facts that share a **key** are one conflict with one winner — the higher authority wins
  (team/org > project > user > global memory, or the fact's own ``authority``), and between
  equals the newer fact supersedes (its ``at`` time; file order when a fact has none).
  Every such conflict is returned as a spec 003 :class:`Conflict` for the ContextPlan.

Namespaces are isolated: a namespace's file is only ever read for that namespace, and a fact
in one never changes another's file; only the injected set is resolved across them.
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass, field
from pathlib import Path

from mtagent.context.static import memory
from mtagent.context.static.authority import Conflict
from mtagent.context.static.memory_meta import authority_rank, utcnow

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


@dataclass(slots=True)
class MemoryResolution:
    """The facts in force per namespace, and what was left out and why."""

    active: dict[str, list[memory.MemoryEntry]] = field(default_factory=dict)
    expired: list[memory.MemoryEntry] = field(default_factory=list)
    superseded: list[memory.MemoryEntry] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)

    def texts(self, namespace: str) -> list[str]:
        return [e.text for e in self.active.get(namespace, [])]


def entry_id(entry: memory.MemoryEntry) -> str:
    return f"memory:{entry.scope}:{entry.number}"


def _namespaces(project_root: str | os.PathLike[str] | None) -> tuple[memory.Scope, ...]:
    return memory.SCOPES if project_root is not None else ("global", "user")


def resolve(project_root: str | os.PathLike[str] | None, *, index_max_lines: int | None = None,
            now: _dt.datetime | None = None, home: Path | None = None) -> MemoryResolution:
    """Read every namespace once and resolve expiry and key conflicts (see module docstring)."""
    now = now or utcnow()
    result = MemoryResolution()
    keyed: dict[str, list[tuple[memory.MemoryEntry, int]]] = {}
    order = 0
    for namespace in _namespaces(project_root):
        file = memory.memory_file(namespace, project_root, index_max_lines=index_max_lines, home=home)
        live: list[memory.MemoryEntry] = []
        for entry in file.entries():
            if entry.obsolete or (file.max_lines is not None and entry.line_index >= file.max_lines):
                continue
            if entry.meta.expired(now):
                result.expired.append(entry)
                continue
            live.append(entry)
            if entry.meta.key:
                order += 1
                keyed.setdefault(entry.meta.key, []).append((entry, order))
        result.active[namespace] = live
    losers: set[tuple[str, int]] = set()
    for key, group in keyed.items():
        if len(group) < 2:
            continue
        ranked = sorted(group, key=lambda pair: (authority_rank(pair[0].meta, pair[0].scope),
                                                 pair[0].meta.at or _EPOCH, pair[1]), reverse=True)
        winner = ranked[0][0]
        lost = [e for e, _ in ranked[1:]]
        losers.update((e.scope, e.number) for e in lost)
        result.superseded += lost
        reasons = []
        for e in lost:
            why = ("higher authority" if authority_rank(winner.meta, winner.scope) > authority_rank(e.meta, e.scope)
                   else "newer fact on the same key")
            reasons.append(f"{entry_id(winner)} ({winner.text!r}) supersedes {entry_id(e)} ({e.text!r}): {why}")
        result.conflicts.append(Conflict(f"key:{key}", entry_id(winner), tuple(entry_id(e) for e in lost),
                                         "; ".join(reasons)))
    for namespace, entries in result.active.items():
        result.active[namespace] = [e for e in entries if (e.scope, e.number) not in losers]
    return result
