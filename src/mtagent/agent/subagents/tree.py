"""The tree of a session and its subagents, read from the transcripts (for ``sessions show`` and ``/context``).

A parent's ``subagent`` records name each child and its transcript path relative to the
history folder (``<session-id>/subagents/<child-id>.jsonl``). That path comes from a file on
disk — untrusted — so it is only followed when it has exactly that shape; anything else is
shown as a broken link, never opened.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent.agent.subagents.stored import mirrored_path
from mtagent.session import schema
from mtagent.session.reader import read_records

_LINK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}/subagents/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.jsonl$")
MAX_TREE_DEPTH = 8


@dataclass(slots=True)
class SubagentNode:
    child_id: str
    agent: str
    status: str
    description: str = ""
    path: Path | None = None
    outcome: str | None = None
    summary: str = ""
    validated: bool | None = None
    usage: dict[str, int] = field(default_factory=dict)
    children: list[SubagentNode] = field(default_factory=list)
    problem: str | None = None


def child_path(history_dir: Path, link: Any) -> Path | None:
    """The child transcript a record links to, or None when the link is not a plain subagent path."""
    if not isinstance(link, str) or ".." in link or not _LINK.match(link):
        return None
    local = history_dir / link
    if local.is_file():
        return local
    mirrored = mirrored_path(history_dir, link)  # a store's copy, mirrored among the parent's artifacts
    return mirrored if mirrored.is_file() else local


def nodes_from_records(records: Iterable[dict[str, Any]], history_dir: Path) -> list[SubagentNode]:
    """One node per child, in start order; the latest record of a child sets its status."""
    nodes: dict[str, SubagentNode] = {}
    for record in records:
        if record.get("type") != schema.SUBAGENT:
            continue
        child_id = str(record.get("child_id"))
        node = nodes.get(child_id)
        if node is None:
            node = nodes[child_id] = SubagentNode(child_id, str(record.get("agent") or "?"), "started")
            node.path = child_path(history_dir, record.get("path"))
            if node.path is None:
                node.problem = f"link {str(record.get('path'))[:80]!r} is not a subagent transcript path; not followed"
        node.status = str(record.get("status") or node.status)
        node.description = str(record.get("description") or node.description)
        report = record.get("report")
        if isinstance(report, dict):
            node.outcome = str(report.get("outcome") or "")
            node.summary = str(report.get("summary") or "")
            node.validated = bool(report.get("validated", True))
        if isinstance(record.get("usage"), dict):
            node.usage = {k: int(v) for k, v in record["usage"].items() if isinstance(v, int)}
    return list(nodes.values())


def subagent_tree(transcript: Path, *, history_dir: Path | None = None, depth: int = 0) -> list[SubagentNode]:
    """The children of the session in ``transcript``, each with its own children (bounded depth).

    Links are relative to the project's history folder, where a main transcript lives.
    """
    history = history_dir or transcript.parent
    nodes = nodes_from_records(read_records(transcript, skip_corrupt=True), history)
    for node in nodes:
        if node.path is None:
            continue
        if not node.path.is_file():
            node.problem = "its transcript is missing"
        elif depth + 1 < MAX_TREE_DEPTH:
            node.children = subagent_tree(node.path, history_dir=history, depth=depth + 1)
    return nodes


def tree_lines(nodes: list[SubagentNode], indent: str = "") -> list[str]:
    """Plain text lines (one per child, indented per level) for a terminal or a pipe."""
    lines: list[str] = []
    for i, node in enumerate(nodes):
        last = i == len(nodes) - 1
        branch = "└─ " if last else "├─ "
        tokens = node.usage.get("input_tokens")
        bits = [node.status + (f" ({node.outcome})" if node.outcome and node.outcome != node.status else "")]
        if node.validated is False:
            bits.append("unvalidated")
        if tokens is not None:
            bits.append(f"{tokens:,} input tokens in {node.usage.get('model_calls', 0)} calls")
        head = f"{indent}{branch}{node.child_id} [{node.agent}] {node.description}".rstrip()
        lines.append(f"{head} — {', '.join(bits)}")
        more = indent + ("   " if last else "│  ")
        if node.summary:
            lines.append(f"{more}{node.summary[:160]}")
        if node.problem:
            lines.append(f"{more}! {node.problem}")
        elif node.path is not None:
            lines.append(f"{more}transcript: {node.path}")
        lines += tree_lines(node.children, more)
    return lines


def children_usage(nodes: list[SubagentNode]) -> dict[str, int]:
    """Tokens spent by all children (and theirs), apart from the parent's window."""
    total = {"children": 0, "input_tokens": 0, "output_tokens": 0, "model_calls": 0}
    for node in nodes:
        total["children"] += 1
        for key in ("input_tokens", "output_tokens", "model_calls"):
            total[key] += node.usage.get(key, 0)
        below = children_usage(node.children)
        for key, value in below.items():
            total[key] += value
    return total
