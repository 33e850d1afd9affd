"""The worker side of ``mtagent eval``: one unit = one session under one policy, one or N tasks.

Each unit gets a fresh workspace under the scratch folder (``<scratch>/p<N>/<unit>/``, ``N`` the
policy's place on the command line — the model is shown this path, so it has the same length under
every policy): a
copy of a ``cwd`` task's folder or a clone of its repository at its commit, so policies never see
each other's edits. Recall indexes per project (a workspace path), and that project's stored
data from an earlier attempt is removed first, so a retried unit cannot recall its own past.

The session is opened the normal way (:meth:`AgentSession.create`, as ``mtagent batch`` does);
in a chain (``--chain N``) the tasks are consecutive turns of that one session, each in its own
sub-folder, and each task's check runs right after its turn. A record per task says whether the
check passed and what the turn used: main calls and tokens, side calls (summaries) apart, cache
reads, compactions, recalls and wall time.

A unit's session id (``eval-<slot>-<unit>``) and its message and boundary ids
(:func:`mtagent.session.ids.sequential_ids`) are fixed, not random or timed: recall results show them
to the model, and a few tokens' difference can move a compaction. With a deterministic model every
run and every executor sends byte-identical requests. A retried unit whose old session the store still
holds (a database keeps it; the files store's was removed with the workspace's data) gets a random id.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent import paths
from mtagent.agent.batch import APPROVALS, checkout
from mtagent.eval.checks import CommandOutcome, apply_patch, run_command
from mtagent.eval.lanes import lane
from mtagent.eval.metering import METER
from mtagent.eval.policies import Policy, merge_sections
from mtagent.eval.tasks import EvalTask
from mtagent.pricing import Usage, price_for, usage_of_messages, usage_of_transcript
from mtagent.session.ids import sequential_ids
from mtagent.session.store import shared_store

DONE = "done"
_TASK_LINE = re.compile(r"^TASK [A-Za-z0-9][A-Za-z0-9._-]*[ \t]*$", re.M)
CONTEXT_TEST_PREFIX = "context-test"
ModelResolver = Callable[[str | None], Any]


@dataclass(frozen=True, slots=True)
class EvalUnit:
    """What a worker needs: the policy, the task(s) of one session, where to work, the model."""

    policy: Policy
    tasks: tuple[EvalTask, ...]
    scratch: str
    model: str | None = None
    base_url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # --setting: over the tasks', under the policy
    slot: str = ""  # p0, p1, …: the policy's workspace folder (equal length, so paths tokenize alike)
    chain_length: int = 0  # --chain N (the last chain of a file may be shorter; its records still say N)

    @property
    def key(self) -> str:
        """The unit's folder name: its task id, or ``chain-<first>`` for a chain."""
        return f"chain-{self.tasks[0].id}" if self.chained else self.tasks[0].id

    @property
    def chain(self) -> int:
        return self.chain_length or len(self.tasks)

    @property
    def chained(self) -> bool:
        """Whether the tasks are turns of one session in sub-folders (``--chain`` above 1)."""
        return self.chain > 1


def resolve_model(spec: str | None) -> Any:
    """``context-test:`` builds the context-sensitive test model; any other spec goes to the session."""
    if spec is not None and spec.split(":", 1)[0] == CONTEXT_TEST_PREFIX:
        from mtagent.agent.context_model import ContextTestModel

        return ContextTestModel()
    return spec


def chained_prompt(task: EvalTask, folder: str) -> str:
    """The task's text, told which sub-folder of the chain's workspace it is about."""
    where = f"Work in the folder `{folder}`."
    headers = list(_TASK_LINE.finditer(task.prompt))
    if headers:  # the step language of the built-in suites: the folder goes in the (last) task's block
        at = headers[-1].end()
        return f"{task.prompt[:at]}\n{where}{task.prompt[at:]}"
    return f"{where}\n\n{task.prompt}"


