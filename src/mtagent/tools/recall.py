"""The ``recall`` tool: the model searches what compaction removed from its view.

``recall(query, scope, k)`` returns ranked snippets with references (session and message id,
artifact path and line range, memory namespace), each with its authority, freshness and
temperature; ``recall(ref=…)`` re-hydrates one item in full. The index is the project's
(:mod:`mtagent.context.recall`), caught up before each search, so it also finds earlier sessions.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from mtagent.context.recall import Recaller
from mtagent.context.recall.render import render_hits
from mtagent.context.recall.sink import project_recaller
from mtagent.errors import UsageError
from mtagent.tools.base import ToolInputError, WorkspaceTool

MAX_REHYDRATE_CHARS = 40_000

RECALL_DESCRIPTION = (
    "Search this project's earlier conversation, saved tool results and memory — including what was "
    "compacted out of your context. Query with exact names: a file path, a function, an error message. "
    "Returns ranked snippets with refs; call again with ref=<ref> for the full item. Hits marked stale "
    "read a file that was edited later: re-read the file instead."
)


class RecallArgs(BaseModel):
    query: str = Field("", description="Words to search for: paths, symbols, error text.")
    scope: Literal["all", "session", "history", "artifacts", "memory", "files"] = Field(
        "all", description="all; session (this session only); history (messages and summaries); "
        "artifacts (saved tool results); memory (long-term facts); files (workspace, when indexed)")
    k: int = Field(5, ge=1, le=20, description="How many hits.")
    ref: str | None = Field(None, description="A ref from an earlier recall: return that item in full.")


class RecallTool(WorkspaceTool):
    name: str = "recall"
    description: str = RECALL_DESCRIPTION
    args_schema: type[BaseModel] = RecallArgs
    _recaller: Recaller | None = PrivateAttr(default=None)

    def _get_recaller(self) -> Recaller:
        if self._recaller is None:
            self._recaller = project_recaller(self.context.workspace.root, self.context.settings)
        return self._recaller

    def _session_id(self) -> str | None:
        artifacts = self.context.artifacts
        return artifacts.root.name if artifacts is not None else None

    def execute(self, call_id: str, query: str = "", scope: str = "all", k: int = 5,
                ref: str | None = None) -> tuple[str, dict[str, Any]]:
        recaller = self._get_recaller()
        if ref:
            try:
                text = recaller.rehydrate(ref)
            except UsageError as exc:
                raise ToolInputError(str(exc)) from None
            cut = len(text) > MAX_REHYDRATE_CHARS
            body = text[:MAX_REHYDRATE_CHARS] + (f"\n[… {len(text) - MAX_REHYDRATE_CHARS:,} more characters]"
                                                 if cut else "")
            return body, {"kind": "recall", "ref": ref, "chars": len(text)}
        if not query.strip():
            raise ToolInputError("give a query (words to search for) or a ref from an earlier recall")
        session = self._session_id()
        recaller.indexer.refresh()
        try:
            hits = recaller.search(query, scope=scope, k=k, session=session if scope == "session" else None)
        except UsageError as exc:
            raise ToolInputError(str(exc)) from None
        return (render_hits(query, hits, mode=recaller.mode, scope=scope),
                {"kind": "recall", "query": query[:200], "scope": scope, "hits": [h.ref for h in hits]})
