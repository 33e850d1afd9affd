"""A small Okapi BM25 over tool documents: name, description and parameter names.

Tool catalogs are small (tens to a few thousand entries) and change only when a server connects,
so an in-memory index rebuilt on change is simpler and faster than SQLite FTS5 here — and, unlike
FTS5's query language, nothing a model writes can be an operator: a query is only ever split into
word terms.

Terms are the words of ``snake_case``, ``camelCase``, ``kebab-case`` and ``mcp__server__tool``
names split apart, lower-cased, with a light suffix stemmer (``files`` → ``file``, ``listing`` →
``list``) so a paraphrased query meets a description's wording; recall's stopwords are skipped.
The name field counts :data:`NAME_WEIGHT` times: a query naming the tool should win.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mtagent.context.recall.query import MAX_QUERY_SCAN_CHARS, STOPWORDS

K1 = 1.2
B = 0.75
NAME_WEIGHT = 3
MAX_TERM_CHARS = 40
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z]+|[0-9]+")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "s")
# English function words: a request is a sentence ("can you show me what's in …"), a tool is not —
# these carry nothing about which tool is meant, only noise in the rank.
FUNCTION_WORDS = frozenset("i me my mine we us our ours you your yours he him his she her they them their its "
                           "what which who whom whose how when where why can could would should will shall may "
                           "might must please there here some any so just also very really been being am let "
                           "i'm it's what's".split())


def stem(word: str) -> str:
    """A light suffix stemmer: ``files``/``file``, ``searching``/``search``, ``creates``/``create`` meet.

    A final ``e`` is dropped after the suffix, so both sides of each pair end the same way."""
    base = word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                base += "y"  # copies/copied → copy, like modify
            elif suffix == "es" and not base.endswith(("s", "x", "z", "ch", "sh")):
                base = word[:-1]  # files → file (then fil), but boxes → box
            elif len(base) >= 2 and base[-1] == base[-2] and base[-1] not in "ls":  # running → run
                base = base[:-1]
            break
    return base[:-1] if base.endswith("e") and len(base) > 3 else base


def terms(text: str) -> list[str]:
    """The search terms of ``text`` (any string; never raises)."""
    if not isinstance(text, str):
        return []
    out: list[str] = []
    for chunk in _CAMEL.sub(" ", text[:MAX_QUERY_SCAN_CHARS]).split():
        for word in _WORD.findall(chunk):
            lowered = word.lower()[:MAX_TERM_CHARS]
            if lowered in STOPWORDS or lowered in FUNCTION_WORDS or (len(lowered) < 2 and not lowered.isdigit()):
                continue
            out.append(stem(lowered))
    return out


@dataclass(slots=True)
class BM25Index:
    """Okapi BM25 over documents given as term lists (index ``i`` = the ``i``-th document)."""

    docs: list[Counter[str]] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    df: Counter[str] = field(default_factory=Counter)

    @classmethod
    def build(cls, documents: Iterable[Sequence[str]]) -> BM25Index:
        index = cls()
        for doc in documents:
            counts = Counter(doc)
            index.docs.append(counts)
            index.lengths.append(len(doc))
            index.df.update(counts.keys())
        return index

    def idf(self, term: str) -> float:
        n, df = len(self.docs), self.df.get(term, 0)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: Sequence[str] | Mapping[str, float]) -> list[float]:
        """BM25 score of every document for ``query``: terms (repeats ignored) or term → weight."""
        if not self.docs:
            return []
        weights = dict(query) if isinstance(query, Mapping) else dict.fromkeys(query, 1.0)
        avg = sum(self.lengths) / len(self.lengths) or 1.0
        out = [0.0] * len(self.docs)
        for term, factor in weights.items():
            if term not in self.df or factor <= 0:
                continue
            weight = self.idf(term) * factor
            for i, doc in enumerate(self.docs):
                tf = doc.get(term, 0)
                if tf:
                    out[i] += weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.lengths[i] / avg))
        return out

    def rank(self, query: Sequence[str] | Mapping[str, float]) -> list[tuple[int, float]]:
        """Documents with a positive score, best first (ties by index: stable)."""
        scored = [(i, s) for i, s in enumerate(self.scores(query)) if s > 0]
        return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


def tool_terms(name: str, description: str, parameters: Iterable[str]) -> list[str]:
    """One tool's document: its name (weighted), description and parameter names."""
    return [*terms(name) * NAME_WEIGHT, *terms(description), *(t for p in parameters for t in terms(p))]
