"""Recall probe: after each compaction of a replay, can recall find what was compacted away?

The session is replayed through the real engine (the ``mtagent`` strategy) while every message
is indexed as it arrives, as a live session's sink does. After each compaction, probes are built
from the messages that left the view — their latest error line, file paths and code
identifiers (:mod:`mtagent.replay.probes`' extractors) — keeping only facts no longer visible
anywhere in the view (the ones a model would need recall for). Each probe's text is the query;
it passes when a message that held the fact is among the top ``k`` hits (the view's own
messages excluded, as the retrieved bucket does). The figure is the share of probes that pass.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.recall.indexer import RecallIndexer
from mtagent.context.recall.router import Recaller
from mtagent.context.tokens import MessageTokenCounter, message_text
from mtagent.replay.names import DEFAULT_WINDOW
from mtagent.replay.probes import changed_files, latest_error_line, task_identifiers
from mtagent.replay.simulate import shared_text_counter, system_prefix
from mtagent.replay.strategies import StrategyContext, make_strategy
from mtagent.replay.trajectory import Trajectory
from mtagent.session.schema import message_to_record

PROBES_PER_COMPACTION = 12
TOP_K = 5


@dataclass(slots=True)
class ProbeOutcome:
    query: str
    category: str
    found: bool
    rank: int | None


@dataclass(slots=True)
class RecallProbeResult:
    label: str
    compactions: int = 0
    outcomes: list[ProbeOutcome] = field(default_factory=list)

    @property
    def probes(self) -> int:
        return len(self.outcomes)

    @property
    def hits(self) -> int:
        return sum(o.found for o in self.outcomes)

    @property
    def rate(self) -> float | None:
        return self.hits / self.probes if self.outcomes else None


def _facts(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    """(category, text) facts of compacted-away messages, newest error first."""
    facts: list[tuple[str, str]] = []
    for m in reversed(messages):
        if isinstance(m, ToolMessage):
            line = latest_error_line(message_text(m))
            if line:
                facts.append(("error", line))
                break
    for m in messages:
        if isinstance(m, AIMessage):
            facts += [("file", p) for p in changed_files(m)]
        facts += [("identifier", t) for t in task_identifiers(message_text(m))]
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for category, text in facts:
        if text not in seen and len(text) >= 4:
            seen.add(text)
            out.append((category, text))
    return out


def _spread(facts: list[tuple[str, str]], limit: int) -> list[tuple[str, str]]:
    """Up to ``limit`` facts, taken evenly across the list (deterministic)."""
    if len(facts) <= limit:
        return facts
    step = len(facts) / limit
    return [facts[int(i * step)] for i in range(limit)]


def probe_trajectory(traj: Trajectory, *, label: str = "", window: int = DEFAULT_WINDOW,
                     settings: Settings | None = None, k: int = TOP_K) -> RecallProbeResult:
    """Replay ``traj`` with the mtagent strategy and probe recall after every compaction."""
    settings = settings or Settings()
    counter = MessageTokenCounter(encoding=settings.context.encoding,
                                  overhead_tokens=settings.context.message_overhead_tokens,
                                  count_fn=shared_text_counter(settings.context.encoding))
    result = RecallProbeResult(label)
    session = "replay"
    with tempfile.TemporaryDirectory(prefix="mtagent-recall-probe-") as tmp:
        indexer = RecallIndexer(Path(tmp), settings.recall, in_memory=True)
        recaller = Recaller(indexer)
        strategy = make_strategy("mtagent", StrategyContext(system=system_prefix(traj), window=window,
                                                            counter=counter, settings=settings, workdir=Path(tmp)))
        fed: list[BaseMessage] = []
        last = len(system_prefix(traj))
        for call_index in traj.model_calls:
            new = traj.messages[last:call_index]
            last = call_index
            for m in new:
                indexer.add_record(message_to_record(m.model_copy()), session)
            fed += new
            step = strategy.step(new)
            if not step.compacted:
                continue
            result.compactions += 1
            view_ids = {m.id for m in step.view if m.id}
            view_text = "\n".join(message_text(m) for m in step.view)
            gone = [m for m in fed if m.id not in view_ids]
            facts = [(c, t) for c, t in _facts(gone) if t not in view_text]
            for category, text in _spread(facts, PROBES_PER_COMPACTION):
                holders = {m.id for m in gone if text in message_text(m)}
                hits = recaller.search(text, k=k, exclude_message_ids=sorted(i for i in view_ids if i))
                rank = next((n for n, h in enumerate(hits, 1) if h.message_id in holders), None)
                result.outcomes.append(ProbeOutcome(text, category, rank is not None, rank))
        indexer.close()
    return result
