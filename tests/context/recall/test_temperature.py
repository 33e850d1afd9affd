"""Temperature labels and spec 003's over-budget order."""

from __future__ import annotations

from mtagent.context.recall.temperature import (
    STEP_ORDER,
    BudgetCandidate,
    over_budget_actions,
    tail_flags,
    temperature_of,
)


def test_labels_follow_where_an_item_sits() -> None:
    assert temperature_of("system", in_tail=True) == "frozen"
    assert temperature_of("rules", in_tail=False) == "frozen"
    assert temperature_of("memory", in_tail=True) == "long_term"
    assert temperature_of("retrieved", in_tail=False) == "hot"
    assert temperature_of("summary", in_tail=True) == "warm"
    assert temperature_of("tool_results", in_tail=True, cleared=True) == "cold"
    assert temperature_of("messages", in_tail=True) == "hot"
    assert temperature_of("messages", in_tail=False) == "warm"


def test_tail_flags_cover_the_newest_tokens() -> None:
    assert tail_flags([100, 100, 100, 100], 150) == [False, False, True, True]
    assert tail_flags([100, 5000], 10) == [False, True]  # the newest message is always hot
    assert tail_flags([], 10) == []


def _candidates() -> list[BudgetCandidate]:
    return [
        BudgetCandidate("r-weak", "retrieval", 300, confidence=0.2),
        BudgetCandidate("r-strong", "retrieval", 300, confidence=0.9),
        BudgetCandidate("mem-old", "memory", 50, expired=True),
        BudgetCandidate("mem-live", "memory", 50),
        BudgetCandidate("big-result", "tool_result", 5000, after=200),
        BudgetCandidate("small-result", "tool_result", 100, after=20),
        BudgetCandidate("history-1", "history", 4000, after=400),
        BudgetCandidate("tail-1", "tail", 3000, after=0),
    ]


def test_over_budget_order_is_spec_003s() -> None:
    actions = over_budget_actions(_candidates(), used=100_000, budget=0)
    steps = [a.step for a in actions]
    assert steps == sorted(steps, key=STEP_ORDER.index)  # never an earlier step after a later one
    assert [a.id for a in actions] == ["r-weak", "mem-old", "big-result", "history-1", "tail-1"]
    assert actions[2].saved == 4800


def test_a_small_excess_never_touches_the_tail() -> None:
    assert [a.id for a in over_budget_actions(_candidates(), used=1000, budget=800)] == ["r-weak"]
    assert [a.id for a in over_budget_actions(_candidates(), used=1000, budget=600)] == ["r-weak", "mem-old",
                                                                                           "big-result"]
    assert over_budget_actions(_candidates(), used=10, budget=100) == []


def test_confident_retrieval_and_live_memory_are_kept() -> None:
    ids = {a.id for a in over_budget_actions(_candidates(), used=100_000, budget=0)}
    assert "r-strong" not in ids and "mem-live" not in ids and "small-result" not in ids
