"""The agent wired to recall: every record is indexed as written, the recall tool is offered,
and after a compaction a question naming a compacted-away identifier brings it back."""

from __future__ import annotations

from pathlib import Path

from agent_helpers import agent_settings

from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.context.recall import Recaller, RecallIndexer
from mtagent.context.tokens import message_text


class TerseSummarizer:
    def summarize(self, messages, *, instructions=None, previous_summary=None) -> str:
        return "Goal: routine work. State: in progress. Next: continue."


def test_records_are_indexed_live_and_compacted_identifiers_come_back(project: Path) -> None:
    (project / "src" / "ledger.py").write_text("def quasar_ledger_rollover(book):\n    return book.close()\n")
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
