"""Collapsing recall's candidates: one hand-off per session, no near-copies (issue #38).

A long session writes a compaction summary at every boundary, each quoting the task, and session
notes that quote it again: a recall for a name the task mentions came back as five near-copies
of the task text, and the item holding the fact was pushed out of the top five. Two rules, both
applied in rank order so the better-ranked copy is the one kept:

* **one derived item per session** — summaries and session notes are derived from the
  conversation (their source is indexed too, with the exact text); the best-ranked one of a
  session stands for all of them;
* **no near-copy** — an item most of whose word 3-grams (:data:`NEAR_COPY_SHARE`) are already
  shown by the items kept before it adds nothing and is skipped.

Only the first :data:`SHINGLE_SCAN_CHARS` characters of an item are compared, so a collapse costs
O(candidates), never O(index).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from mtagent.context.recall.store import Row

DERIVED_KINDS = frozenset({"summary", "session_memory"})
NEAR_COPY_SHARE = 0.8
SHINGLE_SCAN_CHARS = 20_000
_WORD = re.compile(r"\w+")


def shingles(text: str, size: int = 3) -> set[tuple[str, ...]]:
    """The item's word ``size``-grams, lower-cased (a text shorter than ``size`` words is one gram)."""
    words = _WORD.findall(text[:SHINGLE_SCAN_CHARS].lower())
    if len(words) < size:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + size]) for i in range(len(words) - size + 1)}


def collapse(rows: Iterable[Row]) -> Iterator[Row]:
    """``rows`` in their order, less the second hand-off of a session and every near-copy."""
    derived_seen: set[str | None] = set()
    shown: set[tuple[str, ...]] = set()
    for row in rows:
        doc = row.doc
        if doc.kind in DERIVED_KINDS:
            if doc.session in derived_seen:
                continue
        grams = shingles(doc.text)
        if grams and len(grams & shown) >= NEAR_COPY_SHARE * len(grams):
            continue
        if doc.kind in DERIVED_KINDS:
            derived_seen.add(doc.session)
        shown |= grams
        yield row


def evidence_first(kind: str) -> int:
    """Sort key among equally covering items: the source (a message, a saved result, a memory, a
    file) before what was derived from it (a summary, session notes) — it holds the exact text."""
    return 1 if kind in DERIVED_KINDS else 0