def session_id_for(unit: EvalUnit) -> str:
    """``eval-<slot>-<unit key>``: the same on every run (equal length across policies, as the slot)."""
    key = re.sub(r"[^A-Za-z0-9._-]+", "-", unit.key).strip("-._")[:80] or "unit"
    return f"eval-{re.sub(r'[^A-Za-z0-9]+', '-', unit.slot or unit.policy.name)[:32]}-{key}"


def _forget(project: Path) -> None:
    """Remove what an earlier attempt stored for this workspace (its sessions, its recall index)."""
    for stored in (paths.history_dir(project), paths.project_state_dir(project)):  # this workspace's own only
        if stored.is_dir() and not stored.is_symlink():
            shutil.rmtree(stored)


def _workspace(task: EvalTask, parent: Path) -> Path:
    batch = task.batch
    if batch.repo:
        return checkout(batch, parent)
    dest = parent / batch.id
    shutil.copytree(str(batch.cwd), dest, symlinks=True)
    return dest


def _settings_for(unit: EvalUnit) -> dict[str, dict[str, Any]]:
    return merge_sections(*(t.settings for t in unit.tasks), unit.overrides, unit.policy.overlay)


def run_unit(unit: EvalUnit, resolve: ModelResolver = resolve_model) -> list[dict[str, Any]]:
    """Run the unit in a lane (:mod:`mtagent.eval.lanes`: the path the model sees does not depend on
    ``--scratch``), then keep its workspace under the scratch folder; one record per task (a task
    that could not run says why in ``error``)."""
    os.environ.update(unit.env)
    kept = Path(unit.scratch) / (unit.slot or unit.policy.name) / unit.key
    with lane() as where:
        root = where / (unit.slot or unit.policy.name) / unit.key
        records = _run_in(unit, root, resolve)
        if kept.exists():
            shutil.rmtree(kept)
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(root), str(kept))
    for record in records:
        if isinstance(record.get("workdir"), str):
            record["workdir"] = str(kept / Path(record["workdir"]).relative_to(root))
    return records


def _run_in(unit: EvalUnit, root: Path, resolve: ModelResolver) -> list[dict[str, Any]]:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    records: list[dict[str, Any]] = []
    spaces: dict[str, Path] = {}
    ready: list[EvalTask] = []
    for task in unit.tasks:
        base = base_record(unit, task)
        try:
            space = spaces[task.id] = _workspace(task, root)
        except (OSError, RuntimeError, ValueError) as exc:
            records.append({**base, "status": "error", "error": f"workspace: {str(exc)[:500]}"})
            continue
        if task.setup:
            setup = run_command(task.setup, space, task.setup_timeout)
            if not setup.ok:
                records.append({**base, "status": "setup_failed", "solved": False, "setup": setup.as_dict()})
                continue
        ready.append(task)
    if ready:
        records += _run_session(unit, ready, spaces, root, resolve)
    order = {t.id: i for i, t in enumerate(unit.tasks)}
    return sorted(records, key=lambda r: order[r["task"]])


def base_record(unit: EvalUnit, task: EvalTask) -> dict[str, Any]:
    return {"task": task.id, "policy": unit.policy.name, "chain": unit.chain, "unit": unit.key, "line": task.batch.line}


def _run_session(unit: EvalUnit, tasks: list[EvalTask], spaces: dict[str, Path], root: Path,
                 resolve: ModelResolver) -> list[dict[str, Any]]:
    from mtagent.config import load_settings

    project = root if unit.chained else spaces[tasks[0].id]
    _forget(project)
    settings = load_settings(project, overrides=_settings_for(unit) or None)
    model = resolve(unit.model or tasks[0].batch.model)
    sid: str | None = session_id_for(unit)
    if sid in shared_store(settings).sessions(paths.project_hash(project)):  # whatever the backend
        sid = None
    with sequential_ids(sid) if sid else contextlib.nullcontext():
        return _run_tasks(unit, tasks, spaces, project, settings, model, sid)


