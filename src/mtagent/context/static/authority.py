"""Authority: who wins when two pieces of context disagree (spec 003, "Authority").

The order, highest first::

    system / safety > organization > project rules > current user instruction
      > current task state > verified tool results > long-term memory > summaries > old conversation

:func:`detect_conflicts` is deliberately simple and honest: it looks for *directives* —
"never X", "don't X", "avoid X" against "always X", "use X", "X" as an imperative — about the
same subject in items of different authority, and records each such pair with the higher item
as the winner. It does not understand paraphrase; it catches the common, costly case where a
remembered preference or an old summary says the opposite of a rule. Conflicts are rendered as
spec 003's ``{key, winner, losers, reason}`` for the ContextPlan's ``conflicts``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache


class Authority(IntEnum):
    """Higher value wins a conflict; the values are the places in the order above of the kinds of
    item that hold directives here (the others never reach :func:`detect_conflicts`)."""

    SUMMARY = 1
    LONG_TERM_MEMORY = 2
    PROJECT_RULES = 6


@dataclass(slots=True, frozen=True)
class AuthorityItem:
    """A piece of context that may hold directives: a rule file, a memory, a summary."""

    id: str
    authority: Authority
    text: str


@dataclass(slots=True, frozen=True)
class Conflict:
    key: str  # the shared subject, normalized
    winner: str  # item id
    losers: tuple[str, ...]
    reason: str

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "winner": self.winner, "losers": list(self.losers), "reason": self.reason}


@dataclass(slots=True, frozen=True)
class Directive:
    polarity: int  # +1 do, -1 do not
    subject: frozenset[str]
    line: str


_NEGATORS = re.compile(
    r"\b(?:never|don'?t|do not|does not|doesn'?t|must not|mustn'?t|should not|shouldn'?t|"
    r"cannot|can'?t|may not|avoid|stop|no longer|not allowed to|forbidden to|refrain from)\b"
)
_AFFIRMERS = re.compile(r"\b(?:always|must|should|prefers?|likes? to|wants? to|please|make sure to|be sure to)\b")
_IMPERATIVES = frozenset(
    "use edit modify change touch write run commit push add remove delete install import call "
    "prefer keep create rename update format test deploy merge rebase introduce".split()
)
_SYNONYMS = {
    "prefer": "use", "prefers": "use", "using": "use", "uses": "use", "used": "use",
    "modify": "edit", "modifies": "edit", "modifying": "edit", "editing": "edit", "edits": "edit",
    "change": "edit", "changing": "edit", "changes": "edit", "touch": "edit", "touching": "edit",
    "introduce": "add", "introducing": "add", "adding": "add", "adds": "add",
    "delete": "remove", "deleting": "remove", "removing": "remove", "removes": "remove",
    "running": "run", "runs": "run", "writing": "write", "writes": "write",
}
_STOPWORDS = frozenset(
    "a an the any to in into under inside of for on at by with from this that these those it its "
    "be is are was were file files folder folders directory dir dirs code project repo "
    "always never must should please do not don't dont you we i user the ever "
    "directly just only also now again manually carefully".split()
)


def _stem(word: str) -> str:
    word = word.strip("./-_:'\"`")
    word = _SYNONYMS.get(word, word)
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "is", "us")):
        word = word[:-1]
    return _SYNONYMS.get(word, word)


def _subject(text: str) -> frozenset[str]:
    words = re.findall(r"[a-z0-9_][a-z0-9_./'-]*", text.casefold())
    return frozenset(w for w in (_stem(x) for x in words) if w and w not in _STOPWORDS)


@lru_cache(maxsize=4096)
def directives(text: str) -> tuple[Directive, ...]:
    """The do / do-not statements of a text, one per line or sentence (cached: rules and
    memories are re-checked every turn and rarely change)."""
    out: list[Directive] = []
    for raw in re.split(r"(?:\r?\n)+|(?<=[.!;])\s+", text):
        line = re.sub(r"^[\s>*+#-]*(?:\d+[.)]\s*)?", "", raw).replace("~~", "").strip()
        low = re.sub(r"^[\w ]{1,24}:\s+", "", line.casefold())
        if not low or low.startswith("<!--"):
            continue
        neg = _NEGATORS.search(low)
        if neg:
            subject = _subject(low[neg.end():])
            polarity = -1
        elif (aff := _AFFIRMERS.search(low)) is not None:
            subject = _subject(low[aff.end():])
            polarity = 1
        elif low.split(" ", 1)[0] in _IMPERATIVES:
            subject = _subject(low)
            polarity = 1
        else:
            continue
        if subject:
            out.append(Directive(polarity, subject, line))
    return tuple(out)


def _same_subject(a: frozenset[str], b: frozenset[str]) -> frozenset[str] | None:
    if a == b:
        return a
    small, big = (a, b) if len(a) <= len(b) else (b, a)
    return small if len(small) >= 2 and small <= big else None


def detect_conflicts(items: Sequence[AuthorityItem]) -> list[Conflict]:
    """Pairs of opposite directives about one subject in items of different authority.

    The item with the higher :class:`Authority` wins; one conflict is recorded per subject
    and winner, listing every lower item that contradicts it.
    """
    # Two directives share a subject only if one's words contain all of the other's, so the
    # superset holds the subset's rarest word: looking each directive up by its rarest word
    # finds every partner (supersets here, subsets when the subset's own turn comes).
    entries = [(item, d) for item in items for d in directives(item.text)]
    by_word: dict[str, list[int]] = {}
    for index, (_, d) in enumerate(entries):
        for word in d.subject:
            by_word.setdefault(word, []).append(index)
    found: dict[tuple[str, str], tuple[set[str], list[str]]] = {}
    seen_pairs: set[tuple[int, int]] = set()
    for i, (a, ad) in enumerate(entries):
        rarest = min(ad.subject, key=lambda w: (len(by_word[w]), w))
        for j in by_word[rarest]:
            pair = (min(i, j), max(i, j))
            if j == i or pair in seen_pairs:
                continue
            seen_pairs.add(pair)
            b, bd = entries[j]
            if a.authority == b.authority or ad.polarity == bd.polarity:
                continue
            shared = _same_subject(ad.subject, bd.subject)
            if shared is None:
                continue
            (high, hd), (low, ld) = ((a, ad), (b, bd)) if a.authority > b.authority else ((b, bd), (a, ad))
            key = " ".join(sorted(shared))
            losers, reasons = found.setdefault((key, high.id), (set(), []))
            if low.id not in losers:
                losers.add(low.id)
                reasons.append(
                    f"{low.authority.name.lower()} {low.id} says {ld.line!r} but "
                    f"{high.authority.name.lower()} {high.id} says {hd.line!r}; "
                    f"{high.authority.name.lower()} wins"
                )
    return [Conflict(key, winner, tuple(sorted(losers)), "; ".join(reasons))
            for (key, winner), (losers, reasons) in found.items()]
