"""The retrieval router: one ``recall(query, scope, k)`` over keyword, vector and hybrid search.

Every hit carries its reference (session and message id, or artifact path and line range, or
memory namespace), its authority (spec 003's chain: a user message outranks a tool result,
which outranks memory, which outranks a summary) and its freshness:

* ``stale`` — the item is a file read and a later edit of that file exists (spec 003 §五: an
  old read of an edited file "becomes a source of pollution"); marked, or filtered out;
* ``expired`` — a long-term fact whose TTL has passed; filtered unless asked for;
* ``fresh`` — otherwise.

``confidence`` is the share of the query's words the item holds (0–1): a plain, explainable
number the over-budget order uses to drop weak retrieval first. The full item is re-hydrated
by reference with :meth:`Recaller.rehydrate` (an artifact's exact line range is re-read).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from mtagent.context.recall.collapse import collapse, evidence_first
from mtagent.context.recall.indexer import RecallIndexer
from mtagent.context.recall.query import fts_query, query_words
from mtagent.context.recall.store import Row
from mtagent.context.recall.vectors import (
    Embeddings,
    VectorIndex,
    describe_backend,
    reciprocal_rank_fusion,
)
from mtagent.errors import ArtifactPathError, UsageError
from mtagent.redaction import Redactor, collect_secrets

Scope = Literal["all", "session", "history", "artifacts", "memory", "files"]
SCOPES: tuple[str, ...] = ("all", "session", "history", "artifacts", "memory", "files")
_SCOPE_KINDS: dict[str, tuple[str, ...]] = {
    "all": (), "session": (), "history": ("message", "summary", "session_memory"),
    "artifacts": ("artifact",), "memory": ("memory",), "files": ("file",),
}
StaleMode = Literal["mark", "filter"]
OVERFETCH = 4
COLLAPSE_OVERFETCH = 2  # collapsing near-copies (collapse.py) drops candidates: fetch more to fill k


@dataclass(slots=True, frozen=True)
class RecallHit:
    ref: str
    kind: str
    confidence: float
    snippet: str
    authority: str
    freshness: str  # fresh | stale | expired
    temperature: str  # cold (compacted away), warm, long_term
    session: str | None = None
    message_id: str | None = None
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    role: str | None = None
    tool: str | None = None
    namespace: str | None = None
    ts: float | None = None
    stale_reason: str | None = None

    @property
    def reference(self) -> str:
        """Where the item is, in words a person can follow."""
        if self.kind == "artifact":
            return f"artifact {self.path} lines {self.line_start}-{self.line_end} (session {self.session})"
        if self.kind == "memory":
            return f"{self.namespace} memory: {self.path}:{self.line_start}"
        if self.kind == "file":
            return f"file {self.path} lines {self.line_start}-{self.line_end}"
        if self.kind == "session_memory":
            return f"session memory of {self.session} ({self.path})"
        lines = f" lines {self.line_start}-{self.line_end}" if self.line_start and self.line_end else ""
        return f"session {self.session} message {self.message_id}{lines}"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reference": self.reference}


def snippet(text: str, words: list[str], chars: int, phrases: Sequence[str] = ()) -> str:
    """About ``chars`` characters of ``text`` around the most specific part of the query it holds:
    the longest of the query's chunks (``Ash.Error.Invalid``) and words that occurs — the first
    common word (``ash``) may be far from what was asked for."""
    low = text.lower()
    at = 0
    for needle in sorted({n for n in (*phrases, *words) if n}, key=len, reverse=True):
        found = low.find(needle)
        if found >= 0:
            at = found
            break
    start = max(0, at - chars // 3)
    piece = " ".join(text[start:start + chars].split())
    return ("…" if start else "") + piece + ("…" if start + chars < len(text) else "")


def confidence(text: str, words: list[str]) -> float:
    """Share of the query's distinct words that occur in ``text`` as whole words (one C-speed pass)."""
    unique = {w for w in words if w}
    if not unique:
        return 0.0
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, sorted(unique, key=len, reverse=True))) + r")(?!\w)")
    found = {m.group(0) for m in pattern.finditer(text.lower())}
    return round(len(found & unique) / len(unique), 3)


