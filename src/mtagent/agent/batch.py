"""``mtagent batch``: the agent on many tasks, one session each, on the replay executors.

A task file is JSONL, one task per line (blank lines and ``#`` lines are skipped)::

    {"id": "fix-1", "task": "make the tests pass", "cwd": "projects/a"}
    {"id": "fix-2", "task": "…", "repo": "repos/b.git", "commit": "3f2c1d0", "model": "scripted:s.json",
     "approval": "allow", "settings": {"agent": {"max_steps": 30}}}

The file is untrusted input: every line is checked before anything runs and each problem is
reported as ``line N: …`` (bad JSON, a missing or mistyped field, an unknown key, a duplicate id,
a ``cwd``/``repo``/script path that leaves the task file's folder — or ``--root`` —, a commit
that is not a plain ref). A ``repo`` task runs in a fresh clone checked out at ``commit`` under
the scratch folder, so tasks never touch each other's files.

Results are appended to an output JSONL as they arrive (in task order); on a re-run the tasks
already recorded as ``done`` are skipped — that is what makes a batch resumable.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mtagent import paths
from mtagent.errors import UsageError
from mtagent.trust import USER_ONLY_KEYS, security_keys_in

FIELDS = {"id", "task", "cwd", "repo", "commit", "model", "approval", "settings"}
APPROVALS = {"allow": "auto", "deny": "never"}
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
_COMMIT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$")
_URL = re.compile(r"^(https?|ssh|git)://[^\s]+$|^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$")
DONE = "done"


@dataclass(frozen=True, slots=True)
class BatchTask:
    """One validated line of a task file (paths already resolved and confined)."""

    id: str
    task: str
    line: int
    cwd: str | None = None
    repo: str | None = None
    commit: str | None = None
    model: str | None = None
    approval: str = "deny"
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TaskUnit:
    """What a worker needs: the task, where scratch clones go, and the MTAGENT_* environment."""

    task: BatchTask
    scratch: str
    env: dict[str, str] = field(default_factory=dict)


def _inside(base: Path, value: str, what: str) -> str:
    """``value`` resolved against ``base`` (symlinks followed); it must stay inside ``base``."""
    path = (base / value).resolve()
    if path != base and base not in path.parents:
        raise ValueError(f"{what} {value!r} leaves {base}; keep it inside that folder (or widen it with --root)")
    return str(path)


def _text(obj: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise ValueError(f"missing {key!r}")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key!r} must be a non-empty string")
    if "\x00" in value:
        raise ValueError(f"{key!r} contains a NUL byte")
    return value


def parse_line(obj: Any, line: int, base: Path) -> BatchTask:
    """One task object → a :class:`BatchTask`; a :class:`ValueError` says what is wrong with it."""
    if not isinstance(obj, dict):
        raise ValueError("a task must be a JSON object")
    unknown = sorted(set(obj) - FIELDS)
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}; fields are {', '.join(sorted(FIELDS))}")
    task = _text(obj, "task", required=True)
    task_id = _text(obj, "id") or "t" + hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:12]
    if not _ID.match(task_id):
        raise ValueError(f"id {task_id!r} must be letters, digits, '.', '_' or '-' (at most 80)")
    cwd, repo, commit = _text(obj, "cwd"), _text(obj, "repo"), _text(obj, "commit")
    if (cwd is None) == (repo is None):
        raise ValueError("give exactly one of 'cwd' (a folder) or 'repo' (+ 'commit')")
    if cwd is not None:
        cwd = _inside(base, cwd, "cwd")
        if not Path(cwd).is_dir():
            raise ValueError(f"cwd {cwd} is not a folder")
    if repo is not None:
        if commit is None:
            raise ValueError("'repo' needs 'commit' (the revision to check out)")
        if not _COMMIT.match(commit) or ".." in commit:
            raise ValueError(f"commit {commit!r} is not a plain revision (a hash, tag or branch name)")
        if not _URL.match(repo):
            repo = _inside(base, repo, "repo")
    elif commit is not None:
        raise ValueError("'commit' goes with 'repo'")
    model = _text(obj, "model")
    if model is not None and model.startswith("scripted:"):
        model = "scripted:" + _inside(base, model.removeprefix("scripted:"), "script")
    approval = _text(obj, "approval") or "deny"
    if approval not in APPROVALS:
        raise ValueError(f"approval {approval!r} must be allow or deny (a batch has nobody to ask)")
    settings = obj.get("settings", {})
    if not isinstance(settings, dict) or not all(isinstance(v, dict) for v in settings.values()):
        raise ValueError("'settings' must be an object of sections, e.g. {\"agent\": {\"max_steps\": 30}}")
    refused = [*security_keys_in(settings), *security_keys_in(settings, USER_ONLY_KEYS)]
    if refused:  # what an untrusted project's config may not set, a shared task file may not either
        raise ValueError(f"'settings' may not set {', '.join(refused)}: a task file can come from anyone, and "
                         "these keys decide what runs, what is sent where and what commands see; set them in "
                         f"your own {paths.global_config_path()}")
    return BatchTask(task_id, task, line, cwd, repo, commit, model, approval, settings)


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


TaskT = TypeVar("TaskT", bound=_Identified)


def read_task_file(path: Path, root: Path | None, parse: Callable[[Any, int, Path], TaskT],
                   example: str) -> list[TaskT]:
    """Every task of ``path`` as ``parse(obj, line, base)`` reads it; one :class:`UsageError` listing
    each bad line — bad JSON, what ``parse`` rejects, a duplicate id — so nothing runs then.
    ``example`` is the line the error for an empty file shows. ``eval``'s task files use it too."""
    base = (root or path.parent).resolve()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the task file {path}: {exc.strerror or exc}") from None
    tasks: list[TaskT] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(raw.splitlines(), 1):
        text = line.decode("utf-8", "replace").strip()
        if not text or text.startswith("#"):
            continue
        try:
            task = parse(json.loads(text), number, base)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}: line {number}: not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        except (ValueError, RecursionError) as exc:
            problems.append(f"{path}: line {number}: {str(exc)[:300]}")
            continue
        if task.id in seen:
            problems.append(f"{path}: line {number}: duplicate id {task.id!r} (first on line {seen[task.id]})")
            continue
        seen[task.id] = number
        tasks.append(task)
    if problems:
        raise UsageError("\n".join(problems))
    if not tasks:
        raise UsageError(f"{path} holds no tasks; one JSON object per line, e.g. {example}")
    return tasks


