"""One "answered" set (issue 25): the loop's idea of which tool calls have a result is the engine
session's guard, so the two can never disagree. A model that reuses a call id in a later turn asks
for a new call: it runs (the guard lets go of an earlier turn's ids), where a second set that never
forgot skipped it and left the call without a result."""

from __future__ import annotations

from langchain_core.messages import ToolMessage

from agent_helpers import ToolCounter, agent_settings
from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.agent.session import AgentSession


def test_the_loop_and_the_engine_share_one_answered_set(project, counter: ToolCounter) -> None:
    with AgentSession.create(project, model=ScriptedChatModel([reply("hi")]), settings=agent_settings(),
                             tools=counter.tools, approval="auto") as session:
        assert session.conversation.answered is session.parts.opened.engine.recorder.guard.answered


def test_a_call_id_reused_in_a_later_turn_runs_again(project, counter: ToolCounter) -> None:
    model = ScriptedChatModel([
        tool_call("probe", {"label": "first"}, id="call_1"), reply("first done"),
        tool_call("probe", {"label": "second"}, id="call_1"), reply("second done"),
    ])
    with AgentSession.create(project, model=model, settings=agent_settings(), tools=counter.tools,
                             approval="auto") as session:
        assert session.run_turn("probe once").status == "done"
        second = session.run_turn("probe again")
        history = session.history
    assert second.status == "done" and second.executed_tool_call_ids == ["call_1"]
    assert counter.runs == ["first", "second"]
    results = [m.content for m in history if isinstance(m, ToolMessage)]
    assert results == ["probe first ran", "probe second ran"]
