"""Claude Code subagent files are read as sessions linked to their parent and replayed with it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mtagent.replay.formats import load_trajectories, load_trajectory
from mtagent.replay.formats.claude_subagents import subagent_files

PARENT = "claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


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
