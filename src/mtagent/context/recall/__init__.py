"""Recall on demand (spec 003 v1.1): find what compaction took out of the view.

* :class:`RecallIndexer` — one SQLite FTS5 index per project, caught up from the transcripts when
  recall is queried and when a session closes (:class:`SessionIndex`); lost or corrupt → rebuilt.
* :class:`Recaller` — ``search(query, scope, k)`` (BM25, or hybrid with any LangChain
  ``Embeddings`` fused by reciprocal rank) and ``rehydrate(ref)``; hits carry authority,
  freshness (stale file reads) and temperature.
* :class:`CompactedRecall` — the bounded retrieved bucket after a compaction.
* :mod:`~mtagent.context.recall.temperature` — hot/warm/cold/frozen/long_term and spec 003's
  over-budget order.
"""

from mtagent.context.recall.indexer import RecallIndexer, index_path
from mtagent.context.recall.retrieved import CompactedRecall, Retrieval
from mtagent.context.recall.router import SCOPES, Recaller, RecallHit
from mtagent.context.recall.sink import SessionIndex
from mtagent.context.recall.store import Doc, RecallStore

__all__ = ["SCOPES", "CompactedRecall", "Doc", "RecallHit", "RecallIndexer", "RecallStore", "Recaller", "Retrieval",
           "SessionIndex", "index_path"]
