"""The terms ``tool_search`` ranks tools by (its BM25F is :mod:`mtagent.context.toolset.fields`).

Tool catalogs are small (tens to a few thousand entries) and change only when a server connects,
so an in-memory index rebuilt on change is simpler and faster than SQLite FTS5 here — and, unlike
FTS5's query language, nothing a model writes can be an operator: a query is only ever split into
word terms.

Terms are the words of ``snake_case``, ``camelCase``, ``kebab-case`` and ``mcp__server__tool``
names split apart, lower-cased, with a light suffix stemmer (``files`` → ``file``, ``listing`` →
``list``) so a paraphrased query meets a description's wording; recall's stopwords are skipped.
"""

from __future__ import annotations

import re

from mtagent.context.recall.query import MAX_QUERY_SCAN_CHARS, STOPWORDS

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
