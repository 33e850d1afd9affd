"""The budgeter on real tool outputs from the shared trajectories: bounded, lossless, frozen."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import ToolMessage

from mtagent.context.tool_results.budgeter import ToolResultBudgeter, ToolResultPolicy
from mtagent.session.artifacts import ArtifactStore

TIGHT = ToolResultPolicy(grep_max_chars=2_000, shell_max_chars=3_000, default_max_chars=5_000,
                         aggregate_max_chars=20_000, preview_chars=1_000)
WRAPPER_OVERHEAD = 700


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
