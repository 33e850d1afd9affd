"""Sharp tests for :mod:`mtagent.context.tool_results.budgeter`: each pins a behaviour a small
planted bug (a mutant, see docs/mutation.md) changed while the older tests still passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from mtagent.config import ToolResultSettings
from mtagent.context.tool_results.budgeter import (
    ToolResultBudgeter,
    ToolResultPolicy,
    apply_reducer,
    is_budgeted,
)
from mtagent.errors import ConfigError
from mtagent.events import EventBus, EventType, SessionStats
from mtagent.session.artifacts import ArtifactStore


def msg(content, name: str = "fetch", call_id: str = "c1", **kw) -> ToolMessage:
    return ToolMessage(content=content, tool_call_id=call_id, name=name, id=kw.pop("id", f"m-{call_id}"), **kw)


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(tmp_path / "artifacts")


# ── the policy ───────────────────────────────────────────────────────────────────────────


def test_the_policy_takes_every_setting():
    s = ToolResultSettings(grep_max_chars=11, shell_max_chars=12, default_max_chars=13, aggregate_max_chars=14,
                           preview_chars=15, per_tool_max_chars={"fetch": 16}, self_limiting_tools=["view"],
                           reducers={"api": {"keep_last": 2}})
    p = ToolResultPolicy.from_settings(s)
    assert (p.grep_max_chars, p.shell_max_chars, p.default_max_chars, p.aggregate_max_chars, p.preview_chars) == \
        (11, 12, 13, 14, 15)
    assert p.per_tool_max_chars == {"fetch": 16} and p.self_limiting_tools == frozenset({"view"})
    assert p.reducers == {"api": {"keep_last": 2}}
    assert ToolResultPolicy.from_settings().grep_max_chars == ToolResultSettings().grep_max_chars


def test_limits_per_tool_win_and_names_are_case_blind():
    p = ToolResultPolicy(per_tool_max_chars={"read_file": 10})
    assert p.limit_for("read_file") == 10  # an explicit limit beats "bounds itself"
    assert p.limit_for("GREP") == p.grep_max_chars
    assert p.limit_for("Execute_Bash") == p.shell_max_chars
    assert p.limit_for(None) == p.default_max_chars


@pytest.mark.parametrize("spec, message", [
    ({"keep_last": True}, "whole number"),
    ({"keep_first": "3"}, "whole number"),
    ({"keep_first": -1}, "keep_first must be a whole number"),
    ({"keep_fields": "id"}, "keep_fields must be a list"),
    ({"drop_fields": ["a", 3]}, "drop_fields must be a list"),
    ({"path": 3}, "dotted path"),
])
def test_bad_reducer_specs_are_config_errors(spec, message):
    with pytest.raises(ConfigError, match=message):
        ToolResultPolicy(reducers={"api": spec})


def test_zero_is_a_valid_keep_count():
    ToolResultPolicy(reducers={"api": {"keep_last": 0, "keep_first": 0, "keep_fields": [], "path": "a.b"}})


# ── reducers ─────────────────────────────────────────────────────────────────────────────


def test_keep_first_then_keep_last_and_their_notes():
    data = list(range(10))
    assert apply_reducer(data, {"keep_first": 6}) == ([0, 1, 2, 3, 4, 5], ["result: kept first 6 of 10 items"])
    assert apply_reducer(data, {"keep_first": 10}) == (data, [])
    assert apply_reducer(data, {"keep_last": 10}) == (data, [])
    assert apply_reducer(data, {"keep_first": 6, "keep_last": 2}) == (
        [4, 5], ["result: kept first 6 of 10 items", "result: kept last 2 of 10 items"])
    assert apply_reducer(data, {"keep_last": 0}) == ([], ["result: kept last 0 of 10 items"])


def test_field_filters_and_their_notes():
    rows = [{"id": 1, "body": "x", "meta": 2}, "scalar"]
    kept, notes = apply_reducer(rows, {"keep_fields": ["id", "meta"], "drop_fields": ["meta"]})
    assert kept == [{"id": 1}, "scalar"]
    assert notes == ["result: kept only fields id, meta", "result: dropped fields meta"]
    assert apply_reducer({"id": 1, "body": "x"}, {"drop_fields": ["body"]}) == ({"id": 1}, ["result: dropped fields body"])


def test_a_nested_path_is_reduced_and_the_input_left_alone():
    data = {"data": {"items": list(range(5)), "total": 5}}
    out, notes = apply_reducer(data, {"path": "data.items", "keep_last": 2})
    assert out == {"data": {"items": [3, 4], "total": 5}}
    assert notes == ["data.items: kept last 2 of 5 items"]
    assert data == {"data": {"items": list(range(5)), "total": 5}}


@pytest.mark.parametrize("data", [{"data": {"other": 1}}, {"other": {"items": [1]}}, {"data": [1, 2]},
                                  {"data": {"items": [1]}, "x": 0} | {"data": 7}])
def test_a_missing_path_reduces_nothing(data):
    out, notes = apply_reducer(data, {"path": "data.items", "keep_last": 1})
    assert out == data and notes == ["path 'data.items' not found; nothing reduced"]


def test_a_top_level_path_names_itself_in_the_notes():
    out, notes = apply_reducer({"points": [1, 2, 3]}, {"path": "points", "keep_fields": ["n"], "keep_last": 1})
    assert out == {"points": [3]}
    assert notes == ["points: kept only fields n", "points: kept last 1 of 3 items"]


# ── budget(): one result ─────────────────────────────────────────────────────────────────


def test_a_non_tool_message_passes_untouched():
    ai = AIMessage("hi", id="a")
    assert ToolResultBudgeter().budget(ai) is ai


def test_the_limit_is_exclusive():
    policy = ToolResultPolicy(per_tool_max_chars={"fetch": 100})
    at = ToolResultBudgeter(policy).budget(msg("a" * 100))
    over = ToolResultBudgeter(policy).budget(msg("a" * 101))
    assert at.artifact["budget"] == {"stage": "tool", "decision": "inline", "limit": 100}
    assert over.artifact["budget"] == {"stage": "tool", "decision": "truncated", "limit": 100, "reason": "tool_limit"}


def test_an_inline_result_records_its_sizes_and_keeps_its_own_artifact_fields():
    original = {"kind": "diff", "exit_code": 0, "truncated": True}
    m = msg("done", artifact=original, response_metadata={"model": "x"}, status="error",
            additional_kwargs={"k": 1})
    out = ToolResultBudgeter().budget(m)
    assert out.artifact == {"kind": "diff", "exit_code": 0, "truncated": True, "original_chars": 4,
                            "artifact": None, "artifact_truncated": False, "preview_chars": 4,
                            "budget": {"stage": "tool", "decision": "inline", "limit": 50_000}}
    assert original == {"kind": "diff", "exit_code": 0, "truncated": True}  # the message's artifact is copied
    assert out.response_metadata == {"model": "x", "mtagent": {"tool_result": "inline"}}
    assert (out.status, out.additional_kwargs, out.id, out.name, out.tool_call_id) == \
        ("error", {"k": 1}, "m-c1", "fetch", "c1")


def test_a_non_dict_tool_artifact_is_named_and_none_is_not():
    assert ToolResultBudgeter().budget(msg("x", artifact=["raw"])).artifact["tool_artifact_type"] == "list"
    plain = ToolResultBudgeter().budget(msg("x")).artifact
    assert "tool_artifact_type" not in plain and plain["kind"] == "text"


def test_a_message_without_id_gets_one():
    out = ToolResultBudgeter().budget(ToolMessage("x", tool_call_id="c", name="fetch"))
    assert out.id.startswith("msg-") and len(out.id) > 10


def test_text_blocks_are_joined_and_other_content_is_not_text():
    blocks = ["alpha", {"type": "text", "text": "beta"}]
    policy = ToolResultPolicy(per_tool_max_chars={"fetch": 9})
    out = ToolResultBudgeter(policy).budget(msg(blocks))
    assert out.artifact["original_chars"] == len("alpha\nbeta") and out.artifact["budget"]["decision"] == "truncated"
    assert ToolResultBudgeter(policy).budget(msg(["a", "b"])).artifact["budget"]["decision"] == "inline"
    odd = ToolResultBudgeter().budget(msg(["a", {"type": "image", "url": "u"}]))
    assert odd.artifact["budget"] == {"stage": "tool", "decision": "not_text"}


def test_a_reducer_that_brings_a_result_under_its_limit_stores_the_raw_data(store):
    policy = ToolResultPolicy(per_tool_max_chars={"api": 500}, reducers={"api": {"path": "rows", "keep_last": 2}})
    raw = json.dumps({"rows": [{"n": i, "text": "word " * 10} for i in range(40)]})
    stats = SessionStats()
    out = ToolResultBudgeter(policy, artifacts=store, stats=stats).budget(msg(raw, name="api"))
    assert len(raw) > 500 and stats.last_tool_result_chars == len(raw)
    assert out.artifact["budget"] == {"stage": "tool", "decision": "reduced", "limit": 500}
    reduced = json.dumps({"rows": [{"n": i, "text": "word " * 10} for i in (38, 39)]})
    assert out.artifact["reducer"] == {"spec": {"path": "rows", "keep_last": 2},
                                       "notes": ["rows: kept last 2 of 40 items"],
                                       "original_chars": len(raw), "reduced_chars": len(reduced)}
    assert out.content == ("[reduced by the 'api' reducer: rows: kept last 2 of 40 items; "
                           f"full data saved to tool-results/c1.txt]\n{reduced}")
    assert out.artifact["truncated"] is True and out.artifact["original_chars"] == len(raw)
    assert out.artifact["preview_chars"] == len(out.content)
    assert store.read_text("tool-results/c1.txt") == raw


def test_a_reducer_without_a_store_says_nothing_about_a_saved_copy():
    policy = ToolResultPolicy(reducers={"api": {"keep_first": 1}})
    out = ToolResultBudgeter(policy).budget(msg("[1, 2, 3]", name="api"))
    assert out.content == "[reduced by the 'api' reducer: result: kept first 1 of 3 items]\n[1]"
    assert out.artifact["artifact"] is None and out.artifact["artifact_truncated"] is False


def test_a_reducer_that_changes_nothing_or_meets_no_json_leaves_the_result_inline():
    policy = ToolResultPolicy(reducers={"api": {"keep_first": 5}})
    for text in ("[1, 2]", "not json at all"):
        out = ToolResultBudgeter(policy).budget(msg(text, name="api"))
        assert out.content == text and "reducer" not in out.artifact
        assert out.artifact["budget"]["decision"] == "inline"


# ── persisting ───────────────────────────────────────────────────────────────────────────


def test_a_third_reuse_of_a_call_id_gets_suffix_three(store):
    b = ToolResultBudgeter(ToolResultPolicy(per_tool_max_chars={"fetch": 10}), artifacts=store)
    paths = [b.budget(msg("x" * 50 + str(i))).artifact["artifact"] for i in range(3)]
    assert paths == ["tool-results/c1.txt", "tool-results/c1-2.txt", "tool-results/c1-3.txt"]


def test_persisting_records_the_artifact_and_tells_the_bus(store):
    sink, seen, stats = [], [], SessionStats()
    bus = EventBus()
    bus.subscribe(lambda e: seen.append(e.data), EventType.TOOL_RESULT_PERSISTED)
    b = ToolResultBudgeter(ToolResultPolicy(per_tool_max_chars={"fetch": 10}, preview_chars=20), artifacts=store,
                           sink=sink, events=bus, stats=stats)
    raw = "line\n" * 100
    out = b.budget(msg(raw))
    assert out.artifact["preview_kind"] == "text" and out.artifact["truncated"] is True
    [record] = sink
    assert (record["type"], record["tool_call_id"], record["path"], record["original_chars"]) == \
        ("tool_result_artifact", "c1", "tool-results/c1.txt", len(raw))
    assert seen == [{"tool": "fetch", "tool_call_id": "c1", "path": "tool-results/c1.txt", "original_chars": len(raw),
                     "preview_chars": len(out.content), "reason": "tool_limit", "limit": 10}]
    assert (stats.tool_results_persisted, stats.tool_result_chars_saved) == (1, len(raw) - len(out.content))


def test_truncating_without_a_store_counts_nothing_saved_and_says_no_path():
    seen, stats = [], SessionStats()
    bus = EventBus()
    bus.subscribe(lambda e: seen.append(e.data), EventType.TOOL_RESULT_PERSISTED)
    b = ToolResultBudgeter(ToolResultPolicy(per_tool_max_chars={"fetch": 10}), events=bus, stats=stats)
    out = b.budget(msg("y" * 200))
    assert out.artifact["budget"]["decision"] == "truncated"
    assert seen[0]["path"] is None
    assert (stats.tool_results_persisted, stats.tool_result_chars_saved) == (0, 0)


def test_a_short_result_over_a_tiny_limit_never_counts_negative_savings(store):
    stats = SessionStats()
    b = ToolResultBudgeter(ToolResultPolicy(per_tool_max_chars={"fetch": 1}), artifacts=store, stats=stats)
    out = b.budget(msg("ab"))
    assert len(out.content) > 2
    assert (stats.tool_results_persisted, stats.tool_result_chars_saved) == (1, 0)


# ── the turn ─────────────────────────────────────────────────────────────────────────────


def _turn_budgeter(store, aggregate: int) -> ToolResultBudgeter:
    return ToolResultBudgeter(ToolResultPolicy(default_max_chars=10_000, aggregate_max_chars=aggregate,
                                               preview_chars=50), artifacts=store)


def test_a_turn_exactly_at_the_aggregate_is_left_alone(store):
    turn = [msg("a" * 600, call_id="a"), msg("b" * 400, call_id="b")]
    out = _turn_budgeter(store, 1_000).budget_turn(turn)
    assert [m.artifact["budget"] for m in out] == [{"stage": "turn", "decision": "inline", "limit": 10_000}] * 2
    assert store.list_tool_results() == []


def test_the_aggregate_persists_the_largest_first_and_stops_when_it_fits(store):
    turn = [msg("a" * 7_000, call_id="a"), msg("b" * 9_000, call_id="b"), msg("c" * 8_000, call_id="c"),
            AIMessage("between", id="ai")]
    out = _turn_budgeter(store, 17_000).budget_turn(turn)
    decisions = {m.tool_call_id: m.artifact["budget"] for m in out if isinstance(m, ToolMessage)}
    assert decisions["b"] == {"stage": "turn", "decision": "persisted", "limit": 10_000, "reason": "aggregate"}
    assert decisions["a"]["decision"] == decisions["c"]["decision"] == "inline"
    assert out[1].artifact["preview_chars"] == len(out[1].content)
    assert out[3] is turn[3]


def test_results_that_cannot_be_cut_are_not_aggregate_candidates(store):
    turn = [msg("r" * 900, name="read_file", call_id="r"), msg("f" * 300, call_id="f"),
            msg([{"type": "image", "url": "u"}], call_id="i")]
    out = _turn_budgeter(store, 1_000).budget_turn(turn)
    by_id = {m.tool_call_id: m.artifact["budget"]["decision"] for m in out}
    assert by_id == {"r": "inline", "f": "persisted", "i": "not_text"}


def test_frozen_results_count_toward_the_turn_but_are_not_touched(store):
    b = _turn_budgeter(store, 1_000)
    [frozen] = b.budget_turn([msg("z" * 900, call_id="z")])
    out = b.budget_turn([frozen, msg("n" * 300, call_id="n")])
    assert out[0] is frozen
    assert out[1].artifact["budget"]["decision"] == "persisted"


def test_finalize_records_only_tool_results(store):
    sink: list[dict] = []
    b = ToolResultBudgeter(artifacts=store, sink=sink)
    out = b.finalize_turn([AIMessage("calling", id="ai"), msg("short", call_id="s")])
    assert [r["type"] for r in sink] == ["transcript_message"]
    assert sink[0]["content"] == "short" and is_budgeted(out[1], "turn") and not is_budgeted(out[1], "tool")