class Recaller:
    """Search and re-hydrate over one project's index (keyword, or hybrid with embeddings)."""

    def __init__(self, indexer: RecallIndexer, embeddings: Embeddings | None = None, *,
                 redactor: Redactor | None = None) -> None:
        """``redactor``: today's secrets (default: this process's environment and every key shape).
        The index holds text redacted with the secrets known when it was indexed; every hit and
        re-hydrated item is redacted again on the way out, so a secret configured since never shows."""
        self.redactor = redactor or getattr(indexer, "redactor", None) or Redactor(collect_secrets())
        self.indexer = indexer
        self.store = indexer.store
        self.settings = indexer.settings
        self.vectors = VectorIndex(self.store, embeddings) if embeddings is not None else None

    @property
    def mode(self) -> str:
        return "keyword" if self.vectors is None else f"hybrid ({self.vectors.backend} vectors)"

    @property
    def vector_backend(self) -> str:
        """The one-line account of the vector backend (and why Python's when it is)."""
        return describe_backend(self.vectors)

    def search(self, query: str, *, scope: str = "all", k: int | None = None, session: str | None = None,
               stale: StaleMode = "mark", include_expired: bool = False,
               exclude_message_ids: tuple[str, ...] | list[str] = ()) -> list[RecallHit]:
        """The best ``k`` hits for ``query`` (ranked; never raises on any query text)."""
        if scope not in _SCOPE_KINDS:
            raise UsageError(f"unknown recall scope {scope!r}; use one of {', '.join(SCOPES)}")
        if scope == "session" and not session:
            raise UsageError("recall scope 'session' needs a session id (--session ID)")
        k = max(1, min(int(k or self.settings.default_k), 50))
        self.indexer.flush()
        match = fts_query(query, max_terms=self.settings.max_query_terms)
        words = query_words(query, max_terms=self.settings.max_query_terms)
        phrases = [c.lower()[:200] for c in query[:4_000].split()][:self.settings.max_query_terms] \
            if isinstance(query, str) else []
        kinds = _SCOPE_KINDS[scope]
        limit = k * OVERFETCH * COLLAPSE_OVERFETCH
        keyword = [] if match is None else self.store.search(
            match, kinds=kinds, session=session, limit=limit, exclude_message_ids=exclude_message_ids)
        ranked = [rowid for rowid, _ in keyword]
        if self.vectors is not None and isinstance(query, str) and query.strip():
            self.vectors.refresh()
            nearest = [rowid for rowid, _ in self.vectors.search(query[:4_000], limit * 4)]
            rows = {r.rowid: r for r in self.store.rows(nearest)}
            excluded = set(exclude_message_ids)
            nearest = [i for i in nearest if i in rows and self._in_scope(rows[i], kinds, session, excluded)][:limit]
            ranked = [rowid for rowid, _ in reciprocal_rank_fusion([ranked, nearest], self.settings.rrf_k)]
        rows = self.store.rows(ranked)
        if self.vectors is None:
            # Coverage first, BM25 within it: BM25 alone ranks an item that repeats one query word
            # above the one holding every word asked for. (Hybrid keeps the fused order: a vector
            # hit may share no word with the query.)
            # Among equals, the source before what was derived from it (collapse.evidence_first).
            scored = {row.rowid: confidence(row.doc.text, words) for row in rows}
            rows.sort(key=lambda row: (-scored[row.rowid], evidence_first(row.doc.kind)))
        return self._hits(list(collapse(rows)), words, stale, include_expired, k, phrases)

    @staticmethod
    def _in_scope(row: Row, kinds: tuple[str, ...], session: str | None, excluded: set[str]) -> bool:
        doc = row.doc
        return ((not kinds or doc.kind in kinds) and (session is None or doc.session == session)
                and (doc.message_id is None or doc.message_id not in excluded))

    def _hits(self, rows: list[Row], words: list[str], stale: StaleMode, include_expired: bool,
              k: int, phrases: list[str]) -> list[RecallHit]:
        edits = self.store.last_edits(r.doc.file_key for r in rows if r.doc.file_key)
        now = time.time()
        hits: list[RecallHit] = []
        for row in rows:
            if len(hits) >= k:
                break
            doc = row.doc
            text = self.redactor.text(doc.text)
            freshness, reason = "fresh", None
            edited = edits.get(doc.file_key or "")
            if edited is not None and doc.ts is not None and edited > doc.ts:
                freshness, reason = "stale", f"{doc.file_key} was edited after this read"
            if doc.expires_at is not None and doc.expires_at <= now:
                freshness, reason = "expired", "the fact's TTL has passed"
            if freshness == "stale" and stale == "filter":
                continue
            if freshness == "expired" and not include_expired:
                continue
            temperature = "long_term" if doc.kind == "memory" else ("cold" if row.compacted else "warm")
            hits.append(RecallHit(
                ref=doc.uid, kind=doc.kind, confidence=confidence(text, words),
                snippet=snippet(text, words, self.settings.snippet_chars, phrases), authority=doc.authority,
                freshness=freshness, temperature=temperature, session=doc.session, message_id=doc.message_id,
                path=doc.path, line_start=doc.line_start, line_end=doc.line_end, role=doc.role, tool=doc.tool,
                namespace=doc.namespace, ts=doc.ts, stale_reason=reason,
            ))
        return hits

    def rehydrate(self, ref: str) -> str:
        """The full item a hit refers to (an artifact's line range re-read from its file), redacted."""
        row = self.store.by_uid(ref) if isinstance(ref, str) else None
        if row is None:
            raise UsageError(f"no recalled item {ref!r}; run recall again and use a ref it printed")
        doc, text = row.doc, row.doc.text
        if doc.kind == "artifact" and doc.session and doc.path and doc.line_start and doc.line_end:
            try:
                lines = self.indexer.artifact_store(doc.session).read_text(doc.path).splitlines()
                text = "\n".join(lines[doc.line_start - 1:doc.line_end])
            except (ArtifactPathError, OSError):
                pass  # the indexed text stands in for a file that is gone
        return self.redactor.text(text)
