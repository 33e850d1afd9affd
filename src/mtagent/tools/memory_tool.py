"""The ``save_memory`` tool: the model asks to remember a fact across sessions.

It addresses spec 003 v1.2's memory namespaces — ``global`` (``## Agent Memories`` in
``~/.mtagent/CONTEXT.md``), ``project`` (the project's ``MEMORY.md``), ``user`` and ``team`` —
optionally with a conflict ``key`` and a ``ttl``. The namespace only *selects* one of those four
files (:func:`mtagent.context.static.memory.parse_namespace`): the tool can append to those lists
and nothing else, whatever the model sends. ``scope`` is the older name of ``namespace``.

Metadata comes from the call's fields and the writer, never from the fact's text: a keyed fact
is stamped ``authority=memory`` (the model's own), so it cannot supersede a person's fact on the
same key by naming a higher namespace or by writing ``<!-- authority=org -->`` into the fact.
"""

from __future__ import annotations

import os
from pathlib import Path

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from mtagent.context.static import memory
from mtagent.context.static.memory_meta import FactMeta, clean_key, parse_ttl, writer_authority
from mtagent.errors import MTAgentError

SAVE_MEMORY_DESCRIPTION = (
    "Remember one durable fact across sessions: a user preference, a project convention, or a "
    "hard-won lesson (e.g. 'tests run with `uv run pytest -x`'). Not for task progress or anything "
    "that will be stale tomorrow. namespace: 'global' (every project), 'project' (this one), 'user' "
    "(this user's preferences), 'team' (conventions shared with the team). key: a short name; a newer "
    "fact with the same key supersedes the older. ttl: expiry such as '30d' or '2027-01-31'."
)

_WHERE = {
    "global": "global memory (~/.mtagent/CONTEXT.md)",
    "project": "project memory (MEMORY.md)",
    "user": "user memory",
    "team": "team memory",
}


class SaveMemoryArgs(BaseModel):
    fact: str = Field(description="The fact, one short self-contained sentence.")
    # A plain string (validated by the tool, with the enum in the schema): a wrong name is one
    # readable error line for the model, not a schema-validation traceback.
    namespace: str | None = Field(None, description="global (default), project, user or team.",
                                  json_schema_extra={"enum": list(memory.SCOPES)})
    key: str | None = Field(None, description="Optional conflict key, e.g. 'test-command'.")
    ttl: str | None = Field(None, description="Optional expiry: 30d, 12h, 2w or a date.")
    scope: str | None = Field(None, description="Older name of namespace.")


def build_save_memory_tool(project_root: str | os.PathLike[str], *, home: Path | None = None) -> BaseTool:
    """A ``save_memory`` tool bound to ``project_root`` and the tenant's local ``home`` (where the
    project and team namespaces' folder is)."""

    def save_memory(fact: str, namespace: str | None = None, key: str | None = None, ttl: str | None = None,
                    scope: str | None = None) -> str:
        try:
            chosen = memory.parse_namespace(namespace if namespace is not None else (scope or "global"))
            cleaned = clean_key(key)
            meta = FactMeta(key=cleaned, expires_at=parse_ttl(ttl),
                            authority=writer_authority("model", chosen) if cleaned else None) if (key or ttl) else None
            result = memory.save_memory(fact, chosen, project_root, meta=meta, home=home)
        except MTAgentError as exc:
            return f"Error: {exc}"
        where = _WHERE[chosen]
        if result.added:
            return f"Saved to {where}: {result.entry.text}"
        if result.reactivated:
            return f"Already in {where} but marked obsolete; it is active again: {result.entry.text}"
        return f"Already in {where}, nothing changed: {result.entry.text}"

    return StructuredTool.from_function(
        func=save_memory,
        name="save_memory",
        description=SAVE_MEMORY_DESCRIPTION,
        args_schema=SaveMemoryArgs,
    )
