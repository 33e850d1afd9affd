"""The newest tool round the model has not answered survives every compaction (#38).

A compaction that summarized away a result the model had not yet seen made it call the tool again;
a large result refilled the window and was compacted away again — 159 compactions in one session.
Each compaction kind and each eval policy's settings are checked here; on the old code the unanswered
round was summarized whenever it was larger than the recent tail's cap.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.compaction.compactor import (
    CompactionOptions,
    SummaryOutcome,
    build_compaction_result,
    compact,
)
from mtagent.context.compaction.microcompact import maybe_size_based_microcompact
from mtagent.context.compaction.policy import AutoCompactPolicy
from mtagent.context.invariants import unanswered_round_start, validate_view
from mtagent.context.tokens import MessageTokenCounter
from mtagent.context.requested_compaction import reactive_compact
from mtagent.context.window import ContextWindowManager
from mtagent.eval.policies import BUILTIN_POLICIES, merge_sections
from mtagent.eval.suite import SUITE_SETTINGS
from mtagent.events import EventBus, EventType, SessionStats

COUNTER = MessageTokenCounter(count_fn=lambda text: len(text) // 4 + 1)


def _settings(policy: str) -> Settings:
    return Settings.model_validate(merge_sections(SUITE_SETTINGS, BUILTIN_POLICIES[policy]))


def _history(big_tokens: int = 5_000) -> list[BaseMessage]:
    history: list[BaseMessage] = [HumanMessage("TASK t\n1. Read the files.\n2. Write the answer.", id="h0")]
    for i in range(6):
        history.append(AIMessage("", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "read_file",
                                                               "args": {"file_path": f"src/m{i}.py"}}]))
        history.append(ToolMessage("x" * 2_400, tool_call_id=f"c{i}", name="read_file", id=f"t{i}"))
    history.append(AIMessage("", id="a-big", tool_calls=[{"id": "c-big", "name": "read_file",
                                                           "args": {"file_path": "src/big.py"}}]))
    history.append(ToolMessage("LEASE_SECONDS = 4711\n" + "y" * (big_tokens * 4), tool_call_id="c-big",
                               name="read_file", id="t-big"))
    return history


def _kept_ids(messages: list[BaseMessage]) -> list[str]:
    return [str(m.id) for m in messages]


def test_the_unanswered_round_is_the_last_assistant_call_with_nothing_after_it() -> None:
    history = _history()
    assert unanswered_round_start(history) == len(history) - 2
    answered = [*history, AIMessage("done", id="a-done")]
    assert unanswered_round_start(answered) is None


@pytest.mark.parametrize("policy", sorted(BUILTIN_POLICIES))
def test_a_full_compaction_keeps_the_round_the_model_has_not_seen(policy: str) -> None:
    settings = _settings(policy)
    options = CompactionOptions(settings=settings, counter=COUNTER, extra_tokens=2_000,
                                token_limit=settings.context.token_limit)
    result = compact(_history(), None, options)
    assert _kept_ids(result.messages_to_keep)[-2:] == ["a-big", "t-big"]
    assert "t-big" not in result.summarized_ids
    validate_view(result.new_history())


@pytest.mark.parametrize("policy", sorted(BUILTIN_POLICIES))
def test_auto_and_reactive_compaction_through_the_manager_keep_it(policy: str) -> None:
    settings = _settings(policy)
    manager = ContextWindowManager(settings, counter=COUNTER, sink=[])
    prepared = manager.prepare(_history(), tools_tokens=2_000)
    assert prepared.compaction is not None or policy == "masking"  # masking compacts only at 95%
    assert _kept_ids(prepared.messages)[-2:] == ["a-big", "t-big"]
    assert "LEASE_SECONDS = 4711" in str(prepared.messages[-1].content)
    reactive = reactive_compact(ContextWindowManager(settings, counter=COUNTER, sink=[]), _history(), tools_tokens=2_000)
    assert _kept_ids(reactive.messages_to_keep)[-2:] == ["a-big", "t-big"]


def test_a_session_memory_compaction_that_chose_a_later_split_keeps_it_too() -> None:
    settings = _settings("mtagent")
    history = _history()
    options = CompactionOptions(settings=settings, counter=COUNTER, extra_tokens=2_000,
                                token_limit=settings.context.token_limit)
    result = build_compaction_result(history, len(history), SummaryOutcome("notes", "session_memory"), options)
    assert _kept_ids(result.messages_to_keep) == ["a-big", "t-big"]


def test_a_round_larger_than_any_view_is_not_kept() -> None:
    """No view could hold it (only an unbounded tool gets there: reads are window-bounded)."""
    settings = _settings("threshold")
    options = CompactionOptions(settings=settings, counter=COUNTER, extra_tokens=2_000,
                                token_limit=settings.context.token_limit)
    result = compact(_history(big_tokens=20_000), None, options)
    assert "t-big" in result.summarized_ids


def test_size_clearing_never_clears_the_unanswered_result() -> None:
    settings = Settings(microcompact={"size_trigger_fraction": 0.1, "size_target_fraction": 0.01, "keep_recent": 0})
    history = _history()
    out = maybe_size_based_microcompact(history, COUNTER.estimate(history), 12_000, token_of=COUNTER.message_tokens,
                                        settings=settings.microcompact)
    assert out.cleared_ids and "t-big" not in out.cleared_ids  # the older results are cleared, not this one


def test_a_compaction_that_frees_too_little_counts_against_the_breaker() -> None:
    bus, stats, seen = EventBus(), SessionStats(), []
    bus.subscribe(lambda e: seen.append(e))
    policy = AutoCompactPolicy(Settings(), bus=bus, stats=stats)
    policy.record_compaction(12_000, 9_000, threshold=10_000)  # made room: a success
    assert policy.consecutive_failures == 0
    for n in (1, 2):
        policy.record_compaction(12_000, 10_500, threshold=10_000)
        assert policy.consecutive_failures == n and not policy.disabled
    failed = [e for e in seen if e.type == EventType.COMPACT_FAILED]
    assert failed and all(e.data.get("low_progress") for e in failed)
    policy.record_compaction(12_000, 10_500, threshold=10_000)
    assert policy.disabled  # the third in a row trips the breaker
    assert stats.compactions == 4  # each happened and is counted as a compaction


def test_a_compaction_that_made_room_resets_the_count() -> None:
    policy = AutoCompactPolicy(Settings())
    policy.record_compaction(12_000, 10_500, threshold=10_000)
    policy.record_compaction(12_000, 10_500, threshold=10_000)
    policy.record_compaction(12_000, 8_000, threshold=10_000)
    assert policy.consecutive_failures == 0 and not policy.disabled
