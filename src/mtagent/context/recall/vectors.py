"""Hybrid recall: vectors from any LangChain ``Embeddings``, fused with BM25 by reciprocal rank.

Vectors live in the same SQLite database. ``sqlite-vec`` is used when the index's SQLite can
load extensions (:mod:`mtagent.context.recall.driver`: the standard ``sqlite3`` when it can, else
``pysqlite3``); otherwise the vectors are float32 blobs in the ``vectors`` table and cosine
similarity is computed in Python over them — exact, and fast enough for the tens of thousands of
items a project holds. :attr:`VectorIndex.backend` says which one is in use and
:attr:`VectorIndex.fallback` why the Python one (``mtagent recall`` prints both).

Items are embedded lazily, before a hybrid search, in batches (an embedding call is a network
call; it must never slow down indexing).
"""

from __future__ import annotations

import logging
import math
from array import array
from collections.abc import Sequence
from typing import Any, Protocol

from mtagent.context.recall.driver import SQLITE, vector_fallback_reason
from mtagent.context.recall.store import RecallStore

log = logging.getLogger(__name__)

EMBED_BATCH = 64
EMBED_MAX_ITEMS_PER_REFRESH = 2_048
EMBED_TEXT_CHARS = 8_000


class Embeddings(Protocol):
    """The part of ``langchain_core.embeddings.Embeddings`` recall uses."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def _normalized(vector: Sequence[float]) -> array:
    values = array("f", (float(x) for x in vector))
    norm = math.sqrt(sum(x * x for x in values)) or 1.0
    return array("f", (x / norm for x in values))


def _try_sqlite_vec(store: RecallStore) -> bool:
    """Load the sqlite-vec extension into the store's connection when this sqlite3 allows it."""
    try:
        import sqlite_vec  # type: ignore[import-untyped]
    except ImportError:
        return False

    def load(conn: Any) -> bool:
        if not hasattr(conn, "enable_load_extension"):
            return False
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        return True

    try:
        return bool(store.run(load, False))
    except Exception:  # noqa: BLE001 - any failure means: use the Python fallback
        return False


class VectorIndex:
    """Embeddings of the store's items and nearest-neighbour search over them."""

    def __init__(self, store: RecallStore, embeddings: Embeddings) -> None:
        self.store = store
        self.embeddings = embeddings
        self.backend = "sqlite-vec" if _try_sqlite_vec(store) else "python"
        self.fallback: str | None = None if self.backend == "sqlite-vec" else (
            vector_fallback_reason(SQLITE) or "sqlite-vec did not load into the index database")
        self._cache: dict[int, array] | None = None
        self._vec_table = False

    def refresh(self) -> int:
        """Embed items that have no vector yet (bounded per call); returns how many."""
        missing = self.store.execute(
            "SELECT items.rowid, items.text FROM items LEFT JOIN vectors ON vectors.rowid = items.rowid "
            "WHERE vectors.rowid IS NULL ORDER BY items.rowid LIMIT ?", (EMBED_MAX_ITEMS_PER_REFRESH,))
        done = 0
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start:start + EMBED_BATCH]
            try:
                vectors = self.embeddings.embed_documents([str(t)[:EMBED_TEXT_CHARS] for _, t in batch])
            except Exception as exc:  # noqa: BLE001 - keyword search still works without vectors
                log.warning("recall: embedding failed (%s); searching by keywords only", exc)
                return done
            rows = [(int(rowid), _normalized(vec).tobytes()) for (rowid, _), vec in zip(batch, vectors, strict=False)]
            self.store.run(lambda c, r=rows: c.executemany(
                "INSERT OR REPLACE INTO vectors(rowid, vec) VALUES(?, ?)", r), None)
            if self.backend == "sqlite-vec":
                self._vec_insert(rows)
            if self._cache is not None:
                for rowid, blob in rows:
                    self._cache[rowid] = array("f", blob)
            done += len(rows)
        return done

    def _vec_insert(self, rows: list[tuple[int, bytes]]) -> None:
        if not rows:
            return
        dim = len(rows[0][1]) // 4
        if not self._vec_table:
            ok = self.store.run(lambda c: c.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_items USING vec0(embedding float[{dim}])") and True, False)
            if not ok:
                self.backend = "python"
                self.fallback = "sqlite-vec could not create its vec0 table"
                return
            self._vec_table = True
        self.store.run(lambda c: c.executemany(
            "INSERT OR REPLACE INTO vec_items(rowid, embedding) VALUES(?, ?)", rows), None)

    def _vectors(self) -> dict[int, array]:
        if self._cache is None:
            self._cache = {int(r): array("f", b) for r, b in self.store.execute("SELECT rowid, vec FROM vectors")}
        return self._cache

    def search(self, query: str, limit: int) -> list[tuple[int, float]]:
        """(rowid, cosine similarity) of the nearest items, best first."""
        try:
            q = _normalized(self.embeddings.embed_query(query))
        except Exception as exc:  # noqa: BLE001
            log.warning("recall: embedding the query failed (%s); keyword search only", exc)
            return []
        if self.backend == "sqlite-vec" and self._vec_table:
            rows = self.store.execute(
                "SELECT rowid, distance FROM vec_items WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                (q.tobytes(), int(limit)))
            if rows:
                return [(int(r), 1.0 - float(d) ** 2 / 2) for r, d in rows]
        scored = []
        for rowid, vec in self._vectors().items():
            if len(vec) == len(q):
                scored.append((rowid, sum(a * b for a, b in zip(vec, q, strict=True))))
        scored.sort(key=lambda pair: -pair[1])
        return scored[:limit]


def describe_backend(vectors: VectorIndex | None) -> str:
    """One line for ``mtagent recall`` and ``/recall``: which vector backend answers, and why."""
    if vectors is None:
        would = "sqlite-vec" if vector_fallback_reason(SQLITE) is None else \
            f"python cosine, because {vector_fallback_reason(SQLITE)}"
        return f"vector backend: none (keyword search; recall.embeddings is not set — with it: {would})"
    if vectors.backend == "sqlite-vec":
        return f"vector backend: sqlite-vec (in {SQLITE.name}'s SQLite)"
    return f"vector backend: python (exact cosine in Python, because {vectors.fallback})"


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int = 60) -> list[tuple[int, float]]:
    """Fuse ranked id lists: score(d) = Σ 1 / (k + rank of d in each list), best first."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
