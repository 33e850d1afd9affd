"""Claude Code subagent files as sessions linked to their parent.

Claude Code writes a ``Task`` subagent's transcript beside the parent's, as
``<session>/subagents/agent-<id>.jsonl`` (the shared copies flatten that to
``<session>__subagents__agent-<id>.jsonl``). The parent links to it through ``progress`` records
with ``data.type == "agent_progress"``: ``data.agentId`` names the file, the record's
``parentToolUseID`` the ``Task`` call. ``agent-acompact-*`` files are Claude Code's compaction
agent (its summariser's input and output), not a task.

:func:`with_subagents` turns one parent file into ``[parent, *children]`` so a replay reports
them together; each child's ``meta`` names its parent, agent id and ``Task`` call, and the
parent's ``meta["subagents"]`` lists every linked file (compaction agents included, not replayed).
A child file that cannot be read is listed with its error, never fails the parent.
"""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mtagent.errors import ReplayFormatError
from mtagent.replay.trajectory import Trajectory

FLAT_MARK = "__subagents__"
_AGENT_FILE = re.compile(r"^agent-([A-Za-z0-9_-]{1,64})\.jsonl$")
COMPACT_PREFIX = "acompact-"
MAX_LINKED = 64


def subagent_files(parent: Path) -> list[tuple[str, Path]]:
    """(agent id, file) of every subagent file beside ``parent``, in both layouts; regular files only."""
    if FLAT_MARK in parent.stem:
        return []
    found: dict[str, Path] = {}
    candidates = [(p.name[len(parent.stem) + len(FLAT_MARK):], p)
                  for p in parent.parent.glob(f"{glob.escape(parent.stem)}{FLAT_MARK}agent-*.jsonl")]
    nested = parent.parent / parent.stem / "subagents"
    if nested.is_dir():
        candidates += [(p.name, p) for p in nested.glob("agent-*.jsonl")]
    for name, path in sorted(candidates):
        match = _AGENT_FILE.match(name)
        if match and path.is_file() and not path.is_symlink():
            found.setdefault(match.group(1), path)
    return list(found.items())[:MAX_LINKED]


def task_links(path: Path) -> dict[str, str]:
    """agent id → the parent's ``Task`` tool_use id, from its ``agent_progress`` records."""
    links: dict[str, str] = {}
    with path.open("rb") as fh:
        for raw in fh:
            if b'"agent_progress"' not in raw:
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            data = record.get("data") if isinstance(record, dict) else None
            if isinstance(data, dict) and data.get("type") == "agent_progress":
                agent, call = data.get("agentId"), record.get("parentToolUseID")
                if isinstance(agent, str) and isinstance(call, str):
                    links.setdefault(agent, call)
    return links


def with_subagents(path: Path, parent: Trajectory, load_one: Callable[[Path], Trajectory]) -> list[Trajectory]:
    """``[parent, *task children]``; every link is also listed in ``parent.meta["subagents"]``."""
    files = subagent_files(path)
    if not files:
        return [parent]
    links = task_links(path)
    listed: list[dict[str, Any]] = []
    children: list[Trajectory] = []
    for agent_id, file in files:
        kind = "compact" if agent_id.startswith(COMPACT_PREFIX) else "task"
        entry: dict[str, Any] = {"agent_id": agent_id, "path": str(file), "kind": kind,
                                 "tool_use_id": links.get(agent_id)}
        try:
            child = load_one(file)
        except (ReplayFormatError, OSError) as exc:
            entry["error"] = str(exc)
            listed.append(entry)
            continue
        entry["messages"] = len(child.messages)
        entry["recorded_input_tokens"] = sum(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
                                             for u in child.recorded_usage if u is not None)
        listed.append(entry)
        if kind == "task":
            child.meta.update({"parent_source": str(path), "agent_id": agent_id,
                               "tool_use_id": links.get(agent_id), "linked": True})
            children.append(child)
    parent.meta["subagents"] = listed
    return [parent, *children]
