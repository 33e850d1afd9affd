"""Converters: every shared trajectory converts into a valid, id-stable message list; Claude Code subagent
files are read as sessions linked to their parent and replayed with it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.errors import ReplayFormatError
from mtagent.replay.formats import detect_format, load_trajectories, load_trajectory
from mtagent.replay.formats.claude_subagents import subagent_files
from mtagent.replay.trajectory import pairing_violations, repair_pairing

PARENT = "claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


def _all_files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*/*") if p.is_file())


def test_every_shared_trajectory_converts_with_valid_pairing_and_unique_ids(trajectories: Path) -> None:
    files = _all_files(trajectories)
    assert len(files) >= 40
    for path in files:
        for traj in load_trajectories(path):
            assert traj.model_calls, path
            assert pairing_violations(traj.messages) == (0, 0), path
            ids = [m.id for m in traj.messages]
            assert all(ids) and len(set(ids)) == len(ids), path
            assert all(isinstance(traj.messages[i], AIMessage) for i in traj.model_calls)


def test_detect_format_names_each_source(trajectories: Path) -> None:
    expect = {
        "claude-code/short.jsonl": "claude-code",
        "mini-swe-agent/tests__test_data__github_issue.traj.json": "mini-swe-agent-v1",
        "mini-swe-agent/deepseek_lite_dev_noparallel__pydicom__pydicom-901.traj.json": "mini-swe-agent",
        "swe-agent/trajectories__demonstrations__function_calling_simple.traj": "swe-agent",
        "swe-agent/trajectories__demonstrations__str_replace_anthropic_demo.yaml": "swe-agent",
        "openhands/runtime_trajs__basic.json": "openhands",
        "openhands/resolver_mock_output.jsonl": "openhands-resolver",
        "aider/chat-history.md": "aider",
    }
    for rel, fmt in expect.items():
        assert detect_format(trajectories / rel) == fmt, rel


def test_claude_code_merges_lines_of_one_response_and_keeps_recorded_usage(trajectories: Path) -> None:
    traj = load_trajectory(trajectories / "claude-code/short.jsonl")
    raw_ids = {
        json.loads(line)["message"]["id"]
        for line in (trajectories / "claude-code/short.jsonl").read_text().splitlines()
        if json.loads(line).get("type") == "assistant"
    }
    ais = [m for m in traj.messages if isinstance(m, AIMessage)]
    assert len(ais) == len(raw_ids) == len(traj.model_calls)
    first = ais[0]
    assert {c["name"] for c in first.tool_calls} == {"Bash", "Glob"}
    assert "Let me check the project structure" in first.content
    usage = traj.recorded_usage[0]
    assert usage is not None and usage.cache_write_tokens == 13835 and usage.cache_read_tokens == 11515
    assert traj.messages[0].response_metadata["mtagent"]["timestamp"].startswith("2026-02-10T21:11:56")


def test_claude_code_marks_its_compact_boundary_and_drops_its_own_summary(trajectories: Path) -> None:
    path = trajectories / "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    traj = load_trajectory(path)
    assert len(traj.meta["compact_boundaries"]) == 1
    assert traj.meta["own_summaries_dropped"] == 1
    texts = [m.content for m in traj.messages if isinstance(m, HumanMessage)]
    assert not any(str(t).startswith("This session is being continued") for t in texts)


def test_mini_swe_v2_passes_tool_calls_through_and_drops_exit(trajectories: Path) -> None:
    path = trajectories / "mini-swe-agent/deepseek_lite_dev_noparallel__pydicom__pydicom-901.traj.json"
    traj = load_trajectory(path)
    raw = json.loads(path.read_text())["messages"]
    assert isinstance(traj.messages[0], SystemMessage)
    assert sum(isinstance(m, ToolMessage) for m in traj.messages) == sum(m["role"] == "tool" for m in raw)
    first_call = next(m for m in traj.messages if isinstance(m, AIMessage)).tool_calls[0]
    assert first_call["name"] == "bash" and "find ." in first_call["args"]["command"]
    assert not any("diff --git" in str(m.content) and isinstance(m, AIMessage) for m in traj.messages[-1:])


def test_mini_swe_v1_turns_fenced_commands_into_synthetic_calls(trajectories: Path) -> None:
    traj = load_trajectory(trajectories / "mini-swe-agent/tests__test_data__github_issue.traj.json")
    first = traj.messages[traj.model_calls[0]]
    assert first.tool_calls[0]["id"] == "call_1"
    assert first.tool_calls[0]["args"]["command"].startswith("cat ")
    assert "mswea_bash_command" not in first.content
    result = traj.messages[traj.model_calls[0] + 1]
    assert isinstance(result, ToolMessage) and result.content.startswith("<returncode>1</returncode>")


def test_swe_agent_text_actions_and_function_calls(trajectories: Path) -> None:
    text = load_trajectory(trajectories / "swe-agent/trajectories__demonstrations__ctf__pwn__warmup.traj")
    call = text.messages[text.model_calls[0]].tool_calls[0]
    assert call["id"] == "call_1" and call["name"] == "bash" and call["args"]["command"]
    fc = load_trajectory(trajectories / "swe-agent/trajectories__demonstrations__function_calling_simple.traj")
    assert any(c["name"] == "find_file" for i in fc.model_calls for c in fc.messages[i].tool_calls)
    demo = load_trajectory(trajectories / "swe-agent/trajectories__demonstrations__str_replace_anthropic_demo.yaml")
    assert demo.model_calls


def test_swe_agent_reused_call_ids_are_made_unique_not_dropped(trajectories: Path) -> None:
    name = "swe-agent/trajectories__demonstrations__replay__marshmallow-code__marshmallow-1867__function_calling__install-1__marshmallow-code__marshmallow-1867.traj"
    traj = load_trajectory(trajectories / name)
    assert traj.meta["repairs"]["dropped_unanswered_calls"] == 0
    assert len(traj.model_calls) == 11


def test_openhands_event_stream_and_resolver(trajectories: Path) -> None:
    traj = load_trajectory(trajectories / "openhands/multi_swe_bench_example__line1__ponylang__ponyc-4595.json")
    assert isinstance(traj.messages[0], SystemMessage)
    assert "recall" not in " ".join(str(m.content)[:20] for m in traj.messages if isinstance(m, ToolMessage))
    first = traj.messages[traj.model_calls[0]]
    assert first.tool_calls[0]["name"] == "execute_bash" and "ls -l" in first.tool_calls[0]["args"]["command"]
    resolver = load_trajectories(trajectories / "openhands/resolver_mock_output.jsonl")
    assert len(resolver) == 2
    assert resolver[1].messages[resolver[1].model_calls[0]].tool_calls[0]["name"] == "execute_bash"


def test_aider_history_splits_into_sessions_with_edit_results(trajectories: Path) -> None:
    sessions = load_trajectories(trajectories / "aider/chat-history.md")
    assert len(sessions) > 100
    with_results = [s for s in sessions if any(isinstance(m, ToolMessage) for m in s.messages)]
    assert with_results
    assert not any("  \n" in str(m.content) for s in sessions[:50] for m in s.messages)


@pytest.mark.parametrize(
    ("name", "body", "expected"),
    [
        ("bad.jsonl", '{"type": "user", "uuid": "u", "sessionId": "s", "message": {}}\nnot json\n', "Claude Code"),
        ("bad.json", json.dumps({"messages": "nope", "trajectory_format": "mini-swe-agent-1.1"}), "mini-swe-agent"),
        ("what.json", json.dumps({"hello": 1}), "cannot tell the format"),
        ("empty.traj", "", "cannot tell the format"),
    ],
)
def test_malformed_input_raises_replay_format_error_naming_the_format(tmp_path: Path, name: str, body: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(body)
    with pytest.raises(ReplayFormatError, match=expected):
        load_trajectories(path)


def test_explicit_wrong_format_is_rejected(trajectories: Path) -> None:
    with pytest.raises(ReplayFormatError, match="SWE-agent"):
        load_trajectories(trajectories / "openhands/runtime_trajs__basic.json", format="swe-agent")


def test_missing_file_is_a_replay_format_error(tmp_path: Path) -> None:
    with pytest.raises(ReplayFormatError, match="no such trajectory file"):
        load_trajectories(tmp_path / "nope.jsonl")


def test_repair_drops_unanswered_calls_and_orphan_results() -> None:
    msgs = [
        HumanMessage("go", id="h"),
        AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "x", "args": {}}, {"id": "c2", "name": "x", "args": {}}]),
        ToolMessage("r1", id="t1", tool_call_id="c1"),
        ToolMessage("stray", id="t9", tool_call_id="zz"),
        AIMessage("done", id="a2"),
    ]
    fixed, repairs = repair_pairing(msgs)
    assert pairing_violations(fixed) == (0, 0)
    assert repairs["dropped_unanswered_calls"] == 1 and repairs["dropped_orphan_results"] == 1
    assert pairing_violations(msgs) == (1, 1)


def test_mtagent_transcript_replays_its_full_history_with_boundaries_marked(tmp_path: Path) -> None:
    from mtagent.session.schema import (
        boundary_record,
        dumps_record,
        message_to_record,
        session_start_record,
    )

    msgs = [
        HumanMessage("Fix src/app.py", id="u1"),
        AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "read_file", "args": {"path": "src/app.py"}}],
                  usage_metadata={"input_tokens": 120, "output_tokens": 8, "total_tokens": 128}),
        ToolMessage("print('hi')", id="t1", tool_call_id="c1", name="read_file"),
        AIMessage("done", id="a2"),
    ]
    records = [session_start_record("s1", str(tmp_path), "m", "0")]
    records += [message_to_record(m) for m in msgs[:3]]
    records.append(boundary_record(summary="so far", first_kept_id="t1"))
    records.append(message_to_record(msgs[3]))
    path = tmp_path / "s1.jsonl"
    path.write_bytes(b"".join(dumps_record(r) for r in records))
    assert detect_format(path) == "mtagent"
    traj = load_trajectory(path)
    assert [m.id for m in traj.messages] == ["u1", "a1", "t1", "a2"]
    assert traj.meta["compact_boundaries"] == [3]
    assert traj.recorded_usage[0] is not None and traj.recorded_usage[0].input_tokens == 120


def test_a_parent_loads_with_its_task_subagent_linked_to_the_task_call(trajectories: Path) -> None:
    sessions = load_trajectories(trajectories / PARENT)
    parent, child = sessions
    listed = {e["agent_id"]: e for e in parent.meta["subagents"]}
    assert listed["a2898e3"]["kind"] == "task" and listed["acompact-e1f845"]["kind"] == "compact"
    call_ids = {c["id"] for m in parent.messages for c in getattr(m, "tool_calls", [])}
    assert child.meta["tool_use_id"] in call_ids and child.meta["agent_id"] == "a2898e3"
    assert child.meta["sidechain"] and listed["a2898e3"]["messages"] == len(child.messages)
    assert listed["a2898e3"]["recorded_input_tokens"] > 0
    assert load_trajectory(trajectories / PARENT).meta["source"].endswith(PARENT.split("/")[1])


def test_the_nested_layout_is_found_and_hostile_names_are_not(tmp_path: Path, trajectories: Path) -> None:
    source = trajectories / PARENT
    parent = tmp_path / "s1.jsonl"
    shutil.copy(source, parent)
    nested = tmp_path / "s1" / "subagents"
    nested.mkdir(parents=True)
    shutil.copy(source.parent / (source.stem + "__subagents__agent-a2898e3.jsonl"), nested / "agent-a2898e3.jsonl")
    (nested / "agent-..evil.jsonl").write_text("{}\n")
    (nested / "agent-link.jsonl").symlink_to("/etc/hostname")
    (nested / "agent-broken.jsonl").write_text("not json\n")
    found = dict(subagent_files(parent))
    assert set(found) == {"a2898e3", "broken"}
    sessions = load_trajectories(parent)
    assert len(sessions) == 2  # the broken child is listed with its error, the parent still loads
    broken = next(e for e in sessions[0].meta["subagents"] if e["agent_id"] == "broken")
    assert "error" in broken


def test_a_subagent_file_alone_loads_as_one_session(trajectories: Path) -> None:
    path = trajectories / "claude-code/4d5611e5-241a-462a-8d15-5122611a9569__subagents__agent-a2898e3.jsonl"
    sessions = load_trajectories(path)
    assert len(sessions) == 1 and sessions[0].meta["sidechain"]
    assert json.loads(path.read_text().splitlines()[0])["agentId"] == "a2898e3"
