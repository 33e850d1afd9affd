"""The hand-off ledger: the work state the engine knows from the transcript, as data.

A :class:`HandoffLedger` is what a compaction must never lose and the engine can state exactly
without a model: the first user request and the last one verbatim and whole, every constraint,
the plan with its statuses, files read / created / edited / deleted, the last verification, failed
commands with their error tail, the latest error line, the rule files in force, tools loaded and open
subagent tasks. It is read from messages (:mod:`.extract`), rendered into the hand-off (:mod:`.render`), stored
as data on the ``compact_boundary`` record and the summary message, and merged across
compactions by :func:`merge_ledgers` — the first goal always stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mtagent.context.ledger.workplan import WorkPlan, plan_from_dict

CREATED, EDITED, DELETED = "created", "edited", "deleted"
MAX_FAILED = 8
MAX_ERROR_CHARS = 300  # a stored latest error line (a hostile record's is one clipped line)


@dataclass(slots=True)
class FailedCommand:
    """A command that failed, and the lines of its output that say why."""

    command: str
    error_tail: str = ""


@dataclass(slots=True)
class HandoffLedger:
    """Work state read from the transcript (see the module docstring). Lists are oldest first.

    ``requests`` are the user's requests after the first (``goal``), whole; ``files_changed`` maps a
    path to ``(kind, why)`` with kind ``created``, ``edited`` or ``deleted``; ``open_tasks`` maps a
    subagent call id to its description.
    """

    goal: str = ""
    requests: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    plan: WorkPlan | None = None
    files_read: list[str] = field(default_factory=list)
    files_changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    verification: str = ""
    failed_commands: list[FailedCommand] = field(default_factory=list)
    # The newest line a tool result showed that reports an error (facts.error_line), verbatim — also
    # from a command that exited 0 (a crash behind `| tail`) or from an offloaded result's full text.
    latest_error: str = ""
    rules: list[str] = field(default_factory=list)
    tools_loaded: list[str] = field(default_factory=list)
    open_tasks: dict[str, str] = field(default_factory=dict)
    # What a stretch of messages ended (not stored): commands that passed after failing, subagent
    # tasks that returned. A merge drops those from the earlier ledger.
    passed_commands: set[str] = field(default_factory=set)
    closed_tasks: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ``compact_boundary`` record (JSON)."""
        return {
            "goal": self.goal, "requests": list(self.requests), "constraints": list(self.constraints),
            "plan": self.plan.to_dict() if self.plan is not None else None,
            "files_read": list(self.files_read),
            "files_changed": [[path, kind, why] for path, (kind, why) in self.files_changed.items()],
            "verification": self.verification,
            "failed_commands": [[f.command, f.error_tail] for f in self.failed_commands],
            "latest_error": self.latest_error,
            "rules": list(self.rules), "tools_loaded": list(self.tools_loaded),
            "open_tasks": [[key, text] for key, text in self.open_tasks.items()],
        }


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _rows(value: Any, width: int) -> list[list[str]]:
    if not isinstance(value, list):
        return []
    return [[str(x) for x in row[:width]] for row in value
            if isinstance(row, list) and len(row) >= width and all(isinstance(x, str) for x in row[:width])]


def ledger_from_dict(data: Any) -> HandoffLedger | None:
    """A ledger stored by :meth:`HandoffLedger.to_dict`; None when ``data`` is not one. A
    transcript line is hostile: every field is type-checked and wrong ones are left empty."""
    if not isinstance(data, Mapping):
        return None
    goal, verification, error = data.get("goal"), data.get("verification"), data.get("latest_error")
    return HandoffLedger(
        goal=goal if isinstance(goal, str) else "",
        requests=_strings(data.get("requests")), constraints=_strings(data.get("constraints")),
        plan=plan_from_dict(data.get("plan")), files_read=_strings(data.get("files_read")),
        files_changed={p: (k, w) for p, k, w in _rows(data.get("files_changed"), 3) if k in (CREATED, EDITED, DELETED)},
        verification=verification if isinstance(verification, str) else "",
        failed_commands=[FailedCommand(c, t) for c, t in _rows(data.get("failed_commands"), 2)],
        latest_error=" ".join(error.split())[:MAX_ERROR_CHARS] if isinstance(error, str) else "",
        rules=_strings(data.get("rules")), tools_loaded=_strings(data.get("tools_loaded")),
        open_tasks={k: t for k, t in _rows(data.get("open_tasks"), 2)},
    )


def _union(old: list[str], new: list[str]) -> list[str]:
    out = list(old)
    for item in new:
        if item not in out:
            out.append(item)
    return out


def change_file(files: dict[str, tuple[str, str]], path: str, kind: str, why: str = "") -> None:
    """Record a change of ``path``: a file created and then edited stays created, an edit or a
    write after a delete makes it created again, and the newest change moves it last."""
    old = files.pop(path, None)
    if old is not None and kind == EDITED and old[0] in (CREATED, DELETED):
        kind = CREATED
    files[path] = (kind, why or (old[1] if old is not None and kind != DELETED else ""))


def merge_ledgers(old: HandoffLedger | None, new: HandoffLedger) -> HandoffLedger:
    """``old`` (an earlier hand-off's ledger) followed by ``new`` (what happened since).

    The first goal stands — a later request never replaces it; requests, constraints, files read,
    rules and tools loaded are united in order; the newest plan, verification, error line and file
    change win;
    a failed command that later passed is dropped; a subagent task open before is closed by its
    result.
    """
    if old is None:
        return new
    merged = HandoffLedger(goal=old.goal or new.goal)
    requests = list(old.requests)
    if old.goal and new.goal and new.goal != old.goal:
        requests.append(new.goal)  # the stretch's first request was a later request of the session
    for request in new.requests:
        if not requests or requests[-1] != request:
            requests.append(request)
    merged.requests = requests
    merged.constraints = _union(old.constraints, new.constraints)
    merged.plan = new.plan if new.plan is not None else old.plan
    merged.files_read = [p for p in old.files_read if p not in new.files_read] + list(new.files_read)
    merged.files_changed = dict(old.files_changed)
    for path, (kind, why) in new.files_changed.items():
        change_file(merged.files_changed, path, kind, why)
    merged.verification = new.verification or old.verification
    merged.latest_error = new.latest_error or old.latest_error
    merged.failed_commands = [*[f for f in old.failed_commands if f.command not in new.passed_commands],
                              *new.failed_commands][-MAX_FAILED:]
    merged.rules = _union(old.rules, new.rules)
    merged.tools_loaded = _union(old.tools_loaded, new.tools_loaded)
    merged.open_tasks = {k: v for k, v in old.open_tasks.items() if k not in new.closed_tasks}
    merged.open_tasks.update(new.open_tasks)
    return merged
