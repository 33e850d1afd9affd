"""context.compact_every_rounds: a round-count trigger, off by default."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from mtagent.config import Settings
from mtagent.context.compaction.policy import AutoCompactPolicy
from mtagent.context.requested_compaction import manual_compact
from mtagent.context.window import ContextWindowManager


class FixedSummarizer:
    def summarize(self, messages, *, instructions=None, previous_summary=None) -> str:
        return "Goal: chat. State: fine."


def _settings(every: int) -> Settings:
    return Settings.model_validate({"context": {"compact_every_rounds": every, "compaction_trigger": "threshold",
                                                "compression_preserve_min_tokens": 200,
                                                "compression_preserve_max_tokens": 400},
                                    "session_memory": {"enabled": False}})


def _rounds(n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(n):
        out += [HumanMessage(f"question {i} " + "word " * 60, id=f"h{i}"),
                AIMessage(f"answer {i} " + "word " * 60, id=f"a{i}")]
    return out[:-1]  # ends with the new user message


def test_off_by_default() -> None:
    assert Settings().context.compact_every_rounds == 0
    policy = AutoCompactPolicy(Settings())
    for i in range(100):
        policy.observe_round(HumanMessage("x", id=f"h{i}"))
    assert not policy.decide(50_000).compact


def test_compacts_after_n_rounds_and_counts_each_user_message_once() -> None:
    policy = AutoCompactPolicy(_settings(3))
    for message in [HumanMessage("a", id="1"), HumanMessage("a", id="1"), AIMessage("b", id="2"),
                    HumanMessage("c", id="3")]:
        policy.observe_round(message)
    assert policy.rounds_since_compact == 2 and not policy.decide(5_000).compact
    policy.observe_round(HumanMessage("d", id="4"))
    decision = policy.decide(5_000)
    assert decision.compact and "compact_every_rounds" in decision.reason
    assert not policy.decide(300).compact  # smaller than the recent tail: nothing to summarize
    policy.record_success(5_000, 1_000)
    assert policy.rounds_since_compact == 0 and not policy.decide(5_000).compact


def test_window_compacts_on_the_round_count() -> None:
    engine = ContextWindowManager(_settings(4), summarizer=FixedSummarizer(), sink=[])
    history = _rounds(3)
    for end in range(1, len(history) + 1, 2):
        assert engine.prepare(history[:end]).compaction is None
    history = _rounds(5)
    prepared = engine.prepare(history)
    assert prepared.compaction is not None and prepared.compaction.trigger == "auto"


def test_a_manual_compact_restarts_the_round_count() -> None:
    """/compact is a compaction: the next round-count compaction is N rounds after it, not after
    the last automatic one (otherwise a /compact is followed at once by another compaction)."""
    engine = ContextWindowManager(_settings(4), summarizer=FixedSummarizer(), sink=[])
    history = _rounds(3)
    for end in range(1, len(history) + 1, 2):
        assert engine.prepare(history[:end]).compaction is None
    assert engine.policy.rounds_since_compact == 3
    history = manual_compact(engine, history).new_history()
    assert engine.policy.rounds_since_compact == 0
    history += [AIMessage("after compact " + "word " * 60, id="ax"), HumanMessage("next " + "word " * 60, id="hx")]
    assert engine.prepare(history).compaction is None  # one round since /compact, not five
