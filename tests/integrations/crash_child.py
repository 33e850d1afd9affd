"""A ``create_agent`` run that a test kills mid-tool (``python crash_child.py PROJECT DB MARKER``).

The ``deploy`` tool appends a line to MARKER (its side effect) and then blocks, so the parent can
SIGKILL this process while the call is in flight. Run again with ``--resume``, the same thread is
continued from its SQLite checkpoint, which re-enters the interrupted tool node.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.config import Settings
from mtagent.integrations.langchain import MTContextMiddleware

THREAD = {"configurable": {"thread_id": "crash-thread"}}


def main(project: Path, db: Path, marker: Path, resume: bool) -> None:
    @tool
    def deploy(env: str) -> str:
        """Deploy to an environment (a side effect that must happen at most once)."""
        with marker.open("a", encoding="utf-8") as out:
            out.write(f"deployed {env}\n")
        if not resume:
            time.sleep(120)  # the parent kills us here
        return f"deployed to {env}"

    first = [] if resume else [tool_call("deploy", {"env": "prod"}, id="call_deploy")]
    model = ScriptedChatModel([*first, reply("deploy handled")])
    settings = Settings.model_validate({"session_memory": {"enabled": False}})
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    with MTContextMiddleware(settings=settings, project_root=project) as middleware:
        agent = create_agent(model, [deploy], middleware=[middleware], checkpointer=saver)
        out = agent.invoke(None if resume else {"messages": [HumanMessage("deploy to prod")]}, THREAD)
    print(json.dumps([{"type": m.type, "content": m.content, "tool_call_id": getattr(m, "tool_call_id", None)}
                      for m in out["messages"]]))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), "--resume" in sys.argv[4:])
