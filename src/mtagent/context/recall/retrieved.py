"""Recall after compaction: the bounded "retrieved" bucket (spec 003 §九, 20–35% of the window).

Compaction forgets by design. When a new user message, or a tool result that failed, names an
identifier (a path, a symbol, an error string) that is no longer anywhere in the view but the
index holds, the best hits for it are added to the request as one ``<retrieved_context>``
message at the end — after the recent tail, so the cached prefix is untouched — and the plan
records which identifier pulled in which item and why. The bucket:

* is bounded by ``recall.retrieved_max_fraction`` of the window and by the room left below the
  auto-compact threshold; over budget, low-confidence hits go first (spec 003's order), then the
  rest from the weakest up;
* never repeats what the view already shows, and filters stale file reads (a later edit exists);
* lives until the next user message replaces or clears it (tool rounds in between keep it).

Only what a compaction of this session removed is retrieved: until the view has held a summary a
call only notes which messages it saw; ``catch_up`` brings the index up to date after a compaction
and before a search.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from mtagent.config import RecallSettings
from mtagent.context.boundary import SUMMARY_KIND, is_summary_message
from mtagent.context.budget import Bucket
from mtagent.context.recall.documents import text_of
from mtagent.context.recall.query import identifiers
from mtagent.context.recall.router import Recaller, RecallHit
from mtagent.context.recall.temperature import BudgetCandidate, over_budget_actions
from mtagent.context.tokens import message_text
from mtagent.frames import frame

if TYPE_CHECKING:
    from mtagent.context.plan import ContextPlan

log = logging.getLogger(__name__)
RETRIEVED_ID = "retrieved-context"
MAX_IDENTIFIERS = 6
# Engine-made messages are never "new" words of the user: a compaction summary names compacted-away
# identifiers by design, session notes and re-attached files are the engine's own.
_STATIC_KINDS = ("static_context", "retrieved", "reattached", "session_memory", SUMMARY_KIND)


@dataclass(slots=True, frozen=True)
class RetrievedItem:
    ref: str
    reference: str
    identifier: str
    confidence: float
    tokens: int
    text: str

    def as_dict(self) -> dict[str, object]:
        return {"ref": self.ref, "reference": self.reference, "identifier": self.identifier,
                "confidence": self.confidence, "tokens": self.tokens}


@dataclass(slots=True)
class Retrieval:
    """This call's retrieved bucket: the message to append and the plan's account of it."""

    items: list[RetrievedItem] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    reason: str = ""

    @property
    def tokens(self) -> int:
        return sum(i.tokens for i in self.items)

    def message(self) -> HumanMessage | None:
        if not self.items:
            return None
        blocks = ["Recalled from earlier in this project (compacted away); verify before relying on it."]
        for n, item in enumerate(self.items, 1):
            blocks += [f"[{n}] {item.reference} — names {item.identifier!r}, confidence {item.confidence:.2f}",
                       item.text]
        return HumanMessage(content=frame("retrieved_context", "\n".join(blocks), reason=self.reason), id=RETRIEVED_ID,
                            response_metadata={"mtagent": {"kind": "retrieved", "bucket": "retrieved"}})

    def as_dict(self) -> dict[str, object]:
        return {"reason": self.reason, "tokens": self.tokens, "items": [i.as_dict() for i in self.items],
                "dropped": [{"ref": r, "reason": why} for r, why in self.dropped]}


def _is_trigger(message: BaseMessage) -> bool:
    meta = (message.response_metadata or {}).get("mtagent") or {}
    if meta.get("kind") in _STATIC_KINDS or meta.get("injected"):
        return False
    if isinstance(message, HumanMessage):
        return True
    return isinstance(message, ToolMessage) and (
        message.status == "error" or text_of(message.content).lstrip().lower().startswith("error"))


class CompactedRecall:
    """Fills the retrieved bucket when new messages name compacted-away identifiers."""

    def __init__(self, recaller: Recaller, settings: RecallSettings, count_tokens: Callable[[str], int],
                 session_id: str | None = None, *, catch_up: Callable[[], object] | None = None) -> None:
        self.recaller = recaller
        self.catch_up = catch_up
        self.settings = settings
        self.count_tokens = count_tokens
        self.session_id = session_id
        self.current = Retrieval()
        self._seen: set[str] | None = None
        self._compacted = False  # the view has held a compaction summary: cold items may exist

    def _new_messages(self, view: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The messages the previous call's view did not hold (by id). A compaction only removes
        and summarizes, so the kept tail stays "seen" even when the previous call's last message
        was compacted away. The first call (a new or resumed session) looks at the last only."""
        if self._seen is None:
            new = list(view[-1:])
        else:
            new = [m for m in view if not m.id or m.id not in self._seen]
        self._seen = {str(m.id) for m in view if m.id}
        return new

    def step(self, view: Sequence[BaseMessage], *, window: int, room: int) -> Retrieval:
        """This call's retrieval; ``room`` is what is left below the threshold before it."""
        new = self._new_messages(view)
        if self.catch_up is not None and any(is_summary_message(m) for m in new):
            self.catch_up()  # a compaction since the last call: the natural moment to index what it removed
        self._compacted = self._compacted or any(is_summary_message(m) for m in view)
        if not self._compacted:
            return self.current
        triggers = [m for m in new if _is_trigger(m)]
        if any(isinstance(m, HumanMessage) for m in triggers):
            self.current = Retrieval()
        if not triggers:
            return self.current
        names: list[str] = []
        for message in triggers:
            for name in identifiers(text_of(message.content), limit=MAX_IDENTIFIERS):
                if name not in names:
                    names.append(name)
        if not names:
            return self.current
        # message_text: a call's name and arguments are in the view too (an edit's new_string).
        view_text = "\n".join(message_text(m) for m in view if m not in triggers)
        missing = [n for n in names if n not in view_text][:MAX_IDENTIFIERS]
        if not missing:
            return self.current
        view_ids = [str(m.id) for m in view if m.id]
        budget = max(0, min(int(window * self.settings.retrieved_max_fraction), room))
        self.current = self._retrieve(missing, view_ids, budget)
        return self.current

    def extend(self, view: Sequence[BaseMessage], messages: Sequence[BaseMessage],
               plan: ContextPlan) -> Sequence[BaseMessage]:
        """``messages`` with this call's retrieved bucket appended, recorded in ``plan`` (its
        tokens count toward the plan's total). Never raises: recall is an aid, not a requirement."""
        try:
            retrieval = self.step(view, window=plan.token_limit, room=max(0, plan.threshold - plan.tokens))
        except Exception as exc:  # noqa: BLE001
            log.warning("recall after compaction failed: %s", exc)
            return messages
        if not retrieval.items and not retrieval.dropped:
            return messages
        plan.retrieved = retrieval.as_dict()
        message = retrieval.message()
        if message is None:
            return messages
        plan.buckets.add(Bucket.RETRIEVED, retrieval.tokens)
        plan.tokens += retrieval.tokens
        return [*messages, message]

    def _retrieve(self, names: list[str], view_ids: list[str], budget: int) -> Retrieval:
        if self.catch_up is not None:
            self.catch_up()
        chosen: list[tuple[RecallHit, str]] = []
        seen: set[str] = set()
        for name in names:
            hits = self.recaller.search(name, scope="all", k=3, session=self.session_id, stale="filter",
                                        exclude_message_ids=view_ids)
            for hit in hits:
                if hit.ref in seen or hit.temperature != "cold":  # only what a compaction removed
                    continue
                if name.lower() not in self.recaller.rehydrate(hit.ref).lower() and hit.confidence < 1.0:
                    continue
                seen.add(hit.ref)
                chosen.append((hit, name))
                break
            if len(chosen) >= self.settings.retrieve_max_hits:
                break
        per_item = max(1, budget // max(1, len(chosen))) if chosen else 0
        items: list[RetrievedItem] = []
        for hit, name in chosen:
            frame = self.count_tokens(hit.reference) + 8
            text, tokens = self._fitted(self.recaller.rehydrate(hit.ref), name, per_item - frame)
            items.append(RetrievedItem(hit.ref, hit.reference, name, hit.confidence, tokens + frame, text))
        result = Retrieval(reason="the new message names what a compaction removed: "
                           + ", ".join(n.replace('"', "'")[:60] for n in names))
        candidates = [BudgetCandidate(i.ref, "retrieval", i.tokens, confidence=i.confidence) for i in items]
        actions = over_budget_actions(candidates, sum(i.tokens for i in items), budget,
                                      min_confidence=self.settings.min_confidence)
        gone = {a.id: a.step for a in actions}
        # Beyond spec 003's first step the bucket itself is the budget: drop the weakest until it fits.
        used = sum(i.tokens for i in items if i.ref not in gone)
        for item in sorted(items, key=lambda i: i.confidence):
            if used <= budget:
                break
            if item.ref not in gone:
                gone[item.ref] = "retrieved bucket full"
                used -= item.tokens
        result.items = [i for i in items if i.ref not in gone]
        result.dropped = [(ref, step.replace("_", " ")) for ref, step in gone.items()]
        return result


    def _fitted(self, text: str, name: str, tokens: int) -> tuple[str, int]:
        """An excerpt around ``name`` of at most ``tokens`` tokens when one fits (dense text — hex,
        base64 — holds far fewer characters per token than prose, so characters are only a first
        guess), and its token count."""
        chars = max(1, tokens) * 3
        excerpt = _excerpt(text, name, chars)
        used = self.count_tokens(excerpt)
        for _ in range(4):
            if used <= tokens or chars <= len(name) + 2:
                break
            chars = max(len(name) + 2, int(chars * tokens / used * 0.95))
            excerpt = _excerpt(text, name, chars)
            used = self.count_tokens(excerpt)
        return excerpt, used


def _excerpt(text: str, name: str, chars: int) -> str:
    """About ``chars`` characters of ``text`` centred on ``name``."""
    if len(text) <= chars:
        return text
    at = max(0, text.lower().find(name.lower()))
    start = max(0, at - chars // 2)
    return ("…" if start else "") + text[start:start + chars] + ("…" if start + chars < len(text) else "")
