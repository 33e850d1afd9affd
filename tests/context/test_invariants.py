from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from mtagent.context.boundary import summary_message
from mtagent.context.invariants import (
    InvalidView,
    adjust_index_to_preserve_message_groups,
    find_last_compact_boundary,
    find_safe_split_index,
    round_spans,
    validate_view,
)


def ai(i: int, calls: int = 0, rid: str | None = None) -> AIMessage:
    msg = AIMessage(f"step {i}", id=f"a{i}",
                    tool_calls=[{"id": f"c{i}-{k}", "name": "read_file", "args": {"file_path": f"f{k}"}} for k in range(calls)])
    if rid:
        msg.response_metadata = {"id": rid}
    return msg


def tool(i: int, k: int = 0, size: int = 10) -> ToolMessage:
    return ToolMessage("x " * size, tool_call_id=f"c{i}-{k}", name="read_file", id=f"t{i}-{k}")


def tokens(m: BaseMessage) -> int:
    return len(str(m.content)) // 2 + 1


def group_messages_by_api_round(messages: list[BaseMessage]) -> list[list[BaseMessage]]:
    return [list(messages[g.start:g.end]) for g in round_spans(messages)]


def test_round_groups_assistant_with_its_tool_results():
    msgs = [HumanMessage("go", id="h"), ai(1, 2), tool(1, 0), tool(1, 1), ai(2), HumanMessage("more", id="h2")]
    groups = group_messages_by_api_round(msgs)
    assert [[m.id for m in g] for g in groups] == [["h"], ["a1", "t1-0", "t1-1"], ["a2"], ["h2"]]


def test_assistant_chunks_of_one_provider_response_form_one_group():
    msgs = [ai(1, 1, rid="resp-1"), ai(2, 1, rid="resp-1"), tool(1), tool(2), ai(3, rid="resp-2")]
    groups = group_messages_by_api_round(msgs)
    assert [[m.id for m in g] for g in groups] == [["a1", "a2", "t1-0", "t2-0"], ["a3"]]


def test_summary_message_is_its_own_group():
    s = summary_message("b1", "sum", pre_tokens=1, post_tokens=1, reason="auto")
    groups = group_messages_by_api_round([s, ai(1, 1), tool(1)])
    assert len(groups) == 2 and groups[0] == [s]


def test_group_adjustment_moves_cut_to_group_start():
    msgs = [HumanMessage("go", id="h"), ai(1, 1, rid="r"), ai(2, 1, rid="r"), tool(1), tool(2)]
    assert adjust_index_to_preserve_message_groups(msgs, 2) == 1
    assert adjust_index_to_preserve_message_groups(msgs, 4) == 1
    assert adjust_index_to_preserve_message_groups(msgs, 0) == 0


def test_last_compact_boundary_is_the_last_summary():
    s1 = summary_message("b1", "one", pre_tokens=1, post_tokens=1, reason="auto")
    s2 = summary_message("b2", "two", pre_tokens=1, post_tokens=1, reason="auto")
    assert find_last_compact_boundary([HumanMessage("x", id="h")]) == -1
    assert find_last_compact_boundary([s1, HumanMessage("x", id="h"), s2, ai(1)]) == 2


def test_split_keeps_at_least_min_tokens_and_at_most_max():
    msgs: list[BaseMessage] = [HumanMessage("go", id="h")]
    for i in range(20):
        msgs += [ai(i, 1), tool(i, size=100)]
    cut = find_safe_split_index(msgs, token_of=tokens, min_tokens=250, max_tokens=600)
    kept = sum(tokens(m) for m in msgs[cut:])
    assert 250 <= kept <= 600
    assert isinstance(msgs[cut], AIMessage)


def test_split_never_reaches_back_over_the_last_boundary():
    s = summary_message("b1", "sum", pre_tokens=1, post_tokens=1, reason="auto")
    msgs = [HumanMessage("old", id="h0"), s, ai(1, 1), tool(1, size=5), ai(2, 1), tool(2, size=5)]
    cut = find_safe_split_index(msgs, token_of=tokens, min_tokens=10_000, max_tokens=20_000)
    assert cut > 1
    assert cut in (4, 6)  # something after the boundary is always left to summarize


