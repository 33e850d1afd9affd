"""Work-state probes: after a compaction, does the next view still hold the state of the work?

What users lose to a compaction is rarely a fact from deep in a tool output; it is the *work
state* — the task, the last thing they asked, a rule they set, the plan and how far it got, the
files already changed, the last verification. At every compaction of a replay the hand-off ledger
(:func:`mtagent.context.ledger.ledger_from_messages`) is taken from the recording *before* it —
the whole transcript so far, not the strategy's own lossy history — and each of its items
(:func:`~mtagent.context.ledger.ledger_items`: goal, latest request, constraints, plan steps
with their status, files created / edited / deleted, failed commands, the last verification,
rules, tools loaded, open subagent tasks) is looked for in the view sent right after
(:func:`~mtagent.context.ledger.missing_from`, case- and whitespace-insensitive; a plan counts as
carried when the view's newest plan call is the same plan). ``checked`` counts the items looked
for, ``lost`` those the view no longer holds.

The same definition serves every strategy, so the peers' counts sit beside mtagent's. A strategy
that never compacts (``raw``, ``masking``) has nothing checked. Recorded plan calls of other
agents (Claude Code ``TodoWrite``, Codex ``update_plan``, deepagents ``write_todos``, OpenHands'
``task_tracker``) are read by :func:`mtagent.context.ledger.plan_from_call`, so their plans are
part of the ledger — and of the mtagent engine's plan state — as recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from mtagent.context.ledger import ledger_from_messages, ledger_items, missing_from


@dataclass(slots=True)
class WorkStateCount:
    """Items looked for and items lost, over one or more compactions (``lost_by_kind`` says what)."""

    checked: int = 0
    lost: int = 0
    lost_by_kind: dict[str, int] = field(default_factory=dict)

    def merge(self, other: WorkStateCount) -> None:
        self.checked += other.checked
        self.lost += other.lost
        for kind, n in other.lost_by_kind.items():
            self.lost_by_kind[kind] = self.lost_by_kind.get(kind, 0) + n

    def as_dict(self) -> dict[str, object]:
        return {"checked": self.checked, "lost": self.lost, "lost_by_kind": dict(sorted(self.lost_by_kind.items()))}

    @classmethod
    def from_dict(cls, data: object) -> WorkStateCount:
        """The inverse of :meth:`as_dict`, lenient (a row written by an older replay has none)."""
        if not isinstance(data, dict):
            return cls()
        kinds = data.get("lost_by_kind")
        return cls(int(data.get("checked") or 0), int(data.get("lost") or 0),
                   {str(k): int(v) for k, v in kinds.items()} if isinstance(kinds, dict) else {})


def lost_kinds(missing: Sequence[str]) -> dict[str, int]:
    """``missing_from``'s ``"kind: text"`` lines counted by kind."""
    out: dict[str, int] = {}
    for line in missing:
        kind = line.split(":", 1)[0].strip()
        out[kind] = out.get(kind, 0) + 1
    return out


@dataclass(slots=True)
class WorkStateProbe:
    """The ledger of one recording at each model call (built once, shared by every strategy's replay)."""

    messages: Sequence[BaseMessage]
    _ledgers: dict[int, object] = field(default_factory=dict)

    def check(self, call_index: int, view: Sequence[BaseMessage]) -> tuple[int, dict[str, int]]:
        """``(checked, lost by kind)``: the ledger of the recording before the model call at
        ``call_index``, and what of it ``view`` (the request sent at that call) no longer carries."""
        ledger = self._ledgers.get(call_index)
        if ledger is None:
            ledger = self._ledgers[call_index] = ledger_from_messages(self.messages[:call_index])
        return len(ledger_items(ledger)), lost_kinds(missing_from(ledger, view))  # type: ignore[arg-type]
