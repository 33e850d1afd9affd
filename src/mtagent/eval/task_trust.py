"""A task file's commands run only when the user trusts the file (#33).

``setup``, ``check`` (``test_cmd``, ``FAIL_TO_PASS``) and a ``test_patch`` are commands and code
that ``mtagent eval`` runs with no question and no approval — so a ``tasks.jsonl`` that came with an
untrusted repository could run ``cat ~/.netrc > …`` the moment it is evaluated. They run only from a
file the user trusts:

* their own file, outside any project (no ``.git``, ``.hg``, ``.mcp.json`` or ``.mtagent/config.toml``
  in its folder or above), or inside a project they trust as it is now (``mtagent trust``);
* a file trusted by ``mtagent trust FILE`` — bound to its contents: a changed file is refused again;
* any file with ``--trust-tasks`` (the user says so for this run).

Otherwise :func:`refusal` is the one line saying how to go on, and nothing of the file runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtagent import paths, trust
from mtagent.trust_scope import visible

MAX_TASK_FILE_BYTES = 512 * 1024 * 1024  # SWE-bench's full test split is ~100 MB; read once to hash and show
_COMMAND_FIELDS = ("setup", "check", "test_cmd", "test_command")
_PROJECT_MARKERS = (".git", ".hg", ".mcp.json")


def _read(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(MAX_TASK_FILE_BYTES)


def task_commands(path: Path) -> tuple[list[str], str]:
    """What trusting ``path`` lets run — one line per command or patch, whole and escaped — and the
    digest of the file's contents the trust binds to."""
    raw = _read(path)
    lines: list[str] = []
    for number, text in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
        try:
            obj: Any = json.loads(text) if text.strip() and not text.lstrip().startswith("#") else None
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        name = visible(obj.get("id") or obj.get("instance_id") or f"line {number}")
        for field in _COMMAND_FIELDS:
            if obj.get(field) is not None:
                lines.append(f"{name} {field}: {visible(obj[field])}")
        if obj.get("FAIL_TO_PASS") is not None:
            lines.append(f"{name} check: python3 -m pytest -q {visible(obj['FAIL_TO_PASS'])}")
        if obj.get("approval") == "allow":
            lines.append(f"{name} approval: allow (its task text steers commands that run unasked): "
                         f"{visible(str(obj.get('task', ''))[:2000])}")
        if isinstance(obj.get("test_patch"), str):
            touched = sorted({ln[6:] for ln in obj["test_patch"].splitlines() if ln.startswith("+++ b/")})
            lines.append(f"{name} test_patch: {len(obj['test_patch']):,} characters changing "
                         f"{visible(', '.join(touched) or '(no file named)')}")
    return lines, hashlib.sha256(raw).hexdigest()


def enclosing_project(path: Path) -> Path | None:
    """The nearest folder at or above ``path``'s that looks like a project (a repository), or None."""
    home = paths.mtagent_home().resolve()
    for folder in path.resolve().parents:
        if any((folder / marker).exists() for marker in _PROJECT_MARKERS):
            return folder
        if (folder / ".mtagent" / "config.toml").is_file() and (folder / ".mtagent").resolve() != home:
            return folder
    return None


def _runs_unasked(task: Any) -> bool:
    """An eval task with a setup, check or test patch; a batch task whose file says ``"approval": "allow"``
    (the model's shell calls run with no question, steered by the file's task text)."""
    if hasattr(task, "batch"):
        return bool(task.setup or task.check or task.check_patch)
    return getattr(task, "approval", "deny") == "allow"


def refusal(path: Path, tasks: Sequence[Any], *, trust_tasks: bool) -> str | None:
    """None when what ``tasks`` (read from ``path``) would run unasked may run; else the one line
    saying why not and how to go on."""
    if trust_tasks or not any(_runs_unasked(t) for t in tasks):
        return None
    project = enclosing_project(path)
    if project is None or trust.is_trusted(project):
        return None  # the user's own file in no project, or in a project they trust as it is now
    _commands, digest = task_commands(path)
    if trust.file_trusted(path, digest):
        return None
    where = f"it lies in {visible(project)}, which is not trusted" if project is not None else "it is not trusted"
    return (f"refusing to run the setup/check commands, test patches or \"approval\": \"allow\" tasks of "
            f"{visible(path)}: {where}; read them with `mtagent trust {visible(path)}` (it asks before trusting), "
            "or pass --trust-tasks")
