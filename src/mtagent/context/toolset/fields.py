"""Field-weighted BM25 (BM25F) for ``tool_search``, with phrase matches and near-duplicates collapsed.

A tool is not one bag of words: a query word in its *name* says more than one in its description,
and the *server* (``github`` in ``mcp__github__create_issue``) says which product it belongs to.
One BM25 over everything let a long description outweigh the name, and a catalog's families of
near-identical tools (``crm_get_note``, ``crm_archive_note``, ``crm_search_note`` …) filled the
top five on one shared word. Three lessons from recall (issue #38), applied here:

* **field weights** — each field's term frequency is length-normalised on its own and weighted
  (:data:`FIELD_WEIGHTS`: name 3, server 2, description 1, parameters 0.5) before BM25's saturation
  (Robertson & Zaragoza's BM25F);
* **phrases** — two query words that stand next to each other in a tool's name or description
  (``pull request``, ``stack trace``) add :data:`PHRASE_WEIGHT` × the rarer word's idf;
* **near-duplicates collapsed** — a hit from the same server that matched the same query words as
  a better one adds nothing new: it moves behind the hits that do (:func:`diversify`).

Stemming is :func:`~mtagent.context.toolset.bm25.terms`' (``files``/``file``, ``modified``/``modify``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mtagent.context.toolset.bm25 import terms
from mtagent.context.toolset.entries import MCP_PREFIX, MCP_SEPARATOR, mcp_source

K1 = 1.2
FIELD_WEIGHTS: dict[str, float] = {"name": 3.0, "server": 2.0, "description": 1.0, "parameters": 0.5}
FIELD_B: dict[str, float] = {"name": 0.3, "server": 0.0, "description": 0.75, "parameters": 0.5}
PHRASE_WEIGHT = 1.0
FIELDS = tuple(FIELD_WEIGHTS)


def split_name(name: str, source: str = "") -> tuple[str, str]:
    """(server, tool) of a catalog name: ``mcp__github__create_issue`` → ("github", "create_issue");
    a built-in or skill keeps its name and takes the server from its source (``mcp:x`` → x)."""
    if mcp_source(name) is not None:
        server, _, tool = name[len(MCP_PREFIX):].partition(MCP_SEPARATOR)
        return server, tool
    return (source.split(":", 1)[1] if source.startswith("mcp:") else ""), name


@dataclass(slots=True)
class ToolDoc:
    """One tool's fields as term lists (name terms in order, for phrases)."""

    fields: dict[str, list[str]]
    counts: dict[str, Counter[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.counts = {f: Counter(ts) for f, ts in self.fields.items()}


def tool_doc(name: str, description: str, parameters: Iterable[str], source: str = "") -> ToolDoc:
    server, tool = split_name(name, source)
    return ToolDoc({"name": terms(tool), "server": terms(server), "description": terms(description),
                    "parameters": [t for p in parameters for t in terms(p)]})


@dataclass(slots=True)
class FieldIndex:
    """BM25F over :class:`ToolDoc` s (index ``i`` = the ``i``-th tool)."""

    docs: list[ToolDoc]
    df: Counter[str]
    avg: dict[str, float]
    postings: dict[str, list[int]]  # term → the tools holding it: a search touches only those

    @classmethod
    def build(cls, docs: Iterable[ToolDoc]) -> FieldIndex:
        items = list(docs)
        postings: dict[str, list[int]] = {}
        for i, doc in enumerate(items):
            for term in {t for ts in doc.fields.values() for t in ts}:
                postings.setdefault(term, []).append(i)
        df = Counter({term: len(ids) for term, ids in postings.items()})
        avg = {f: (sum(len(d.fields[f]) for d in items) / len(items) if items else 0.0) or 1.0 for f in FIELDS}
        return cls(items, df, avg, postings)

    def idf(self, term: str) -> float:
        n, df = len(self.docs), self.df.get(term, 0)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def _tf(self, doc: ToolDoc, term: str) -> float:
        total = 0.0
        for f in FIELDS:
            tf = doc.counts[f].get(term, 0)
            if tf:
                norm = 1 - FIELD_B[f] + FIELD_B[f] * len(doc.fields[f]) / self.avg[f]
                total += FIELD_WEIGHTS[f] * tf / norm
        return total

    def score(self, i: int, weights: Mapping[str, float], phrase: Sequence[str]) -> tuple[float, frozenset[str]]:
        """Tool ``i``'s score for term → weight, and which query terms it matched."""
        doc = self.docs[i]
        total, matched = 0.0, set()
        for term, factor in weights.items():
            if factor <= 0 or term not in self.df:
                continue
            tf = self._tf(doc, term)
            if tf:
                total += self.idf(term) * factor * tf * (K1 + 1) / (tf + K1)
                matched.add(term)
        for first, second in zip(phrase, phrase[1:]):
            if first in matched and second in matched and first != second and (
                    _adjacent(doc.fields["name"], first, second) or _adjacent(doc.fields["description"], first, second)):
                total += PHRASE_WEIGHT * min(self.idf(first), self.idf(second))
        return total, frozenset(matched)

    def rank(self, weights: Mapping[str, float], phrase: Sequence[str] = ()) -> list[tuple[int, float, frozenset[str]]]:
        """Tools with a positive score, best first (ties by index), with the terms each matched."""
        candidates = {i for term in weights for i in self.postings.get(term, ())}
        scored = [(i, *self.score(i, weights, phrase)) for i in sorted(candidates)]
        return sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0]))


def _adjacent(seq: Sequence[str], first: str, second: str) -> bool:
    return any(a == first and b == second for a, b in zip(seq, seq[1:]))


def diversify(ranked: Sequence[tuple[int, float, frozenset[str]]], servers: Sequence[str]) -> list[tuple[int, float]]:
    """``ranked`` with each near-duplicate (same server, same matched query terms as a better hit)
    moved behind the hits that add something; order is otherwise kept."""
    seen: set[tuple[str, frozenset[str]]] = set()
    first: list[tuple[int, float]] = []
    later: list[tuple[int, float]] = []
    for i, score, matched in ranked:
        key = (servers[i], matched)
        (later if key in seen else first).append((i, score))
        seen.add(key)
    return first + later
