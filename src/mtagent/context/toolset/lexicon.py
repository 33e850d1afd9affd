"""Query expansion for ``tool_search``: words that name the same thing in tool descriptions.

A model asks for what it needs in its own words ("open a bug report", "money back"); a tool
describes itself in its author's ("create an issue", "refund"). BM25 only matches words, so each
query word also brings the other words of its group here, at :data:`EXPANSION_WEIGHT` of a query
word's weight: an exact word still wins, a synonym can only break a tie or find what words alone
miss. The groups are the general vocabulary of developer and SaaS tools (actions, objects, media),
not names of particular tools. With an embedding model configured (``recall.embeddings``) the
search is hybrid as well, which covers what no word list can.
"""

from __future__ import annotations

from collections.abc import Iterable

from mtagent.context.toolset.bm25 import terms

EXPANSION_WEIGHT = 0.4

GROUPS: tuple[str, ...] = (
    # actions
    "create new add make open start",
    "get read show view fetch retrieve display print inspect detail",
    "list enumerate browse all",
    "update change edit modify set rename mark transition",
    "move relocate rename",
    "delete remove drop erase destroy discard",
    "search find lookup look query locate seek grep",
    "send post tell notify announce publish share",
    "reply respond answer",
    "download fetch grab retrieve",
    "run execute invoke launch trigger",
    "close resolve done finish complete",
    "schedule book plan",
    "scale replica copies instances",
    "merge land accept",
    "comment remark annotate note",
    # objects
    "issue bug ticket problem defect task",
    "pull request pr merge review",
    "commit history log revision",
    "branch fork",
    "repository repo codebase project",
    "message chat text note",
    "channel room conversation thread",
    "user member people person account profile",
    "image picture photo screenshot png capture snapshot",
    "browser page website site tab",
    "navigate go visit open load",
    "click press tap button",
    "fill type enter input field form",
    "web internet online",
    "url link address http https article",
    "time clock hour timezone zone",
    "calendar event meeting agenda appointment availability free busy",
    "refund money reimburse reverse",
    "invoice bill billing receipt payment charge",
    "file document doc",
    "folder directory dir tree layout structure",
    "database db sql table row column schema",
    "log logs output stdout tail",
    "pod container workload kubernetes cluster k8s",
    "error exception crash stack trace failure",
    "memory remember knowledge graph fact node entity",
    "reaction emoji react",
    "status state progress",
    "workspace wiki notion",
    "nearby near local place business",
)


def _index(groups: Iterable[str]) -> dict[str, tuple[str, ...]]:
    related: dict[str, list[str]] = {}
    for group in groups:
        words = list(dict.fromkeys(terms(group)))
        for word in words:
            related.setdefault(word, []).extend(w for w in words if w != word)
    return {word: tuple(dict.fromkeys(others)) for word, others in related.items()}


RELATED = _index(GROUPS)


def expand(query_terms: list[str]) -> dict[str, float]:
    """Weights of the query's terms (1.0) and of their group's other words (:data:`EXPANSION_WEIGHT`)."""
    weights = {t: 1.0 for t in query_terms}
    for term in query_terms:
        for other in RELATED.get(term, ()):
            weights.setdefault(other, EXPANSION_WEIGHT)
    return weights
