"""The agent wired to recall: the index catches up with the transcript (never per record), the
recall tool is offered, and after a compaction a question naming a compacted-away identifier
brings it back — in the same session and after a resume. Closing the session closes its whole sink
chain: what the index still holds is written (the session used to close only the transcript writer,
leaving the index's batch unwritten and its database open)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from agent_helpers import agent_settings
from langchain_core.messages import HumanMessage

from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.context.recall import Recaller, RecallIndexer
from mtagent.context.tokens import message_text


class TerseSummarizer:
    def summarize(self, messages, *, instructions=None, previous_summary=None) -> str:
        return "Goal: routine work. State: in progress. Next: continue."


def test_compacted_identifiers_come_back_also_after_a_resume(project: Path) -> None:
    (project / "src" / "ledger.py").write_text("def quasar_ledger_rollover(book):\n    return book.close()\n\n"
                                               "def nebula_journal_seal(page):\n    return page.stamp()\n")
    settings = agent_settings(context={"token_limit": 48_000, "auto_compact_threshold": 12_000,
                                       "compaction_trigger": "threshold", "compression_preserve_min_tokens": 1_000,
                                       "compression_preserve_max_tokens": 3_000, "reattach_max_files": 0})
    model = ScriptedChatModel([tool_call("read_file", {"file_path": "src/ledger.py"}), "read it"],
                              policy=lambda sent: "noted")
    with AgentSession.create(project, model=model, settings=settings) as session:
        session.window_manager.summarizer = TerseSummarizer()  # a model's summary would not quote every line read
        assert "recall" in session.tools
        session.run_turn("look at the ledger module")
        live = Recaller(RecallIndexer(project, settings.recall))  # another reader, as `mtagent recall` is
        live.indexer.refresh()
        assert live.search("quasar_ledger_rollover")[0].session == session.session_id
        for i in range(12):
            session.run_turn(f"step {i}: " + "more routine work and details " * 250)
        sent_before = "\n".join(message_text(m) for m in model.calls[-1])
        assert "quasar_ledger_rollover" not in sent_before  # compacted away
        session.run_turn("what did quasar_ledger_rollover return again?")
        retrieved = [m for m in model.calls[-1] if m.id == "retrieved-context"]
        assert retrieved and "return book.close()" in message_text(retrieved[0])
        plan = session.window_manager.last_plan
        assert plan is not None and plan.retrieved and plan.retrieved["items"]
    again = ScriptedChatModel(["it returned book.close()"])
    with AgentSession.resume(session.session_id, project, model=again, settings=settings) as resumed:
        resumed.run_turn("and what did nebula_journal_seal return?")
        retrieved = [m for m in again.calls[-1] if m.id == "retrieved-context"]
        assert retrieved and "return page.stamp()" in message_text(retrieved[0])


def test_a_fact_recorded_just_before_a_recall_is_found_by_it(project: Path) -> None:
    """Nothing indexes records as they are written; the recall tool catches up with the transcript
    first, so the user's message of this very turn is what its search finds."""
    model = ScriptedChatModel([tool_call("recall", {"query": "zebra-canary-4471"}), "found it"])
    with AgentSession.create(project, model=model, settings=agent_settings(), approval="auto") as session:
        session.run_turn("the vault code is zebra-canary-4471; recall it")
        result = [m for m in model.calls[-1] if m.type == "tool"][-1]
        assert "zebra-canary-4471" in message_text(result) and session.session_id in message_text(result)


def test_a_turn_never_indexes_and_closing_catches_the_index_up(project: Path) -> None:
    """The turn's path writes the transcript and nothing of the index; the session's close catches
    the index up, and a crash (no close) loses nothing a reader's catch-up does not read."""
    model = ScriptedChatModel(["noted"], policy=lambda sent: "noted")
    session = AgentSession.create(project, model=model, settings=agent_settings(), approval="auto")
    with session:
        session.run_turn("remember the quasar_flux_capacitor setting")
        assert RecallIndexer(project).store.count() == 0
    assert RecallIndexer(project).store.count() >= 2  # the question and the answer
    crashed = AgentSession.create(project, model=model, settings=agent_settings(), approval="auto")
    crashed.run_turn("and the nebula_overdrive_valve too")  # never closed: as if the process died
    live = Recaller(RecallIndexer(project))
    live.indexer.refresh()
    assert [h.session for h in live.search("nebula_overdrive_valve")] == [crashed.session_id]
    crashed.close()


def test_a_resumed_session_recalls_what_it_recorded_before(project: Path) -> None:
    first = ScriptedChatModel(["noted"])
    with AgentSession.create(project, model=first, settings=agent_settings(), approval="auto") as session:
        session.run_turn("the deploy key lives in vault path kv/orbital-tangerine-52")
        sid = session.session_id
    again = ScriptedChatModel([tool_call("recall", {"query": "orbital-tangerine-52", "scope": "session"}), "ok"])
    with AgentSession.resume(sid, project, model=again, settings=agent_settings(), approval="auto") as resumed:
        resumed.run_turn("where was the deploy key?")
        result = [m for m in again.calls[-1] if m.type == "tool"][-1]
        assert "kv/orbital-tangerine-52" in message_text(result) and f"session {sid}" in message_text(result)


def test_close_writes_what_the_recall_index_still_holds(project: Path) -> None:
    settings = agent_settings(recall={"enabled": True})
    session = AgentSession.create(project, model=ScriptedChatModel(["ok"]), settings=settings)
    try:
        # a user message ends no round: it waits in the index's batch until a flush
        session.opened.engine.recorder.record(HumanMessage("the zanzibar-quartz constant is 7741", id="late-1"))
    finally:
        session.close()
    home = Path(os.environ["MTAGENT_HOME"])
    index = "\n".join(line for db in home.rglob("recall*.sqlite") for line in sqlite3.connect(db).iterdump())
    assert "zanzibar-quartz" in index