def read_tasks(path: Path, root: Path | None = None) -> list[BatchTask]:
    """Every task of ``path``; one :class:`UsageError` listing each bad line (nothing runs then)."""
    return read_task_file(path, root, parse_line, '{"id": "t1", "task": "make the tests pass", "cwd": "."}')


def result_records(results: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a results file, in order (a missing file has none; torn or foreign lines
    are skipped) — what a re-run reads to resume, here and in ``eval``."""
    if not results.exists():
        return
    for line in results.read_bytes().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def finished_ids(results: Path) -> set[str]:
    """Ids recorded as done in a results file (torn or foreign lines are ignored)."""
    return {record["id"] for record in result_records(results)
            if record.get("status") == DONE and isinstance(record.get("id"), str)}


def append_result(results: Path, record: dict[str, Any]) -> None:
    results.parent.mkdir(parents=True, exist_ok=True)
    with open(results, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def checkout(task: BatchTask, scratch: Path) -> Path:
    """A fresh clone of ``task.repo`` at ``task.commit`` in ``scratch/<id>`` (replacing an old one)."""
    dest = scratch / task.id
    if dest.exists():
        shutil.rmtree(dest)
    scratch.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    for args in (["git", "clone", "--quiet", "--no-checkout", "--", str(task.repo), str(dest)],
                 ["git", "-C", str(dest), "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach",
                  str(task.commit), "--"]):
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:4])}… failed: {done.stderr.strip()[:500]}")
    return dest


def run_task(unit: TaskUnit, model: Any) -> dict[str, Any]:
    """The worker side: the task in its own session; a record for the results file."""
    from mtagent.agent.session import AgentSession
    from mtagent.agent.turns import run_unattended
    from mtagent.config import load_settings

    os.environ.update(unit.env)
    task = unit.task
    root = checkout(task, Path(unit.scratch)) if task.repo else Path(str(task.cwd))
    settings = load_settings(root, overrides=task.settings or None)
    session = AgentSession.create(root, model=model, settings=settings, approval=APPROVALS[task.approval])
    try:
        turn = run_unattended(session, task.task, "batch run: no one to ask")  # `ask` rules: nobody to say yes
        result = turn.result
        return {"id": task.id, "status": result.status, "steps": turn.model_calls,
                "session_id": session.session_id, "model": session.model_name, "workdir": str(root),
                "answer": result.reply[:2000], "messages": turn.messages}
    finally:
        session.close()
