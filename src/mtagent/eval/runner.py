"""Plan and run an evaluation: every task under every policy, interleaved, resumable, on an executor.

Units are ordered task by task, and the policies' order rotates from one task (or chain) to the
next, so a slow stretch of a shared endpoint — or a busy machine — falls on every policy alike
instead of on whichever ran last. Records are appended to the results JSONL as each unit
finishes; a re-run skips every (task, policy, chain length) pair already recorded as done, so a
stopped evaluation resumes where it stopped (a pair that errored is run again).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mtagent.agent.batch import append_result, result_records
from mtagent.eval.policies import Policy
from mtagent.eval.tasks import EvalTask
from mtagent.eval.worker import DONE, EvalUnit, base_record, run_unit
from mtagent.replay.executors import Executor

FINISHED = {DONE, "setup_failed"}
PairKey = tuple[str, str, int]  # task id, policy name, chain length
Progress = Callable[[int, int], None]


def finished_pairs(results: Path) -> set[PairKey]:
    """Pairs recorded as finished in ``results`` (torn or foreign lines are ignored)."""
    return {(record["task"], record["policy"], record["chain"]) for record in result_records(results)
            if record.get("status") in FINISHED and isinstance(record.get("task"), str)
            and isinstance(record.get("policy"), str) and isinstance(record.get("chain"), int)}


def plan_units(tasks: list[EvalTask], policies: list[Policy], scratch: Path, *, model: str | None = None,
               base_url: str | None = None, chain: int = 1, done: set[PairKey] | None = None,
               overrides: dict[str, dict[str, Any]] | None = None) -> tuple[list[EvalUnit], int]:
    """The units still to run, interleaved, and how many (task, policy) pairs were already done."""
    if chain < 1:
        raise ValueError("chain must be at least 1")
    done = done or set()
    env = {k: v for k, v in os.environ.items() if k.startswith("MTAGENT_")}
    groups = [tuple(tasks[i:i + chain]) for i in range(0, len(tasks), chain)]
    units: list[EvalUnit] = []
    skipped = 0
    for index, group in enumerate(groups):
        shift = index % len(policies)
        for policy in policies[shift:] + policies[:shift]:
            if all((t.id, policy.name, chain) in done for t in group):
                skipped += len(group)
                continue
            units.append(EvalUnit(policy, group, str(scratch), model, base_url, env, dict(overrides or {}),
                                  f"p{policies.index(policy)}", chain))
    return units, skipped


def failed_records(unit: EvalUnit, error: str) -> list[dict[str, Any]]:
    """A unit that failed as a whole (after the executor's retry): one error record per task."""
    return [{**base_record(unit, t), "status": "error", "solved": False, "error": error[:2000]} for t in unit.tasks]


def run_units(units: Iterable[EvalUnit], executor: Executor, out: Path,
              worker: Callable[[EvalUnit], list[dict[str, Any]]] = run_unit,
              progress: Progress | None = None) -> list[dict[str, Any]]:
    """Run ``units``; every record is appended to ``out`` as its unit finishes (in unit order)."""
    records: list[dict[str, Any]] = []
    for outcome in executor.map(worker, list(units), progress):
        batch = outcome.value if outcome.ok else failed_records(outcome.unit, str(outcome.error))
        for record in batch:
            record["attempts"] = outcome.attempts
            append_result(out, record)
            records.append(record)
    return records
