"""``tool_search``: find deferred tools by what they do — BM25, hybrid with embeddings when configured.

A query is free text from the model (or ``mtagent tools search``). Two forms are understood:

* ``select:name1,name2`` — exactly these tools (Claude Code's form, for a name the model already
  read in the deferred listing); unknown names are ignored;
* anything else — BM25F over name, server, description and parameter names
  (:mod:`mtagent.context.toolset.fields`), each query word joined by its synonyms at a lower weight
  (:mod:`mtagent.context.toolset.lexicon`); with an embedding model (``recall.embeddings``) the BM25
  ranking is fused with cosine similarity by reciprocal rank, as recall does.

A ``+word`` term must occur in the tool's name (``+github issue`` → GitHub tools about issues).
The index is rebuilt only when the catalog's entries change.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from mtagent.context.recall.vectors import Embeddings, reciprocal_rank_fusion
from mtagent.context.toolset.bm25 import terms
from mtagent.context.toolset.entries import ToolEntry
from mtagent.context.toolset.fields import FieldIndex, diversify, split_name, tool_doc
from mtagent.context.toolset.lexicon import expand

log = logging.getLogger(__name__)

SELECT_PREFIX = "select:"
DEFAULT_RRF_K = 60
MAX_QUERY_CHARS = 2_000


@dataclass(slots=True, frozen=True)
class SearchHit:
    name: str
    score: float
    source: str
    description: str

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "score": round(self.score, 4), "source": self.source,
                "description": self.description}


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class ToolSearchIndex:
    """Search over a fixed list of entries (build a new one when the list changes)."""

    def __init__(self, entries: Sequence[ToolEntry], *, embeddings: Embeddings | None = None,
                 rrf_k: int = DEFAULT_RRF_K) -> None:
        self.entries = list(entries)
        self.by_name = {e.name: i for i, e in enumerate(self.entries)}
        self.fields = FieldIndex.build(tool_doc(e.name, e.description, e.parameters, e.source) for e in self.entries)
        self.servers = [split_name(e.name, e.source)[0] for e in self.entries]
        self.embeddings = embeddings
        self.rrf_k = rrf_k
        self._vectors: list[list[float]] | None = None

    @property
    def mode(self) -> str:
        return "hybrid" if self.embeddings is not None else "bm25"

    def _dense(self, query: str) -> list[int]:
        """Entries by cosine similarity to ``query``; [] when the embedding call fails (BM25 still answers)."""
        assert self.embeddings is not None
        try:
            if self._vectors is None:
                self._vectors = self.embeddings.embed_documents(
                    [f"{e.name}: {e.description}" for e in self.entries])
            q = self.embeddings.embed_query(query)
        except Exception as exc:  # noqa: BLE001 - a network embedding model may fail; keyword search answers
            log.warning("tool_search: embeddings failed (%s); keyword search only", exc)
            return []
        scored = sorted(((i, _cosine(q, v)) for i, v in enumerate(self._vectors)), key=lambda p: (-p[1], p[0]))
        return [i for i, s in scored if s > 0]

    def search(self, query: str, k: int) -> list[SearchHit]:
        """The ``k`` best entries for ``query`` (see the module docstring), best first."""
        query = str(query or "")[:MAX_QUERY_CHARS].strip()
        if k <= 0 or not query or not self.entries:
            return []
        if query.lower().startswith(SELECT_PREFIX):
            names = [n.strip() for n in query[len(SELECT_PREFIX):].split(",")]
            chosen = [self.by_name[n] for n in dict.fromkeys(names) if n in self.by_name]
            return [self._hit(i, 1.0) for i in chosen[:k]]
        words = query.split()
        required = [t for w in words if w.startswith("+") for t in terms(w[1:])]
        asked = terms(" ".join(w.lstrip("+") for w in words))
        ranked = diversify(self.fields.rank(expand(asked), asked), self.servers)
        if self.embeddings is not None:
            fused = reciprocal_rank_fusion([[i for i, _ in ranked], self._dense(query)], self.rrf_k)
            ranked = fused
        if required:
            ranked = [(i, s) for i, s in ranked
                      if all(t in terms(self.entries[i].name) for t in required)]
        return [self._hit(i, s) for i, s in ranked[:k]]

    def _hit(self, index: int, score: float) -> SearchHit:
        entry = self.entries[index]
        return SearchHit(entry.name, score, entry.source, entry.listing)
