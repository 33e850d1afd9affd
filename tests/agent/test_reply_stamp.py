"""The reply is stamped once (issue 25): the engine session's ``record_reply`` gives a reply its id
and arrival time, for every front end; the CLI's ``normalize_reply`` only folds malformed calls."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from agent_helpers import agent_settings
from mtagent.agent.graph import normalize_reply
from mtagent.agent.scripted import ScriptedChatModel, reply
from mtagent.agent.session import AgentSession
from mtagent.session.reader import read_records


def test_normalize_reply_leaves_the_stamp_and_the_id_to_the_engine() -> None:
    raw = AIMessage("hi", id="lc_run-1", response_metadata={"model": "m"})
    out = normalize_reply(raw)
    assert out.id == "lc_run-1" and out.response_metadata == {"model": "m"}


def test_the_cli_reply_carries_the_one_stamp_the_engine_gave_it(project) -> None:
    with AgentSession.create(project, model=ScriptedChatModel([reply("done")]), settings=agent_settings(),
                             approval="auto") as session:
        session.runtime.clock = lambda: 1_234.5
        session.run_turn("hello")
        path = session.transcript_path
        answer = session.history[-1]
    assert answer.response_metadata["mtagent"]["ts"] == 1_234.5 and not answer.id.startswith("lc_run")
    recorded = [r for r in read_records(path) if r["type"] == "transcript_message" and r["role"] == "assistant"]
    assert [r["id"] for r in recorded] == [answer.id]
