"""Evaluation tasks: a batch task plus how to tell it was solved — read from JSONL, checked first.

Two line formats are read, one task per line (blank and ``#`` lines skipped):

* **mtagent's batch format** (:mod:`mtagent.agent.batch`) with four more fields (``approval``
  defaults to ``allow`` here: every task runs in its own scratch copy)::

      {"id": "fix-1", "task": "make the tests pass", "cwd": "projects/a",
       "setup": "python3 -m pip install -e . -q", "check": "python3 -m pytest -q",
       "check_timeout": 300, "setup_timeout": 600}

* **SWE-bench style**: ``instance_id``, ``repo`` (``owner/name``), ``base_commit``,
  ``problem_statement`` and a test command (``test_cmd``/``test_command``, or the ``FAIL_TO_PASS``
  tests run with pytest); a ``test_patch`` is applied before the check, as SWE-bench does.
  ``owner/name`` is looked up as a local clone under ``--repos`` (``owner__name`` or
  ``owner/name``): evaluation never reaches the network, so a missing clone is a clear error.

The file is untrusted: every line is checked before anything runs and each problem is reported
as ``line N: …`` (bad JSON, a path leaving the task file's folder, a repository URL, a check
that is not a string, a time limit out of range). Nothing runs when any line is bad.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtagent.agent.batch import FIELDS as BATCH_FIELDS
from mtagent.agent.batch import BatchTask, parse_line, read_task_file

EVAL_FIELDS = {"check", "setup", "check_timeout", "setup_timeout"}
SWE_FIELDS = {"instance_id", "problem_statement", "base_commit"}
DEFAULT_CHECK_TIMEOUT_S = 300.0
DEFAULT_SETUP_TIMEOUT_S = 600.0
MAX_TIMEOUT_S = 24 * 3600.0
_REMOTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:")
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True, slots=True)
class EvalTask:
    """A batch task with its ``check`` (exit 0 = solved), ``setup`` and their time limits."""

    batch: BatchTask
    check: str | None = None
    setup: str | None = None
    check_timeout: float = DEFAULT_CHECK_TIMEOUT_S
    setup_timeout: float = DEFAULT_SETUP_TIMEOUT_S
    check_patch: str | None = None  # SWE-bench's test_patch, applied before the check

    @property
    def id(self) -> str:
        return self.batch.id

    @property
    def settings(self) -> dict[str, Any]:
        return self.batch.settings

    @property
    def prompt(self) -> str:
        return self.batch.task


def _command(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise ValueError(f"{key!r} must be a non-empty command string")
    return value


def _timeout(obj: dict[str, Any], key: str, default: float) -> float:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT_S:
        raise ValueError(f"{key!r} must be seconds in (0, {MAX_TIMEOUT_S:.0f}]")
    return float(value)


def _no_remote(repo: Any) -> None:
    if isinstance(repo, str) and _REMOTE.match(repo):
        raise ValueError(f"repo {repo!r} is a URL: evaluation does not use the network; clone it yourself "
                         "and give the clone's path")


def parse_eval_line(obj: Any, line: int, base: Path, repos: Path | None = None) -> EvalTask:
    """One task object (either format) → an :class:`EvalTask`; a :class:`ValueError` says what is wrong."""
    if not isinstance(obj, dict):
        raise ValueError("a task must be a JSON object")
    if SWE_FIELDS <= set(obj):
        return _swe_task(obj, line, repos)
    unknown = sorted(set(obj) - BATCH_FIELDS - EVAL_FIELDS)
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}; fields are "
                         f"{', '.join(sorted(BATCH_FIELDS | EVAL_FIELDS))} (or SWE-bench's)")
    _no_remote(obj.get("repo"))
    fields = {"approval": "allow", **{k: v for k, v in obj.items() if k not in EVAL_FIELDS}}
    batch = parse_line(fields, line, base)
    return EvalTask(batch, _command(obj, "check"), _command(obj, "setup"),
                    _timeout(obj, "check_timeout", DEFAULT_CHECK_TIMEOUT_S),
                    _timeout(obj, "setup_timeout", DEFAULT_SETUP_TIMEOUT_S))


def _tests(value: Any) -> list[str]:
    """SWE-bench keeps test lists as JSON text or as lists."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError("'FAIL_TO_PASS' must be a list of tests (or its JSON text)") from None
    if not isinstance(value, list) or not all(isinstance(t, str) and t and "\x00" not in t for t in value):
        raise ValueError("'FAIL_TO_PASS' must be a list of test names")
    return value


def local_clone(slug: str, repos: Path | None) -> Path:
    """The local clone of ``owner/name`` under ``repos`` (``owner__name`` or ``owner/name``)."""
    if not _SLUG.match(slug) or ".." in slug:
        raise ValueError(f"repo {slug!r} is not owner/name")
    owner, name = slug.split("/")
    if repos is not None:
        root = repos.resolve()
        for candidate in (root / f"{owner}__{name}", root / owner / name):
            resolved = candidate.resolve()
            if resolved.is_dir() and root in resolved.parents:
                return resolved
    where = f"under {repos}" if repos is not None else "(no --repos folder given)"
    raise ValueError(f"repo {slug!r} has no local clone {where}: evaluation does not use the network; "
                     f"clone it to REPOS/{owner}__{name} and pass --repos REPOS")


def _swe_task(obj: dict[str, Any], line: int, repos: Path | None) -> EvalTask:
    repo = obj.get("repo")
    _no_remote(repo)
    if not isinstance(repo, str):
        raise ValueError("'repo' must be owner/name")
    clone = local_clone(repo, repos)
    check = _command(obj, "test_cmd") or _command(obj, "test_command")
    if check is None and obj.get("FAIL_TO_PASS") is not None:
        check = "python3 -m pytest -q " + shlex.join(_tests(obj["FAIL_TO_PASS"]))
    if check is None:
        raise ValueError("a SWE-bench task needs 'test_cmd' (or 'FAIL_TO_PASS') to tell it was solved")
    patch = obj.get("test_patch")
    if patch is not None and (not isinstance(patch, str) or "\x00" in patch):
        raise ValueError("'test_patch' must be the text of a patch")
    batch = parse_line({"id": obj["instance_id"], "task": obj["problem_statement"], "repo": str(clone),
                        "commit": obj["base_commit"], "approval": "allow"}, line, clone.parent)
    return EvalTask(batch, check, _command(obj, "setup"), _timeout(obj, "check_timeout", DEFAULT_CHECK_TIMEOUT_S),
                    _timeout(obj, "setup_timeout", DEFAULT_SETUP_TIMEOUT_S), patch or None)


def read_eval_tasks(path: Path, root: Path | None = None, repos: Path | None = None) -> list[EvalTask]:
    """Every task of ``path``; one :class:`UsageError` listing each bad line (nothing runs then)."""
    return read_task_file(path, root, lambda obj, line, base: parse_eval_line(obj, line, base, repos),
                          '{"id": "t1", "task": "make the tests pass", "cwd": ".", "check": "pytest -q"}')