def test_split_keeps_nothing_when_newest_group_exceeds_max():
    msgs = [HumanMessage("go", id="h"), ai(1, 1), tool(1, size=5000)]
    assert find_safe_split_index(msgs, token_of=tokens, min_tokens=10, max_tokens=100) == len(msgs)


def test_validate_rejects_orphan_tool_result():
    with pytest.raises(InvalidView, match="answers no open tool call"):
        validate_view([HumanMessage("go", id="h"), tool(1)])


def test_validate_rejects_unanswered_call_followed_by_user():
    with pytest.raises(InvalidView, match="has no result"):
        validate_view([ai(1, 1), HumanMessage("hi", id="h")])


def test_validate_allows_pending_last_round_only_when_asked():
    validate_view([HumanMessage("go", id="h"), ai(1, 2), tool(1, 0)])
    with pytest.raises(InvalidView):
        validate_view([HumanMessage("go", id="h"), ai(1, 2), tool(1, 0)], allow_pending_last=False)


def test_validate_rejects_summary_after_conversation():
    s = summary_message("b1", "sum", pre_tokens=1, post_tokens=1, reason="auto")
    validate_view([SystemMessage("sys", id="s"), s, HumanMessage("go", id="h")])
    with pytest.raises(InvalidView, match="summary"):
        validate_view([HumanMessage("go", id="h"), s])


def test_validate_rejects_duplicate_result():
    with pytest.raises(InvalidView, match="duplicate"):
        validate_view([ai(1, 1), tool(1), tool(1)])


# ---- properties over random message sequences -------------------------------------------------

@st.composite
def histories(draw: st.DrawFn) -> list[BaseMessage]:
    msgs: list[BaseMessage] = []
    rounds = draw(st.integers(1, 25))
    for i in range(rounds):
        kind = draw(st.sampled_from(["human", "text", "tools"]))
        if kind == "human":
            msgs.append(HumanMessage("u" * draw(st.integers(1, 80)), id=f"h{i}"))
        elif kind == "text":
            msgs.append(ai(i))
        else:
            n = draw(st.integers(1, 3))
            msgs.append(ai(i, n))
            order = draw(st.permutations(list(range(n))))
            msgs += [tool(i, k, size=draw(st.integers(1, 120))) for k in order]
    return msgs


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 400), st.integers(0, 800))
def test_any_safe_split_yields_a_valid_tail(msgs, lo, hi):
    validate_view(msgs)
    cut = find_safe_split_index(msgs, token_of=tokens, min_tokens=min(lo, hi), max_tokens=hi)
    assert 0 < cut <= len(msgs) or len(msgs) == 1
    validate_view(msgs[cut:])
    if cut < len(msgs):
        assert adjust_index_to_preserve_message_groups(msgs, cut) == cut


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 200))
def test_adjusted_cuts_never_orphan_a_result(msgs, raw_index):
    index = raw_index % (len(msgs) + 1)
    adjusted = adjust_index_to_preserve_message_groups(msgs, index)
    assert adjusted <= index
    validate_view(msgs[adjusted:])


@settings(max_examples=200, deadline=None)
@given(histories())
def test_groups_concatenate_back_to_the_sequence(msgs):
    groups = group_messages_by_api_round(msgs)
    assert [m for g in groups for m in g] == msgs
    for g in groups:
        validate_view(g)


# ── sharp tests: each kills a view-validation mutant that survived the tests above (docs/mutation.md) ──


def test_an_unanswered_call_is_named_by_its_own_id():
    view = [HumanMessage("go", id="h"), ai(1, 2), tool(1, 1), HumanMessage("next", id="h2")]
    with pytest.raises(InvalidView, match="'c1-0' has no result before message 3"):
        validate_view(view)


def test_chunks_of_one_provider_response_may_come_before_their_results():
    validate_view([HumanMessage("go", id="h"), ai(1, 1, rid="r"), ai(2, 1, rid="r"), tool(1), tool(2)])
    with pytest.raises(InvalidView, match="has no result"):
        validate_view([HumanMessage("go", id="h"), ai(1, 1, rid="r"), ai(2, 1, rid="other"), tool(1),
                       tool(2)])
