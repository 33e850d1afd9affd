"""Record types, validation, and the exact message ↔ record round trip."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent import paths
from mtagent.session import schema
from mtagent.session.reader import read_records

DATA = Path(__file__).resolve().parents[1] / "data"
sys.path.insert(0, str(DATA))
import regenerate  # noqa: E402


def _roundtrip(message):
    record = schema.message_to_record(message)
    line = schema.dumps_record(record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    return schema.record_to_message(schema.parse_record(json.loads(line)))


MESSAGES = [
    SystemMessage("system prompt", id="s1"),
    HumanMessage("hello", id="h1", name="alice"),
    HumanMessage([{"type": "text", "text": "multi"}, "part"], id="h2"),
    AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "grep", "args": {"pattern": "x", "n": [1, 2]}},
                                       {"id": "c2", "name": "ls", "args": {}}],
              usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                              "input_token_details": {"cache_read": 4}},
              response_metadata={"model_name": "m", "finish_reason": "tool_calls"}),
    AIMessage("answer", id="a2", additional_kwargs={"reasoning_content": "think"}),
    ToolMessage("preview", tool_call_id="c1", name="grep", id="t1", status="error",
                artifact={"kind": "text", "artifact": "tool-results/c1.txt", "original_chars": 100,
                          "preview_chars": 7, "truncated": True, "artifact_truncated": False, "exit_code": 2}),
    ToolMessage("cleared", tool_call_id="c2", id="t2", response_metadata={"mtagent": {"cleared": "time"}}),
    HumanMessage("lone surrogate \ud800 and 中文", id="h3"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.id)
def test_message_round_trip_is_exact(message):
    assert _roundtrip(message) == message


def test_message_without_id_gets_one_written_back_to_the_message():
    message = HumanMessage("no id")
    record = schema.message_to_record(message)
    assert message.id and record["id"] == message.id


def test_tool_message_artifact_becomes_tool_use_result():
    record = schema.message_to_record(MESSAGES[5])
    assert record["role"] == "tool" and record["toolUseResult"]["artifact"] == "tool-results/c1.txt"
    assert "usage" not in record and record["status"] == "error"
    assert schema.message_to_record(MESSAGES[3])["usage"]["total_tokens"] == 15


def test_every_record_type_is_built_valid_and_read_back_equal(tmp_path):
    records = regenerate.every_record() + regenerate.legacy_v1()
    kinds = {r["type"] for r in records}
    assert set(schema.RECORD_TYPES) <= kinds
    path = tmp_path / "all.jsonl"
    path.write_bytes(b"".join(schema.dumps_record(r) for r in records))
    known = [r for r in records if r["type"] in schema.RECORD_TYPES]
    assert read_records(path) == known


def test_v2_records_carry_version_and_utc_timestamp():
    record = schema.event_record("compact_started", {"x": 1})
    assert record["schema_version"] == schema.SCHEMA_VERSION == 2
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["timestamp"])
    assert schema.parse_timestamp(record["timestamp"]).tzinfo is not None


def test_unknown_type_and_newer_schema_are_unknown_not_corrupt():
    with pytest.raises(schema.UnknownRecord):
        schema.parse_record({"type": "hologram", "schema_version": 9})
    newer_changed = {"type": "microcompact", "schema_version": 3, "trigger": "time", "cleared_ids": "t1,t2"}
    with pytest.raises(schema.UnknownRecord):
        schema.parse_record(newer_changed)


@pytest.mark.parametrize("bad", [
    [], "x", 3, None, {"no": "type"}, {"type": 5},
    {"type": "transcript_message", "schema_version": 2, "role": "robot", "content": ""},
    {"type": "transcript_message", "schema_version": 2, "role": "user", "content": 5},
    {"type": "compact_boundary", "schema_version": 2, "summary": "s"},
    {"type": "microcompact", "schema_version": 2, "trigger": "time", "cleared_ids": [1, {}]},
    {"type": "event", "schema_version": "2", "event": "x"},
    {"type": "event", "schema_version": True, "event": "x"},
])
def test_malformed_records_raise_record_error(bad):
    with pytest.raises(schema.RecordError) as info:
        schema.parse_record(bad)
    assert not isinstance(info.value, schema.UnknownRecord)


def test_extra_fields_are_kept_for_forward_compatibility():
    record = {**schema.microcompact_record("size", ["t1"]), "new_field": {"a": 1}}
    assert schema.parse_record(record) is record


def test_session_ids_are_sortable_unique_and_file_name_safe():
    ids = [schema.new_session_id() for _ in range(200)]
    assert len(set(ids)) == 200
    assert [i[:18] for i in ids] == sorted(i[:18] for i in ids)
    for session_id in ids[:5]:
        assert paths.validate_session_id(session_id) == session_id


def test_unserialisable_values_fail_loudly_not_silently():
    with pytest.raises(TypeError, match="JSON-serialisable"):
        schema.dumps_record({"type": "event", "data": object()})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


tool_use_results = st.fixed_dictionaries(
    {"kind": st.sampled_from(["text", "json", "image"])},
    optional={"artifact": st.none() | st.text(max_size=30), "original_chars": st.integers(0, 10**9),
              "preview_chars": st.integers(0, 10**6), "truncated": st.booleans(),
              "artifact_truncated": st.booleans(), "exit_code": st.integers(-1, 255), "extra": json_values},
)


@settings(max_examples=60, deadline=None)
@given(content=st.text(max_size=200), args=st.dictionaries(st.text(max_size=10), json_values, max_size=4),
       artifact=tool_use_results, status=st.sampled_from(["success", "error"]))
def test_round_trip_holds_for_arbitrary_content(content, args, artifact, status):
    ai = AIMessage(content, id="a", tool_calls=[{"id": "c", "name": "tool", "args": args}])
    tool = ToolMessage(content, tool_call_id="c", id="t", status=status, artifact=artifact, name="tool")
    assert _roundtrip(ai) == ai
    assert _roundtrip(tool) == tool


@pytest.mark.parametrize("artifact", [{"kind": None}, {"original_chars": "many"}, ["a", 1], "text", object()])
def test_non_conforming_tool_artifacts_are_wrapped_not_refused(artifact):
    record = schema.message_to_record(ToolMessage("x", tool_call_id="c", id="t", artifact=artifact))
    assert schema.parse_record(json.loads(schema.dumps_record(record))) is not None
    assert record["toolUseResult"]["kind"] == "opaque"
    value = record["toolUseResult"]["value"]
    assert value == artifact or (isinstance(value, str) and "object" in value)
