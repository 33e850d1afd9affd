from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.context.boundary import summary_message
from mtagent.context.budget import Bucket, BudgetBuckets
from mtagent.context.plan import (
    CompressedItem,
    Conflict,
    ContextPlan,
    DroppedItem,
    bucket_of,
    context_item,
    id_range,
)

CALLS: list[int] = []


def make_plan() -> ContextPlan:
    CALLS.clear()
    buckets = BudgetBuckets(token_limit=131_072, threshold=98_072)
    buckets.add(Bucket.SYSTEM, 1_200)
    buckets.add(Bucket.TOOLS, 3_000)
    buckets.add(Bucket.MESSAGES, 40_000)
    def selector():
        CALLS.append(1)
        return [context_item(HumanMessage("hi", id="h1"), 5, 0)]

    plan = ContextPlan(
        turn=7, tokens=44_200, token_limit=131_072, threshold=98_072, buckets=buckets, anchored=True,
        message_count=1, compressed=[CompressedItem("t3", 4_000, 21, "cleared (time)")],
        dropped=[DroppedItem("m1..m9 (9)", "summarized into cb-1")],
        conflicts=[Conflict("indent", "project", ("global",), "project rules override global")],
        selected_ids=["system:1", "h1"],
    )
    plan._selector = selector
    return plan


def test_buckets_follow_the_message_kind():
    assert bucket_of(SystemMessage("s")) == Bucket.SYSTEM
    assert bucket_of(SystemMessage("r", response_metadata={"mtagent": {"bucket": "rules"}})) == Bucket.RULES
    assert bucket_of(summary_message("b", "s", pre_tokens=1, post_tokens=1, reason="auto")) == Bucket.SUMMARY
    assert bucket_of(HumanMessage("f", response_metadata={"mtagent": {"kind": "reattached"}})) == Bucket.REATTACHED
    assert bucket_of(ToolMessage("r", tool_call_id="c")) == Bucket.TOOL_RESULTS
    assert bucket_of(AIMessage("a")) == Bucket.MESSAGES


def test_cleared_tool_result_is_an_artifact_reference():
    cleared = ToolMessage("x", tool_call_id="c", id="t", name="grep",
                          response_metadata={"mtagent": {"cleared": "time"}})
    item = context_item(cleared, 20, 3)
    assert item.visibility == "artifact_ref" and item.temperature == "cold" and item.source == "grep"


def test_record_holds_ids_and_numbers_only():
    record = make_plan().to_record()
    assert record["type"] == "context_plan" and record["turn"] == 7
    assert record["buckets"]["tools"] == 3_000 and record["threshold"] == 98_072
    assert record["compressed"] == [{"id": "t3", "from_tokens": 4_000, "to_tokens": 21, "method": "cleared (time)"}]
    assert record["dropped"][0]["reason"] == "summarized into cb-1"
    assert record["conflicts"][0]["winner"] == "project"
    assert record["selected"] == ["system:1", "h1"]


def test_selected_items_are_computed_lazily_once():
    plan = make_plan()
    plan.to_record()
    assert CALLS == []
    assert plan.selected[0].kind == "user_goal"
    _ = plan.selected
    assert CALLS == [1]


def test_explain_names_tokens_buckets_and_reasons():
    text = make_plan().explain()
    assert "44,200 / 131,072 tokens" in text and "threshold 98,072" in text
    assert "anchored" in text
    assert "tools" in text and "3,000" in text
    assert "t3: 4,000 → 21 tokens (cleared (time))" in text
    assert "summarized into cb-1" in text
    assert "project rules override global" in text


def test_id_range_names_runs_compactly():
    assert id_range([]) == ""
    assert id_range(["a"]) == "a"
    assert id_range(["a", "b", "c"]) == "a..c (3)"


def test_the_session_context_message_counts_as_session_context_not_conversation():
    import datetime

    from mtagent.context.static.tiers import build_session_context

    message = build_session_context("/proj", today=datetime.date(2026, 1, 2), os_name="Linux",
                                    project_sections=[("CONTEXT.md", "Never push to main.")])
    assert bucket_of(message) == Bucket.SESSION_CONTEXT
    assert context_item(message, 40, 1).kind == "instruction"
