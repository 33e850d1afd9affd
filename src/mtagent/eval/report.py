"""What an evaluation shows: per-policy figures and paired comparisons, from the results JSONL.

The results file is the truth (a UI page, ``--json`` and the table all read it): the latest
record of each (task, policy) pair counts. Per policy: tasks, solved, cost (cache-aware, at the
price row the worker recorded; summary and other side calls apart), tokens, calls, compactions,
recalls, wall time and the tasks whose turn ended at the step limit (a loop, not an answer). Pairs
whose run errored (an endpoint down, a crash) are left out of the
comparison — an outage is not a failure to solve — and counted as errors.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from mtagent.agent.batch import result_records
from mtagent.eval.stats import Paired, compare, wilson
from mtagent.pricing import Usage, cost_usd

COMPARED = {"done", "setup_failed"}


@dataclass(slots=True)
class PolicySummary:
    policy: str
    tasks: int = 0
    solved: int = 0
    errors: int = 0
    solve_low: float = 0.0
    solve_high: float = 1.0
    cost_usd: float | None = None  # None: no record had a price row
    side_cost_usd: float | None = None
    unpriced: int = 0
    tokens: int = 0
    side_tokens: int = 0
    cache_read: int = 0
    calls: int = 0
    side_calls: int = 0
    compactions: int = 0
    microcompactions: int = 0
    recalls: int = 0
    wall_s: float = 0.0
    step_limit: list[str] = field(default_factory=list)  # tasks whose turn ended at agent.max_steps (a loop?)

    @property
    def solve_rate(self) -> float:
        return self.solved / self.tasks if self.tasks else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "solve_rate": round(self.solve_rate, 4)}


def load_records(results: Path) -> list[dict[str, Any]]:
    """The latest record of each (task, policy, chain) in file order of first appearance."""
    latest: dict[tuple[str, str, int], dict[str, Any]] = {}
    for record in result_records(results):
        if isinstance(record.get("task"), str) and isinstance(record.get("policy"), str):
            latest[(record["task"], record["policy"], int(record.get("chain") or 1))] = record
    return list(latest.values())


def _add_cost(total: float | None, usage: Usage, prices: Any) -> float | None:
    cost = cost_usd(usage, prices if isinstance(prices, dict) else None)
    return total if cost is None else (total or 0.0) + cost


def summarize(records: list[dict[str, Any]], policies: list[str] | None = None) -> list[PolicySummary]:
    """One summary per policy (in ``policies`` order, else first appearance)."""
    names = policies or list(dict.fromkeys(r["policy"] for r in records))
    out = {name: PolicySummary(name) for name in names}
    for r in records:
        s = out.get(r["policy"])
        if s is None:
            continue
        if r.get("status") not in COMPARED:
            s.errors += 1
            continue
        main, side = Usage.from_dict(r.get("main")), Usage.from_dict(r.get("side"))
        s.tasks += 1
        s.solved += bool(r.get("solved"))
        s.unpriced += not isinstance(r.get("prices"), dict)
        s.cost_usd = _add_cost(s.cost_usd, main, r.get("prices"))
        s.side_cost_usd = _add_cost(s.side_cost_usd, side, r.get("prices"))
        s.tokens += main.tokens
        s.side_tokens += side.tokens
        s.cache_read += main.cache_read
        s.calls += main.calls
        s.side_calls += side.calls
        s.compactions += int(r.get("compactions") or 0)
        s.microcompactions += int(r.get("microcompactions") or 0)
        s.recalls += int(r.get("recalls") or 0)
        if r.get("turn_status") == "max_steps":
            s.step_limit.append(r["task"])
        s.wall_s += float(r.get("wall_s") or 0.0)
    for s in out.values():
        s.solve_low, s.solve_high = (round(x, 4) for x in wilson(s.solved, s.tasks))
        s.wall_s = round(s.wall_s, 2)
        for name in ("cost_usd", "side_cost_usd"):
            value = getattr(s, name)
            setattr(s, name, None if value is None else round(value, 6))
    return list(out.values())


def solved_by(records: list[dict[str, Any]], policy: str) -> dict[str, bool]:
    return {r["task"]: bool(r.get("solved")) for r in records if r["policy"] == policy and r.get("status") in COMPARED}


def paired(records: list[dict[str, Any]], policies: list[str]) -> list[Paired]:
    """Every pair of policies, in the order given."""
    return [compare(a, b, solved_by(records, a), solved_by(records, b)) for a, b in combinations(policies, 2)]


def task_matrix(records: list[dict[str, Any]], policies: list[str]) -> list[dict[str, Any]]:
    """Per task: each policy's outcome (solved / failed / error) — where two policies part ways."""
    rows: dict[str, dict[str, Any]] = {}
    for r in records:
        row = rows.setdefault(r["task"], {"task": r["task"]})
        status = r.get("status")
        row[r["policy"]] = "error" if status not in COMPARED else ("solved" if r.get("solved") else "failed")
    return [{**{p: "-" for p in policies}, **row} for row in rows.values()]


def report(results: Path, policies: list[str] | None = None, chain: int | None = None) -> dict[str, Any]:
    """The whole report as plain data (what ``--json`` prints and the UI page shows); ``chain``
    keeps the runs of one chain length when a results file holds several."""
    records = [r for r in load_records(results) if chain is None or int(r.get("chain") or 1) == chain]
    names = policies or list(dict.fromkeys(r["policy"] for r in records))
    models = sorted({r["model"] for r in records if isinstance(r.get("model"), str)})
    return {"results": str(results), "policies": [s.as_dict() for s in summarize(records, names)],
            "paired": [p.as_dict() for p in paired(records, names)], "tasks": task_matrix(records, names),
            "models": models}
