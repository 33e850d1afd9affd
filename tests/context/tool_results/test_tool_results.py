"""The tool-result budget (spec 000 M2): per-tool limits, the per-turn aggregate, frozen decisions — also on
real tool outputs from the shared trajectories: bounded, lossless, frozen."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ToolMessage

from mtagent.config import ToolResultSettings
from mtagent.context.tool_results.budgeter import (
    ToolResultBudgeter,
    ToolResultPolicy,
    is_budgeted,
)
from mtagent.errors import ConfigError
from mtagent.events import EventBus, EventType, SessionStats
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.schema import parse_record, record_to_message

PREVIEW_OVERHEAD = 700  # the <persisted-output> tag and the read-more pointer
TIGHT = ToolResultPolicy(grep_max_chars=2_000, shell_max_chars=3_000, default_max_chars=5_000,
                         aggregate_max_chars=20_000, preview_chars=1_000)
WRAPPER_OVERHEAD = 700


def grep_output(lines: int) -> str:
    return "\n".join(f"src/pkg/module_{i % 37}.py:{i}:    value = compute(x, y)  # match {i}" for i in range(lines))


def tool_msg(content: str, name: str, call_id: str) -> ToolMessage:
    return ToolMessage(content=content, tool_call_id=call_id, name=name, id=f"msg-{call_id}")


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(tmp_path / "artifacts")


def test_grep_over_limit_model_sees_only_preview_and_transcript_has_both(store: ArtifactStore) -> None:
    sink: list[dict] = []
    budgeter = ToolResultBudgeter(ToolResultPolicy(), artifacts=store, sink=sink)
    full = grep_output(2000)
    assert len(full) > 20_000

    [out] = budgeter.finalize_turn([tool_msg(full, "grep", "call_1")])

    assert out.content.startswith(
        f'<persisted-output tool="grep" path="tool-results/call_1.txt" original_chars="{len(full)}">\n'
        "Found 2000 matches. Showing first "
    )
    assert out.content.endswith("</persisted-output>")
    assert len(out.content) <= ToolResultSettings().preview_chars + PREVIEW_OVERHEAD
    assert "read_tool_result" in out.content
    assert store.read_text("tool-results/call_1.txt") == full
    kinds = [r["type"] for r in sink]
    assert kinds == ["tool_result_artifact", "transcript_message"]
    for record in sink:
        parse_record(json.loads(json.dumps(record)))
    artifact_rec, message_rec = sink
    assert artifact_rec["path"] == "tool-results/call_1.txt"
    assert artifact_rec["original_chars"] == len(full)
    assert message_rec["content"] == out.content
    tur = message_rec["toolUseResult"]
    assert tur["artifact"] == "tool-results/call_1.txt"
    assert tur["original_chars"] == len(full)
    assert tur["preview_chars"] == len(out.content)
    assert tur["truncated"] is True and tur["artifact_truncated"] is False
    assert tur["budget"] == {"stage": "turn", "decision": "persisted", "limit": 20_000, "reason": "tool_limit"}


def test_result_under_its_limit_is_passed_through_unchanged(store: ArtifactStore) -> None:
    budgeter = ToolResultBudgeter(ToolResultPolicy(), artifacts=store)
    small = grep_output(50)
    out = budgeter.budget(tool_msg(small, "grep", "c"))
    assert out.content == small
    assert out.artifact["artifact"] is None and out.artifact["truncated"] is False
    assert store.list_tool_results() == []


def test_each_tool_kind_has_its_own_threshold() -> None:
    policy = ToolResultPolicy(per_tool_max_chars={"fetch": 1234})
    assert policy.limit_for("grep") == 20_000
    assert policy.limit_for("shell") == 30_000
    assert policy.limit_for("Bash") == 30_000
    assert policy.limit_for("web_search") == 50_000
    assert policy.limit_for("read_file") is None
    assert policy.limit_for("read_tool_result") is None
    assert policy.limit_for("fetch") == 1234


def test_read_file_results_are_never_persisted(store: ArtifactStore) -> None:
    budgeter = ToolResultBudgeter(ToolResultPolicy(), artifacts=store)
    big = "x" * 300_000
    [out] = budgeter.budget_turn([tool_msg(big, "read_file", "r1")])
    assert out.content == big
    assert store.list_tool_results() == []


def test_aggregate_offloads_largest_results_until_turn_fits(store: ArtifactStore) -> None:
    policy = ToolResultPolicy(per_tool_max_chars={"fetch": 100_000})
    budgeter = ToolResultBudgeter(policy, artifacts=store)
    sizes = {"a": 80_000, "b": 80_500, "c": 81_000, "d": 79_500}
    turn = [AIMessage(content="", tool_calls=[{"id": k, "name": "fetch", "args": {}} for k in sizes])]
    turn += [tool_msg("line of text\n" * (n // 13) + "z" * (n % 13), "fetch", k) for k, n in sizes.items()]

    out = budgeter.budget_turn(turn)

    results = {m.tool_call_id: m for m in out if isinstance(m, ToolMessage)}
    persisted = {k for k, m in results.items() if m.artifact["budget"]["decision"] == "persisted"}
    assert persisted == {"c", "b"}  # the two largest, and no more than needed
    assert all(results[k].artifact["budget"]["reason"] == "aggregate" for k in persisted)
    assert sum(len(m.content) for m in results.values()) <= 200_000
    assert results["a"].content == turn[1].content and results["d"].content == turn[4].content
    assert out[0] is turn[0]


def test_rebudgeting_a_budgeted_turn_is_a_no_op(store: ArtifactStore) -> None:
    budgeter = ToolResultBudgeter(ToolResultPolicy(), artifacts=store)
    first = budgeter.budget_turn([tool_msg(grep_output(3000), "grep", "g"), tool_msg("ok", "shell", "s")])
    again = budgeter.budget_turn(first)
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert all(is_budgeted(m, "turn") for m in again)
    assert budgeter.budget(first[0]) is first[0]


def test_resume_reproduces_byte_identical_previews(store: ArtifactStore) -> None:
    sink: list[dict] = []
    live = ToolResultBudgeter(ToolResultPolicy(), artifacts=store, sink=sink)
    log = "\n".join(f"step {i}: ok" if i % 997 else f"step {i}: error: disk full" for i in range(6000))
    turn = live.finalize_turn([tool_msg(grep_output(4000), "grep", "g1"), tool_msg(log, "shell", "s1"),
                               tool_msg("short", "ls", "l1")])
    lines = [json.dumps(r, ensure_ascii=False) for r in sink if r["type"] == "transcript_message"]
    resumed = [record_to_message(json.loads(line)) for line in lines]

    # A resumed session, even with different limits now, keeps the recorded decisions.
    later = ToolResultBudgeter(ToolResultPolicy(grep_max_chars=10, shell_max_chars=10, default_max_chars=10,
                                                preview_chars=100), artifacts=store)
    rebudgeted = later.budget_turn(resumed)
    assert [m.content for m in rebudgeted] == [m.content for m in turn]
    assert [m.id for m in rebudgeted] == [m.id for m in turn]
    assert [json.dumps(m.artifact, sort_keys=True) for m in rebudgeted] == \
        [json.dumps(m.artifact, sort_keys=True) for m in turn]


def test_previews_are_deterministic(tmp_path: Path) -> None:
    content = grep_output(5000)
    a = ToolResultBudgeter(artifacts=ArtifactStore(tmp_path / "a")).budget(tool_msg(content, "grep", "x"))
    b = ToolResultBudgeter(artifacts=ArtifactStore(tmp_path / "b")).budget(tool_msg(content, "grep", "x"))
    assert a.content == b.content


def test_shell_preview_keeps_head_tail_and_error_lines_from_the_middle(store: ArtifactStore) -> None:
    lines = [f"compiling unit {i} ... done" for i in range(4000)]
    lines[2100] = "src/kernel.c:88:5: error: use of undeclared identifier 'vec'"
    lines[2500] = "FAILED tests/test_kernel.py::test_vec - AssertionError"
    lines[0] = "BUILD START"
    lines[-1] = "BUILD END: 1 error"
    out = ToolResultBudgeter(artifacts=store).budget(tool_msg("\n".join(lines), "shell", "s"))
    assert "BUILD START" in out.content and "BUILD END: 1 error" in out.content
    assert "error: use of undeclared identifier 'vec'" in out.content
    assert "FAILED tests/test_kernel.py::test_vec" in out.content
    assert "omitted (" in out.content and "lines" in out.content
    assert out.artifact["preview_kind"] == "shell"


def test_json_preview_is_a_structural_summary(store: ArtifactStore) -> None:
    doc = {"status": "ok", "points": [{"ts": i, "lat": 1.5, "lng": 2.5, "note": "x" * 50} for i in range(2000)],
           "meta": {"count": 2000, "source": "gps"}}
    out = ToolResultBudgeter(artifacts=store).budget(tool_msg(json.dumps(doc), "api", "j"))
    assert "JSON object with 3 keys" in out.content
    assert '"points": array[2000] of object{ts, lat, lng, note}' in out.content
    assert '"status": "ok"' in out.content
    assert out.artifact["preview_kind"] == "json"


def test_default_preview_is_head_and_tail(store: ArtifactStore) -> None:
    text = "\n".join(f"paragraph {i} " + "lorem ipsum " * 8 for i in range(3000))
    out = ToolResultBudgeter(artifacts=store).budget(tool_msg(text, "fetch_page", "t"))
    assert "paragraph 0 " in out.content and "paragraph 2999 " in out.content
    assert "paragraph 1500 " not in out.content


def test_reducer_keeps_last_points_and_saves_the_raw_data(store: ArtifactStore) -> None:
    policy = ToolResultPolicy(reducers={"tracker": {"keep_last": 3, "path": "points"}})
    raw = json.dumps({"order": "A1", "points": [{"n": i} for i in range(50)]})
    out = ToolResultBudgeter(policy, artifacts=store).budget(tool_msg(raw, "tracker", "t1"))
    note, body = out.content.split("\n", 1)
    assert "kept last 3 of 50 items" in note and "tool-results/t1.txt" in note
    assert json.loads(body) == {"order": "A1", "points": [{"n": 47}, {"n": 48}, {"n": 49}]}
    assert store.read_text("tool-results/t1.txt") == raw
    assert out.artifact["reducer"]["spec"] == {"keep_last": 3, "path": "points"}
    assert out.artifact["budget"]["decision"] == "reduced"


def test_reducer_keep_fields_applies_to_each_item(store: ArtifactStore) -> None:
    policy = ToolResultPolicy(reducers={"api": {"keep_fields": ["id", "status"]}})
    raw = json.dumps([{"id": i, "status": "open", "body": "long text " * 20} for i in range(5)])
    out = ToolResultBudgeter(policy, artifacts=store).budget(tool_msg(raw, "api", "a1"))
    assert json.loads(out.content.split("\n", 1)[1]) == [{"id": i, "status": "open"} for i in range(5)]


def test_invalid_reducer_spec_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown keys"):
        ToolResultPolicy(reducers={"api": {"keep_newest": 3}})
    with pytest.raises(ConfigError, match="whole number"):
        ToolResultPolicy(reducers={"api": {"keep_last": -1}})


def test_persisting_emits_event_and_updates_session_stats(store: ArtifactStore) -> None:
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append, EventType.TOOL_RESULT_PERSISTED)
    stats = SessionStats()
    budgeter = ToolResultBudgeter(artifacts=store, events=bus, stats=stats)
    full = grep_output(3000)
    out = budgeter.budget(tool_msg(full, "grep", "e1"))
    assert [e.data["path"] for e in seen] == ["tool-results/e1.txt"]
    assert seen[0].data["original_chars"] == len(full) and seen[0].data["tool"] == "grep"
    assert stats.tool_results_persisted == 1
    assert stats.tool_result_chars_saved == len(full) - len(out.content)
    assert stats.last_tool_result_chars == len(full)


def test_without_an_artifact_store_the_result_is_truncated_and_says_so() -> None:
    out = ToolResultBudgeter().budget(tool_msg(grep_output(3000), "grep", "n1"))
    assert out.content.startswith('<truncated-output tool="grep"')
    assert "no session artifact store" in out.content
    assert out.artifact["artifact"] is None and out.artifact["budget"]["decision"] == "truncated"


def test_non_text_content_blocks_are_left_alone(store: ArtifactStore) -> None:
    content = [{"type": "image", "source": "data:..."}, {"type": "text", "text": "x" * 100_000}]
    out = ToolResultBudgeter(artifacts=store).budget(ToolMessage(content=content, tool_call_id="i", name="shot"))
    assert out.content == content
    assert out.artifact["budget"]["decision"] == "not_text"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tool=st.sampled_from(["grep", "shell", "fetch", "read_file"]),
    lines=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300), max_size=400),
)
def test_budgeted_content_is_bounded_and_budgeting_is_idempotent(tmp_path: Path, tool: str, lines: list[str]) -> None:
    policy = ToolResultPolicy(grep_max_chars=2_000, shell_max_chars=2_000, default_max_chars=2_000, preview_chars=500)
    budgeter = ToolResultBudgeter(policy, artifacts=ArtifactStore(tmp_path / "h"))
    content = "\n".join(lines)
    [out] = budgeter.budget_turn([tool_msg(content, tool, "h1")])
    if tool == "read_file" or len(content) <= 2_000:
        assert out.content == content
    else:
        assert len(out.content) <= 500 + PREVIEW_OVERHEAD
        assert ArtifactStore(tmp_path / "h").read_text(out.artifact["artifact"]) == content
    [again] = budgeter.budget_turn([out])
    assert again is out


def test_a_reused_tool_call_id_never_overwrites_an_earlier_artifact(store: ArtifactStore) -> None:
    budgeter = ToolResultBudgeter(artifacts=store)
    first = budgeter.budget(tool_msg(grep_output(3000), "grep", "call_0"))
    second = budgeter.budget(tool_msg(grep_output(3001), "grep", "call_0"))
    assert first.artifact["artifact"] == "tool-results/call_0.txt"
    assert second.artifact["artifact"] == "tool-results/call_0-2.txt"
    assert store.read_text("tool-results/call_0.txt") == grep_output(3000)


_GAP = re.compile(r"^… lines (\d+)-(\d+) omitted \((\d+) lines\) …$")


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(st.lists(st.sampled_from(["ok", "error:", "ValueError", "FAILED", "warning:", "x" * 40, "",
                                             "build", "Traceback", "é"]), max_size=6), max_size=300),
    crlf=st.booleans(), trailing=st.booleans(), max_chars=st.integers(200, 3000), errors=st.booleans(),
)
def test_log_preview_is_an_ordered_subset_of_lines_with_exact_gap_notes(
        words: list[list[str]], crlf: bool, trailing: bool, max_chars: int, errors: bool) -> None:
    from mtagent.context.tool_results.previews import _cut_line, log_preview

    content = ("\r\n" if crlf else "\n").join(" ".join(w) for w in words) + ("\n" if trailing and words else "")
    lines = [line.removesuffix("\r") for line in content.split("\n")]
    if content.endswith("\n"):
        lines.pop()
    if len(lines) <= 2:
        return
    preview = log_preview(content, max_chars, keep_errors=errors)
    if preview == content:
        return
    index = 0
    for out in preview.split("\n"):
        gap = _GAP.match(out)
        if gap:
            first, last, count = (int(g) for g in gap.groups())
            assert first == index + 1 and count == last - first + 1
            index = last
        else:
            assert out == _cut_line(lines[index]), (index, out)
            index += 1
    assert index == len(lines)
    assert len(preview) <= max_chars + 60 * preview.count("omitted")


def test_artifact_cap_is_recorded_and_told_to_the_model(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "capped", max_bytes=5_000)
    sink: list[dict] = []
    [out] = ToolResultBudgeter(artifacts=store, sink=sink).finalize_turn([tool_msg(grep_output(3000), "grep", "cap")])
    assert out.artifact["artifact_truncated"] is True
    assert "cut at the artifact size cap" in out.content
    assert len(store.read_text("tool-results/cap.txt").encode()) <= 5_000
    assert sink[0]["type"] == "tool_result_artifact" and sink[0]["truncated"] is True


def test_the_engine_builds_each_result_once_and_holds_the_newcomer_to_the_turn_aggregate(store, monkeypatch):
    from mtagent.context import MemorySink, Settings, build_engine_session

    built, rebuild = [], ToolResultBudgeter._rebuild
    counted = staticmethod(lambda m, *a: built.append(m.tool_call_id) or rebuild(m, *a))
    monkeypatch.setattr(ToolResultBudgeter, "_rebuild", counted)
    engine = build_engine_session(Settings.model_validate({"tool_results": {"aggregate_max_chars": 3_000}}),
                                  sink=MemorySink(), artifacts=store)
    engine.record_reply(AIMessage("", tool_calls=[{"name": "shell", "args": {}, "id": f"c{i}"} for i in range(3)]))
    out = [engine.tool_result(tool_msg(f"{i}" * 1_200, "shell", f"c{i}")) for i in range(3)]
    assert built == ["c0", "c1", "c2"]  # one decision, one message each; earlier results are not budgeted again
    assert ["<persisted-output" in m.content for m in out] == [False, False, True]


def claude_code_outputs(path: Path) -> list[tuple[str, str]]:
    names: dict[str, str] = {}
    out: list[tuple[str, str]] = []
    for line in path.open(encoding="utf-8"):
        rec = json.loads(line)
        content = (rec.get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                names[block["id"]] = {"Bash": "shell", "Grep": "grep", "Read": "read_file"}.get(block["name"], "other")
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                out.append((names.get(block["tool_use_id"], "other"), block["content"]))
    return out


def mini_swe_agent_outputs(path: Path) -> list[tuple[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [("shell", m["extra"]["raw_output"]) for m in data["messages"]
            if m.get("role") == "tool" and isinstance((m.get("extra") or {}).get("raw_output"), str)]


def test_real_tool_outputs_are_bounded_lossless_and_frozen(trajectories: Path, tmp_path: Path) -> None:
    outputs = claude_code_outputs(trajectories / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    outputs += mini_swe_agent_outputs(
        trajectories / "mini-swe-agent" / "deepseek_chat_test_1-100__django__django-13964.traj.json")
    assert len(outputs) > 200
    store = ArtifactStore(tmp_path / "a")
    budgeter = ToolResultBudgeter(TIGHT, artifacts=store)
    persisted = 0
    for i, (tool, raw) in enumerate(outputs):
        [msg] = budgeter.budget_turn([ToolMessage(content=raw, name=tool, tool_call_id=f"c{i}")])
        limit = TIGHT.limit_for(tool)
        if limit is None or len(raw) <= limit:
            assert msg.content == raw
            continue
        persisted += 1
        assert len(msg.content) <= TIGHT.preview_chars + WRAPPER_OVERHEAD
        assert store.read_text(msg.artifact["artifact"]) == raw
        assert budgeter.budget_turn([msg])[0] is msg
    assert persisted >= 10
