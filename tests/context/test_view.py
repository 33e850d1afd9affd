"""Records → the model-visible view on resume (pure), and load_session from disk."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent import paths
from mtagent.context.boundary import is_summary_message
from mtagent.context.compaction.microcompact import CLEARED_PLACEHOLDER
from mtagent.context.view import (
    INTERRUPTED_TOOL_RESULT,
    build_resume_view,
    load_session,
    load_transcript,
)
from mtagent.errors import ArtifactPathError, SessionNotFound
from mtagent.session import index as idx
from mtagent.session import schema
from mtagent.session.artifacts import ArtifactStore, get_tool_result_path
from mtagent.session.transcript import TranscriptWriter

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "transcripts"
sys.path.insert(0, str(DATA))
import regenerate  # noqa: E402


def rec(message) -> dict:
    return schema.message_to_record(message)


def round_(n: int, calls: int = 1, answered: int | None = None) -> list[dict]:
    ai = AIMessage("", id=f"a{n}", tool_calls=[{"id": f"c{n}_{k}", "name": "grep", "args": {}} for k in range(calls)])
    results = [ToolMessage(f"r{n}_{k}", tool_call_id=f"c{n}_{k}", name="grep", id=f"t{n}_{k}")
               for k in range(calls if answered is None else answered)]
    return [rec(HumanMessage(f"q{n}", id=f"u{n}")), rec(ai), *map(rec, results)]


def assert_protocol_valid(messages) -> None:
    """Every tool call answered right after its round; no result without its call."""
    open_calls: set[str] = set()
    for m in messages:
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in open_calls, f"orphan result {m.id}"
            open_calls.discard(m.tool_call_id)
            continue
        assert not open_calls, f"unanswered calls {open_calls} before {m.id}"
        if isinstance(m, AIMessage):
            open_calls = {c["id"] for c in m.tool_calls}
    assert not open_calls


def test_golden_views_are_unchanged():
    for name in ("v2_every_record", "v1_legacy"):
        records = [json.loads(line) for line in (GOLDEN / f"{name}.jsonl").read_bytes().splitlines()]
        records = [r for r in records if r["type"] in schema.RECORD_TYPES]
        assert regenerate.expected_view(records) == json.loads((GOLDEN / f"{name}.view.json").read_text())


def test_goldens_match_the_regenerate_script():
    assert regenerate.main(["--check"]) == 0


def test_view_is_summary_then_kept_tail_then_everything_after():
    records = round_(1) + round_(2) + round_(3)
    records.append(schema.boundary_record(summary="S", first_kept_id="u3", boundary_id="b1",
                                          pre_tokens=900, post_tokens=100))
    records += round_(4)
    view = build_resume_view(records)
    assert is_summary_message(view.messages[0]) and "S" in view.messages[0].content
    assert [m.id for m in view.messages[1:]] == ["u3", "a3", "t3_0", "u4", "a4", "t4_0"]
    assert view.boundary["id"] == "b1" and not view.interrupted_tool_call_ids


def test_only_the_last_boundary_counts():
    records = round_(1) + [schema.boundary_record(summary="old", first_kept_id="u1", boundary_id="b1")]
    records += round_(2) + [schema.boundary_record(summary="new", first_kept_id="u2", boundary_id="b2")]
    view = build_resume_view(records)
    assert "new" in view.messages[0].content and [m.id for m in view.messages[1:]] == ["u2", "a2", "t2_0"]


def test_boundary_keeping_nothing_resumes_from_summary_and_later_messages():
    records = round_(1) + [schema.boundary_record(summary="all", first_kept_id=None)] + round_(2)
    assert [m.id for m in build_resume_view(records).messages[1:]] == ["u2", "a2", "t2_0"]


def test_missing_first_kept_message_is_a_warning_not_a_crash():
    records = round_(1) + [schema.boundary_record(summary="s", first_kept_id="nope")] + round_(2)
    view = build_resume_view(records)
    assert not view.first_kept_found and "nope" in view.warnings[0]
    assert [m.id for m in view.messages[1:]] == ["u2", "a2", "t2_0"]


def test_microcompact_clears_tool_results_with_placeholder_and_mark():
    records = round_(1) + round_(2) + [schema.microcompact_record("time", ["t1_0", "u2"])]
    view = build_resume_view(records)
    by_id = {m.id: m for m in view.messages}
    assert by_id["t1_0"].content == CLEARED_PLACEHOLDER
    assert by_id["t1_0"].response_metadata["mtagent"] == {"cleared": "time"}
    assert by_id["u2"].content == "q2"  # only tool results are cleared
    assert by_id["t2_0"].content == "r2_0" and view.cleared_ids == ["t1_0"]


def test_torn_round_at_the_end_gets_synthetic_interrupted_results():
    records = round_(1) + round_(2, calls=3, answered=1)
    view = build_resume_view(records)
    assert view.interrupted_tool_call_ids == ["c2_1", "c2_2"]
    tail = view.messages[-2:]
    assert all(isinstance(m, ToolMessage) and m.status == "error" and m.content == INTERRUPTED_TOOL_RESULT
               for m in tail)
    assert [m.tool_call_id for m in view.interrupted_messages()] == ["c2_1", "c2_2"]
    assert_protocol_valid(view.messages)


def test_recording_the_interrupted_results_makes_the_next_resume_clean():
    records = round_(1, calls=2, answered=0)
    view = build_resume_view(records)
    records += [rec(m) for m in view.interrupted_messages()]
    again = build_resume_view(records)
    assert again.interrupted_tool_call_ids == [] and again.messages == view.messages


def test_orphan_tool_results_are_dropped_with_a_warning():
    records = [rec(ToolMessage("lost", tool_call_id="ghost", id="t0"))] + round_(1)
    view = build_resume_view(records)
    assert view.dropped_orphan_ids == ["t0"] and view.messages[0].id == "u1"


def test_v1_transcript_resumes_as_summary_plus_last_kept_count():
    view = build_resume_view(regenerate.legacy_v1())
    assert view.legacy_compression is not None and is_summary_message(view.messages[0])
    assert [m.content for m in view.messages[1:]] == ["two files", "third question"]
    assert_protocol_valid(view.messages)


def test_v1_transcript_without_compression_resumes_everything_with_stable_ids():
    records = [r for r in regenerate.legacy_v1() if r["type"] != "compression"]
    ids = [m.id for m in build_resume_view(records).messages]
    assert ids == [m.id for m in build_resume_view(records).messages] and len(ids) == 7


def test_session_memory_is_rendered_after_the_summary():
    records = round_(1) + [schema.boundary_record(summary="S", first_kept_id="u1")]
    messages = build_resume_view(records, session_memory="# Current State\nediting x.py").messages
    assert messages[1].id == "session-memory" and "editing x.py" in messages[1].content
    assert build_resume_view(records).messages[1].id == "u1"


record_steps = st.lists(st.sampled_from(["round", "torn", "orphan", "boundary", "micro", "crash"]), max_size=25)


@settings(max_examples=120, deadline=None)
@given(steps=record_steps, kept_back=st.integers(0, 6))
def test_any_record_sequence_resumes_to_a_protocol_valid_view(steps, kept_back):
    records: list[dict] = []
    message_ids: list[str] = []
    for n, step in enumerate(steps):
        if step in ("round", "torn"):
            new = round_(n, calls=2, answered=None if step == "round" else 1)
            records += new
            message_ids += [r["id"] for r in new]
        elif step == "orphan":
            records.append(rec(ToolMessage("x", tool_call_id=f"ghost{n}", id=f"o{n}")))
        elif step == "boundary":
            kept = message_ids[-kept_back] if kept_back and len(message_ids) >= kept_back else None
            records.append(schema.boundary_record(summary=f"s{n}", first_kept_id=kept))
        elif step == "micro" and message_ids:
            records.append(schema.microcompact_record("size", message_ids[-3:]))
        elif step == "crash":
            records += round_(n, calls=1, answered=0)[:2]
    assert_protocol_valid(build_resume_view(records).messages)


# ── from disk ───────────────────────────────────────────────────────────────────────────


def _write_session(project, session_id, records) -> Path:
    path = paths.session_transcript_path(project, session_id)
    with TranscriptWriter(path, session_id=session_id) as writer:
        for r in records:
            writer.append(r)
    return path


def test_load_session_reads_only_from_the_first_kept_message(tmp_path):
    start = schema.session_start_record("s1", str(tmp_path), "m", "0.1.0")
    records = [start] + [r for n in range(200) for r in round_(n)]
    records.append(schema.boundary_record(summary="S", first_kept_id="u195", boundary_id="b"))
    records += round_(200)
    path = _write_session(tmp_path, "s1", records)
    resumed = load_session(tmp_path, "s1")
    assert resumed.stats.source == "index" and resumed.stats.start_offset > 0
    assert resumed.stats.bytes_read < path.stat().st_size / 10
    assert [m.id for m in resumed.messages[1:4]] == ["u195", "a195", "t195_0"]
    assert resumed.session_start == start and resumed.boundary["id"] == "b"
    assert resumed.messages == build_resume_view(records).messages


def test_load_session_falls_back_to_full_read_when_first_kept_is_unfindable(tmp_path):
    records = round_(1) + round_(2)
    records.append(schema.boundary_record(summary="S", first_kept_id="u1", boundary_id="b"))
    path = _write_session(tmp_path, "s2", records)
    idx.index_path(path).unlink()
    # spell the kept message's id with a JSON escape: same record, but the byte scan misses it
    data = path.read_bytes().replace(b'"id":"u1"', b'"id":"\\u00751"')
    path.write_bytes(data)
    resumed = load_transcript(path)
    assert resumed.stats.source == "full"
    assert [m.id for m in resumed.messages[1:3]] == ["u1", "a1"]


def test_unknown_session_is_session_not_found(tmp_path):
    with pytest.raises(SessionNotFound, match="sessions list"):
        load_session(tmp_path, "nope")


def test_artifact_paths_resolve_on_resume_and_traversal_is_refused(tmp_path):
    store = ArtifactStore.for_session(tmp_path, "s3")
    meta = store.write_text(get_tool_result_path("c1_0"), "FULL RESULT " * 100)
    ai = AIMessage("", id="a1", tool_calls=[{"id": "c1_0", "name": "grep", "args": {}}])
    good = ToolMessage("preview", tool_call_id="c1_0", id="t1", artifact={"kind": "text", "artifact": meta.path})
    _write_session(tmp_path, "s3", [rec(HumanMessage("q", id="u1")), rec(ai), rec(good)])
    resumed = load_session(tmp_path, "s3")
    assert resumed.artifacts.read_text(resumed.messages[-1].artifact["artifact"]).startswith("FULL RESULT")
    for bad in ("../../../etc/passwd", "/etc/passwd", "tool-results/../../x"):
        with pytest.raises(ArtifactPathError):
            resumed.artifacts.read_text(bad)


def test_resume_clears_a_result_to_the_same_bytes_as_live_clearing():
    from mtagent.context.compaction.microcompact import cleared_copy
    from mtagent.context.view import build_resume_view
    from mtagent.session import schema

    call = AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "shell", "args": {"command": "make"}}])
    result = ToolMessage("cc kernel.c\nkernel.c:9: error: boom\nmake: *** Error 1", tool_call_id="c1", id="t1",
                         name="shell")
    records = [schema.message_to_record(HumanMessage("build it", id="h1")), schema.message_to_record(call),
               schema.message_to_record(result),
               {"type": "microcompact", "schema_version": 2, "timestamp": "2026-11-29T00:00:00Z",
                "trigger": "size", "cleared_ids": ["t1"]}]
    resumed = {m.id: m for m in build_resume_view(records).messages}
    assert resumed["t1"].content == cleared_copy(result, "size").content
    assert "kernel.c:9: error: boom" in resumed["t1"].content


def test_resume_after_a_partial_compact_that_kept_the_head_matches_the_live_history():
    from mtagent.config import Settings
    from mtagent.context.compaction.compactor import CompactionOptions, compact_from
    from mtagent.context.tokens import MessageTokenCounter
    from mtagent.context.view import build_resume_view
    from mtagent.session import schema

    history = []
    for i in range(6):
        history += [HumanMessage(f"step {i}: look at mod_{i}.py", id=f"h{i}"),
                    AIMessage("", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "read_file",
                                                          "args": {"file_path": f"mod_{i}.py"}}]),
                    ToolMessage(f"contents of mod_{i}.py\n" * 20, tool_call_id=f"c{i}", id=f"t{i}", name="read_file")]
    records = [schema.message_to_record(m) for m in history]
    result = compact_from(history, "h3", None, CompactionOptions(settings=Settings(),
                          counter=MessageTokenCounter(), trigger="manual"), direction="from")
    records.append(result.boundary_record)
    later = HumanMessage("and now?", id="h9")
    records.append(schema.message_to_record(later))

    resumed = build_resume_view(records).messages
    live = [*result.new_history(), later]
    assert [m.id for m in resumed] == [m.id for m in live]
    assert [m.content for m in resumed] == [m.content for m in live]
    assert not any(m.id in {"h3", "a4", "t5"} for m in resumed)  # summarized, not kept
