"""The at-most-once guard read back from a transcript (ToolGuard.restore), record by record."""

from __future__ import annotations

from langchain_core.messages import AIMessage, ToolMessage

from mtagent.context.engine_session import ToolGuard
from mtagent.events import EventType
from mtagent.session import schema


def _records(with_result: bool) -> list[dict]:
    call = {"id": "c1", "name": "shell", "args": {"command": "deploy"}}
    out = [schema.message_to_record(AIMessage("", id="a1", tool_calls=[call])),
           schema.event_record(EventType.TOOL_STARTED.value, {"tool_call_id": "c1", "tool": "shell"})]
    if with_result:
        out.append(schema.message_to_record(ToolMessage("deployed", tool_call_id="c1", name="shell", id="t1")))
    return out


def test_a_started_call_with_its_result_is_answered_and_its_result_kept():
    guard = ToolGuard()
    guard.restore(_records(with_result=True))
    assert guard.verdict("c1") == "answered"
    assert guard.results["c1"]["content"] == "deployed"


def test_a_started_call_without_result_is_lost_and_an_unknown_call_runs():
    guard = ToolGuard()
    guard.restore(_records(with_result=False))
    assert guard.verdict("c1") == "lost" and guard.verdict("c2") == "run"


def test_a_new_assistant_message_reusing_an_id_makes_it_a_new_call():
    guard = ToolGuard()
    records = _records(with_result=True)
    records.append(schema.message_to_record(AIMessage("", id="a2", tool_calls=[
        {"id": "c1", "name": "shell", "args": {"command": "status"}}])))
    guard.restore(records)
    assert guard.verdict("c1") == "run" and "c1" not in guard.results


def _engine_after(records: list[dict]):
    from mtagent.context import MemorySink, build_engine_session

    sink = MemorySink()
    engine = build_engine_session(sink=sink)
    engine.recorder.guard.restore(records)
    return engine, sink


def test_tool_started_records_the_lost_answer_and_never_runs_it():
    engine, sink = _engine_after(_records(with_result=False))
    lost = engine.tool_started("c1", "shell", {"command": "deploy"})
    assert isinstance(lost, ToolMessage) and lost.status == "error" and lost.content.startswith("Unknown outcome")
    assert [r.get("tool_call_id") for r in sink.records] == ["c1"]  # the answer is in the transcript
    assert engine.tool_started("c1", "shell", {"command": "deploy"}).content == lost.content  # asked again


def test_an_answered_call_asked_again_gets_its_recorded_result_and_a_new_call_runs():
    engine, sink = _engine_after(_records(with_result=True))
    again = engine.tool_started("c1", "shell", {"command": "deploy"})
    assert isinstance(again, ToolMessage) and again.content == "deployed"
    assert engine.tool_started("c2", "shell", {"command": "ls"}) is True
    assert [r.get("event") for r in sink.records] == ["tool_started"]
