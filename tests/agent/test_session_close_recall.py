"""Closing an agent session closes its whole sink chain: what the recall index still holds is
written (the session used to close only the transcript writer, leaving the index's batch unwritten
and its database open)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from langchain_core.messages import HumanMessage

from agent_helpers import agent_settings
from mtagent.agent.scripted import ScriptedChatModel
from mtagent.agent.session import AgentSession


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
