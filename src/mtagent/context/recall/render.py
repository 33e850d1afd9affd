"""Recall hits as plain text — one rendering for the tool, ``/recall`` and ``mtagent recall``."""

from __future__ import annotations

from collections.abc import Sequence

from mtagent.context.recall.router import RecallHit


def render_hits(query: str, hits: Sequence[RecallHit], *, mode: str = "keyword", scope: str = "all",
                backend: str | None = None) -> str:
    """``backend``: the vector-backend line people see (``mtagent recall``, ``/recall``); the
    model's tool leaves it out."""
    shown = " ".join(query.split())[:80]
    tail = [backend] if backend else []
    if not hits:
        empty = (f"No recalled items for {shown!r} (scope {scope}, {mode} search). Try other words: a "
                 "file path, a function name or an error message.")
        return "\n".join([empty, *tail])
    lines = [f"{len(hits)} recalled item{'s' if len(hits) != 1 else ''} for {shown!r} (scope {scope}, {mode} search):"]
    for n, hit in enumerate(hits, 1):
        flags = [hit.authority, hit.freshness, hit.temperature, f"confidence {hit.confidence:.2f}"]
        lines.append(f"[{n}] {hit.reference} · {' · '.join(flags)}")
        if hit.stale_reason:
            lines.append(f"    {hit.freshness}: {hit.stale_reason}")
        lines.append(f"    ref: {hit.ref}")
        lines.append(f"    {hit.snippet}")
    lines.append("Full text of an item: recall again with ref=<ref>.")
    return "\n".join([*lines, *tail])
