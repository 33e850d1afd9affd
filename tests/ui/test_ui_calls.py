"""One call's view, rebuilt from the transcript: equal to the plan, and read from the last stretch only."""

from __future__ import annotations

from .conftest import DemoSession
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent.session import schema
from mtagent.ui.calls import call_detail, call_points, diff_views, read_starts
from mtagent.ui.records import Redactor, read_outline, read_range


def test_every_demo_call_rebuilds_the_view_its_plan_selected(demo_session: DemoSession) -> None:
    outline = read_outline(demo_session.transcript, Redactor(()))
    pairs = list(zip(outline.offsets, outline.records))
    starts: list[int] = []

    def reader(start: int, stop: int) -> list:
        starts.append(start)
        return read_range(demo_session.transcript, start, stop, Redactor(()))

    def full(start: int, stop: int) -> list:
        return read_range(demo_session.transcript, 0, stop, Redactor(()))

    points = call_points(outline.records, outline.offsets)
    for n in range(1, len(points) + 1):
        detail = call_detail(pairs, n, reader)
        assert detail is not None and detail.plan_check is None, (n, detail and detail.plan_check)
        whole = call_detail(pairs, n, full)
        assert [(m.item.id, m.text) for m in detail.messages] == [(m.item.id, m.text) for m in whole.messages]
        assert detail.diff is None or [m.item.id for m in detail.diff.left] == [m.item.id for m in whole.diff.left]
    boundaries = [o for o, r in pairs if r["type"] == "compact_boundary"]
    if len(boundaries) >= 2:  # a late call reads from a compaction (or the start only when its tail reaches there)
        assert starts[-1] in boundaries or starts[-1] == 0
    assert call_detail(pairs, len(points) + 1, reader) is None and call_detail(pairs, 0, reader) is None


def _msg(message: object) -> dict:
    return schema.parse_record(schema.message_to_record(message))  # type: ignore[arg-type]


def _plan(selected: list[str]) -> dict:
    return schema.parse_record(schema.context_plan_record(
        {"turn": 1, "tokens": 10, "threshold": 100, "buckets": {"messages": 10}, "selected": selected,
         "compressed": [], "dropped": [], "conflicts": []}))


def test_a_kept_tail_reaching_past_the_previous_compaction_is_read_from_the_start() -> None:
    records = [_msg(HumanMessage(content="goal", id="u1")), _msg(AIMessage(content="a", id="a1")),
               schema.parse_record(schema.boundary_record(summary="s1", first_kept_id="u1", pre_tokens=9, post_tokens=5)),
               _msg(HumanMessage(content="more", id="u2")),
               schema.parse_record(schema.boundary_record(summary="s2", first_kept_id="u1", pre_tokens=9, post_tokens=5)),
               _msg(HumanMessage(content="last", id="u3"))]
    boundary = records[4]["id"]
    records.append(_plan([f"summary-{boundary}", "u1..u3 (4)"]))
    pairs = list(enumerate(records))
    starts: list[int] = []

    def reader(start: int, stop: int) -> list:
        starts.append(start)
        return pairs[start:stop]

    detail = call_detail(pairs, 1, reader)
    assert starts == [2, 0]  # tried from the first boundary, then fell back to the whole file
    assert detail is not None and [m.item.id for m in detail.messages][1:] == ["u1", "a1", "u2", "u3"]
    assert detail.plan_check is None


def test_a_compactions_re_attached_files_are_not_asked_of_the_rebuilt_view() -> None:
    """The compactor re-attaches recent reads from disk; the transcript does not record them, so the
    plan's ``reattach-<boundary>`` entry is not a message the rebuilt view must hold."""
    records = [_msg(HumanMessage(content="goal", id="u1")), _msg(AIMessage(content="a", id="a1")),
               schema.parse_record(schema.boundary_record(summary="s1", first_kept_id="a1", pre_tokens=9, post_tokens=5))]
    boundary = records[2]["id"]
    records.append(_plan(["system:2", f"summary-{boundary}", f"reattach-{boundary}", "a1"]))
    pairs = list(enumerate(records))
    detail = call_detail(pairs, 1, lambda s, e: pairs[s:e])
    assert detail is not None and detail.plan_check is None
    assert [m.item.id for m in detail.messages] == [f"summary-{boundary}", "a1"]
    records[-1] = _plan(["system:2", f"summary-{boundary}", f"reattach-{boundary}", "u1", "a1"])  # a real miss
    assert call_detail(pairs := list(enumerate(records)), 1, lambda s, e: pairs[s:e]).plan_check is not None


def test_the_diff_names_what_entered_left_and_changed() -> None:
    call = {"id": "c1", "name": "ls", "args": {}}
    records = [_msg(HumanMessage(content="go", id="u1")), _msg(AIMessage(content="", id="a1", tool_calls=[call])),
               _msg(ToolMessage(content="x" * 500, tool_call_id="c1", name="ls", id="t1")), _plan(["u1..t1 (3)"]),
               schema.parse_record(schema.microcompact_record("size", ["t1"])),
               _msg(HumanMessage(content="next", id="u2")), _plan(["u1..u2 (4)"])]
    pairs = list(enumerate(records))
    detail = call_detail(pairs, 2, lambda s, e: pairs[s:e])
    assert detail is not None and detail.diff is not None
    assert [m.item.id for m in detail.diff.entered] == ["u2"] and detail.diff.left == []
    assert [m.item.id for m in detail.diff.changed] == ["t1"] and detail.diff.changed[0].cleared
    assert diff_views(detail.messages, []).left == detail.messages


def test_temperature_labels_follow_the_recent_tail_and_clearing() -> None:
    call = {"id": "c1", "name": "ls", "args": {}}
    records = [_msg(HumanMessage(content="go " * 50, id="u1")), _msg(AIMessage(content="", id="a1", tool_calls=[call])),
               _msg(ToolMessage(content="x" * 500, tool_call_id="c1", name="ls", id="t1")),
               schema.parse_record(schema.microcompact_record("size", ["t1"])),
               _msg(HumanMessage(content="next", id="u2")), _plan(["u1..u2 (4)"])]
    pairs = list(enumerate(records))
    detail = call_detail(pairs, 1, lambda s, e: pairs[s:e], tail_tokens=1)
    assert detail is not None
    assert [m.item.temperature for m in detail.messages] == ["warm", "warm", "cold", "hot"]
    assert detail.temperature_counts() == {"warm": 2, "cold": 1, "hot": 1}


def test_read_starts_steps_back_one_compaction_at_a_time_then_the_start() -> None:
    """A kept tail can reach back past several compactions that came close together: the reader
    tries the compaction before the last, then each earlier one, then the start — never the last."""
    outline = [(0, {"type": "session_start"}), (10, {"type": "compact_boundary"}), (20, {"type": "user"}),
               (30, {"type": "compact_boundary"}), (40, {"type": "compact_boundary"}), (50, {"type": "user"})]
    assert read_starts(outline, 45) == [30, 10, 0]
    assert read_starts(outline, 15) == [0]
    assert read_starts(outline + [(60, {"type": "compression"})], 65) == [0]
