"""The opener (issue 25): what every session it opens gets, whichever front end asked.

* the session-memory model waits for the main call (the middleware's threads and replay too, not
  only the CLI), and ``call_model`` is that main call;
* the audit trail is written in files mode by every front end, not only the CLI;
* a new session gets one ``session_start`` (with its parent link for a child), a reopened one none,
  and a reopened one restores the at-most-once guard and the recorded ids from the store;
* the sink chain redacts before anything is stored or indexed;
* the system prompt is the session's own (:class:`SystemContext`), with the tool catalog's buckets.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.model_gate import GATE, BackgroundModel
from mtagent.context.opener import ParentLink, SessionTools, open_engine_session
from mtagent.integrations.thread_session import open_thread_session
from mtagent.session.store import open_store
from mtagent.session.reader import read_records

SECRET = "sk-opener-0123456789abcdef0123"


class Notes:
    """A notes model that reports whether a main call was in flight when it was asked."""

    def __init__(self) -> None:
        self.in_flight: list[int] = []

    def invoke(self, *args, **kwargs):
        self.in_flight.append(GATE.main_in_flight)
        return AIMessage("notes")


def settings(**sections) -> Settings:
    return Settings.model_validate({"recall": {"enabled": False}, **sections})


def open_files(root: Path, sid: str = "s1", **kwargs):
    s = kwargs.pop("settings", None) or settings()
    return open_engine_session(open_store(s), root, s, session_id=sid, **kwargs)


def test_the_notes_model_waits_for_the_main_call_in_a_middleware_thread(tmp_path: Path) -> None:
    notes = Notes()
    session = open_thread_session(tmp_path, "thread-1", settings(), summarizer_model=notes)
    try:
        memory = session.session_memory
        assert memory is not None and isinstance(memory.model, BackgroundModel)  # behind the gate
        seen: list[int] = []

        def invoke(sent):
            seen.append(GATE.main_in_flight)  # call_model is the main call
            return AIMessage("ok")

        session.engine.call_model([HumanMessage("hi", id="h1")], invoke)
        assert seen == [1] and GATE.main_in_flight == 0
        released = threading.Event()
        with GATE.main_call():
            worker = threading.Thread(target=lambda: (memory.model.invoke([]), released.set()))
            worker.start()
            assert not released.wait(0.2)  # a notes request waits while the main call is in flight
        assert released.wait(5) and notes.in_flight == [0]
        worker.join()
    finally:
        session.close()


def test_a_middleware_session_in_files_mode_writes_the_audit_trail(tmp_path: Path) -> None:
    session = open_thread_session(tmp_path, "thread-audit", settings())
    try:
        engine = session.engine
        engine.record_reply(AIMessage("", tool_calls=[{"name": "shell", "args": {}, "id": "c1"}]))
        assert engine.tool_started("c1", "shell", {}, approved_by="policy") is True
    finally:
        session.close()
    audit = Path(os.environ["MTAGENT_HOME"]) / "audit.jsonl"
    events = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(e["action"], e["session_id"], e["detail"]["tool_call_id"]) for e in events] == [
        ("tool.approved", "thread-audit", "c1")]


def test_a_new_session_gets_one_start_record_and_a_child_names_its_parent(tmp_path: Path) -> None:
    parent = open_files(tmp_path, "parent-1", resume=False, model_name="m")
    link = ParentLink("parent-1", "call_task", "explore", 1, "look around")
    child = open_files(tmp_path, "child-1", resume=False, model_name="m", parent=link)
    parent.close()
    child.close()
    start = read_records(child.transcript_path)[0]
    assert child.transcript_path.parent.name == "subagents" and child.transcript_path.parent.parent.name == "parent-1"
    assert (start["type"], start["parent_session_id"], start["parent_tool_call_id"], start["agent"],
            start["depth"]) == ("session_start", "parent-1", "call_task", "explore", 1)


def test_a_reopened_session_writes_no_second_start_and_keeps_its_guard(tmp_path: Path) -> None:
    first = open_files(tmp_path, "s-guard", model_name="m")
    first.engine.record_reply(AIMessage("", tool_calls=[{"name": "shell", "args": {}, "id": "c1"}], id="a1"))
    assert first.engine.tool_started("c1", "shell", {}) is True  # then the process died
    first.close()
    again = open_files(tmp_path, "s-guard", model_name="m")
    try:
        assert "a1" in again.engine.recorder.recorded
        lost = again.engine.tool_started("c1", "shell", {})
        assert isinstance(lost, ToolMessage) and lost.content.startswith("Unknown outcome")
    finally:
        again.close()
    starts = [r for r in read_records(again.transcript_path) if r["type"] == "session_start"]
    assert len(starts) == 1


def test_the_chain_redacts_before_the_writer_and_the_recall_index(tmp_path: Path) -> None:
    s = settings(recall={"enabled": True})
    opened = open_engine_session(open_store(s), tmp_path, s, session_id="s-red", secrets=[SECRET])
    try:
        opened.engine.recorder.record(HumanMessage(f"my key is {SECRET}", id="h1"))
        assert opened.engine.window.retriever is not None  # recall reads the index the chain feeds
    finally:
        opened.close()
    home = Path(os.environ["MTAGENT_HOME"])
    index = "\n".join(line for db in home.rglob("recall*.sqlite") for line in sqlite3.connect(db).iterdump())
    assert "my key is" in index and "my key is" in opened.transcript_path.read_text()  # indexed and written
    assert not [p for p in home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert SECRET not in index


def test_call_model_sends_the_sessions_own_system_prompt_and_the_catalogs_buckets(tmp_path: Path) -> None:
    (tmp_path / "CONTEXT.md").write_text("Always run the tests with -q.\n")
    bucket = SystemMessage("## MCP server: docs\nUse search_docs for API questions.", id="mcp-docs")
    opened = open_files(tmp_path, "s-sys", tools=SessionTools(context=[bucket], schema_tokens=123))
    sent: list = []
    try:
        call = opened.engine.call_model([HumanMessage("hi", id="h1")], lambda m: sent.append(m) or AIMessage("ok"))
    finally:
        opened.close()
    text = "\n".join(str(m.content) for m in sent[0])
    assert "Always run the tests with -q." in text and "Use search_docs" in text
    assert call.reply.content == "ok"
    assert opened.threshold == opened.settings.auto_compact_threshold_tokens(
        opened.settings.context.token_limit, opened.engine.window.counter.estimate(sent[0][:-1]) + 123)
    plans = [r for r in read_records(opened.transcript_path) if r["type"] == "context_plan"]
    assert plans and plans[-1]["threshold"] == opened.threshold  # the schemas count in the fixed part
