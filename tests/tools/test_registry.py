"""default_tools wiring: schemas, errors as ToolMessages, the budgeter, ToolNode and the transcript."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from mtagent.events import EventBus, EventType, SessionStats
from mtagent.session.schema import parse_record
from mtagent.tools import default_tools
from mtagent.tools.files import ReadFileTool

from .conftest import Kit

EXPECTED = ["read_file", "write_file", "edit_file", "grep", "glob", "ls", "shell", "update_plan", "read_tool_result"]


def test_default_tools_names_and_precise_schemas(kit: Kit, tmp_path) -> None:
    assert list(kit.tools) == EXPECTED
    for tool in kit.tools.values():
        spec = convert_to_openai_tool(tool)["function"]
        assert spec["description"]
        props = spec["parameters"]["properties"]
        assert props and all(p.get("description") for p in props.values()), tool.name
    read = convert_to_openai_tool(kit.tools["read_file"])["function"]["parameters"]
    assert read["required"] == ["file_path"]
    assert set(read["properties"]) == {"file_path", "offset", "limit", "start_line", "end_line"}
    no_store = [t.name for t in default_tools(tmp_path, include_memory=False)]
    assert "read_tool_result" not in no_store
    assert "save_memory" in [t.name for t in default_tools(tmp_path)]


def test_an_unexpected_exception_becomes_an_error_tool_message(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self, call_id, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ReadFileTool, "execute", boom)
    msg = kit.call("read_file", file_path="x")
    assert msg.status == "error"
    assert msg.content == "Error: read_file failed unexpectedly: RuntimeError: disk on fire"


def test_plain_invocation_returns_text_and_async_works(kit: Kit) -> None:
    (kit.root / "a.txt").write_text("hello\n")
    assert kit.tools["read_file"].invoke({"file_path": "a.txt"}) == "     1\thello"
    call = {"name": "ls", "args": {}, "id": "async_1", "type": "tool_call"}
    msg = asyncio.run(kit.tools["ls"].ainvoke(call))
    assert isinstance(msg, ToolMessage) and "a.txt" in msg.content and msg.artifact["budget"]["stage"] == "tool"


def test_tool_node_turn_is_budgeted_and_recorded(make_kit) -> None:
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    bus, stats = EventBus(), SessionStats()
    persisted = []
    bus.subscribe(persisted.append, EventType.TOOL_RESULT_PERSISTED)
    kit = make_kit(events=bus, stats=stats)
    (kit.root / "big.txt").write_text("".join(f"needle {i}\n" for i in range(5000)))
    ai = AIMessage(content="", tool_calls=[
        {"id": "g1", "name": "grep", "args": {"pattern": "needle", "max_results": 10000}},
        {"id": "l1", "name": "ls", "args": {}},
    ])
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(list(kit.tools.values())))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    produced = graph.compile().invoke({"messages": [ai]})["messages"][1:]
    final = kit.ctx.budgeter.finalize_turn(produced)

    grep_msg = next(m for m in final if m.tool_call_id == "g1")
    assert grep_msg.content.startswith('<persisted-output tool="grep"')
    assert [e.data["tool_call_id"] for e in persisted] == ["g1"]
    assert stats.tool_results_persisted == 1 and stats.tool_result_chars_saved > 50_000
    records = [json.loads(json.dumps(r)) for r in kit.sink]
    assert [r["type"] for r in records] == ["tool_result_artifact", "transcript_message", "transcript_message"]
    for record in records:
        parse_record(record)
    tool_rec = records[1]
    assert tool_rec["tool_call_id"] == "g1" and tool_rec["content"] == grep_msg.content
    assert tool_rec["toolUseResult"]["num_matches"] == 5000
    assert tool_rec["toolUseResult"]["budget"]["stage"] == "turn"


def test_validation_errors_tell_the_model_how_to_fix_the_call(kit: Kit) -> None:
    msg = kit.call("grep", pattern="x", context=-1)
    assert msg.status == "error"
    assert msg.content.startswith("Invalid arguments — context:") and "call the tool again" in msg.content


def test_read_tool_result_refuses_paths_outside_the_artifact_folder(kit: Kit) -> None:
    escaped = kit.call("read_tool_result", path="../../etc/passwd")
    assert escaped.status == "error" and "escapes the session's artifact folder" in escaped.content
    missing = kit.call("read_tool_result", path="tool-results/nope.txt")
    assert missing.status == "error" and "no saved tool result" in missing.content


def test_a_plain_string_input_fills_the_first_argument(kit: Kit) -> None:
    (kit.root / "notes.md").write_text("# hi\n")
    assert kit.tools["read_file"].invoke("notes.md") == "     1\t# hi"
    assert "notes.md" in kit.tools["ls"].invoke(".")