def _run_tasks(unit: EvalUnit, tasks: list[EvalTask], spaces: dict[str, Path], project: Path, settings: Any,
               model: Any, sid: str | None) -> list[dict[str, Any]]:
    from mtagent.agent.session import AgentSession

    METER.arm()
    records: list[dict[str, Any]] = []
    try:
        session = AgentSession.create(project, model=model, settings=settings, base_url=unit.base_url,
                                      approval=APPROVALS[tasks[0].batch.approval], session_id=sid)
    except Exception as exc:  # noqa: BLE001 — a model or store that cannot open fails every task alike
        METER.disarm()
        return [{**base_record(unit, t), "status": "error", "error": f"session: {str(exc)[:500]}"} for t in tasks]
    try:
        for task in tasks:
            prompt = chained_prompt(task, task.id) if unit.chained else task.prompt
            records.append(_run_task(unit, session, task, prompt, spaces[task.id]))
    finally:
        session.close()
        METER.disarm()
    return records


def _turn(session: Any, prompt: str) -> tuple[Any, list[Any], int]:
    from mtagent.agent.turns import run_unattended

    turn = run_unattended(session, prompt, "eval run: no one to ask")  # `ask` rules: denied, as in batch
    return turn.result, turn.messages, turn.model_calls


def _run_task(unit: EvalUnit, session: Any, task: EvalTask, prompt: str, space: Path) -> dict[str, Any]:
    base = base_record(unit, task)
    before_all = METER.snapshot()
    offset = _size(session)
    compactions, micro = session.stats.compactions, session.stats.microcompactions
    start = time.monotonic()
    try:
        result, messages, calls = _turn(session, prompt)
        status, error = result.status, None
    except Exception as exc:  # noqa: BLE001 — a failed turn is this task's outcome; the chain goes on
        messages, calls, status, error = [], 0, "error", f"{type(exc).__name__}: {str(exc)[:500]}"
    wall = time.monotonic() - start
    main = usage_of_transcript(session.transcript_path, offset) if offset is not None else usage_of_messages(messages)
    side = METER.snapshot().minus(before_all).minus(main)
    check = _check(task, space)
    record = {**base, "status": DONE if status != "error" else "error", "turn_status": status,
              "solved": bool(check is not None and check.ok), "check": check.as_dict() if check else None,
              "model": session.model_name, "session_id": session.session_id, "workdir": str(space),
              "calls": calls, "main": main.as_dict(), "side": side.as_dict(),
              "compactions": session.stats.compactions - compactions,
              "microcompactions": session.stats.microcompactions - micro,
              "recalls": sum(1 for m in messages if getattr(m, "type", "") == "ai"
                             for c in getattr(m, "tool_calls", None) or [] if c.get("name") == "recall"),
              "wall_s": round(wall, 3), "prices": _price(session)}
    if error:
        record["error"] = error
    return record


def _size(session: Any) -> int | None:
    """Where the transcript ends now (None: not a file — PostgreSQL — so the turn's messages count)."""
    try:
        return Path(session.transcript_path).stat().st_size
    except (OSError, AttributeError, TypeError):
        return None


def _check(task: EvalTask, space: Path) -> CommandOutcome | None:
    if task.check is None:
        return None
    if task.check_patch:
        patched = apply_patch(task.check_patch, space, task.check_timeout)
        if not patched.ok:
            return patched
    return run_command(task.check, space, task.check_timeout)


def _price(session: Any) -> dict[str, float] | None:
    """The price row of the session's model, kept with the record so a report prices offline."""
    row = price_for(session.model_name, session.settings.agent.prices)
    return dict(row) if row is not None else None


__all__ = ["DONE", "EvalUnit", "Usage", "chained_prompt", "resolve_model", "run_unit", "session_id_for"]
