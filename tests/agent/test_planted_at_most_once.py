"""At-most-once tools on the agent's own path (the graph's tools step over EngineSession).

The transcript says a call started (``tool_started``) but has no result: the process died while
the tool ran, before its checkpoint moved past the approval. Resumed and approved again, the tools
step must not run the call a second time; the model is told the outcome is unknown. A planted bug
that removed this guard from the tools step re-ran the side effect, and no test drove the path.
"""

from __future__ import annotations

from langchain_core.messages import ToolMessage

from agent_helpers import ToolCounter, agent_settings
from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.session.reader import read_records


def _crashed_mid_tool(project, counter: ToolCounter, settings) -> str:
    """A session whose probe call was announced and ran its side effect, then the process died."""
    model = ScriptedChatModel([tool_call("probe", {"label": "deploy"}, id="p1"), "unused"])
    session = AgentSession.create(project, model=model, settings=settings, tools=counter.tools)
    assert session.run_turn("deploy it").status == "approval_required"
    assert session.parts.opened.engine.tool_started("p1", "probe", {"label": "deploy"}) is True
    counter.runs.append("deploy")  # the side effect happened; no result was ever written
    session.close()
    return session.session_id


def test_a_started_call_without_result_is_not_run_again_on_resume(project, counter):
    settings = agent_settings(agent={"approval": {"probe": "ask"}})
    sid = _crashed_mid_tool(project, counter, settings)

    model = ScriptedChatModel(["I will check whether the deploy happened"])
    with AgentSession.resume(sid, project, model=model, settings=settings, tools=counter.tools) as session:
        assert [r.tool_call_id for r in session.pending_approval] == ["p1"]
        result = session.resume_approval("allow")
    assert result.status == "done" and result.executed_tool_call_ids == []
    assert counter.runs == ["deploy"]  # once, before the crash — never again
    told = next(m for m in model.calls[0] if isinstance(m, ToolMessage) and m.tool_call_id == "p1")
    assert told.content.startswith("Unknown outcome") and "never re-run" in told.content
    assert told.status == "error"

    records = read_records(session.transcript_path)
    started = [r for r in records if r["type"] == "event" and r["event"] == "tool_started"]
    answers = [r for r in records if r["type"] == "transcript_message" and r.get("tool_call_id") == "p1"]
    assert len(started) == 1 and len(answers) == 1 and answers[0]["content"].startswith("Unknown outcome")


def test_a_call_that_was_never_started_still_runs_after_resume(project, counter):
    """The guard is about started calls only: an approved call that never began runs normally."""
    settings = agent_settings(agent={"approval": {"probe": "ask"}})
    model = ScriptedChatModel([tool_call("probe", {"label": "deploy"}, id="p1"), "unused"])
    first = AgentSession.create(project, model=model, settings=settings, tools=counter.tools)
    assert first.run_turn("deploy it").status == "approval_required"
    first.close()

    model = ScriptedChatModel(["deployed"])
    with AgentSession.resume(first.session_id, project, model=model, settings=settings,
                             tools=counter.tools) as session:
        result = session.resume_approval("allow")
    assert result.executed_tool_call_ids == ["p1"] and counter.runs == ["deploy"]
    told = next(m for m in model.calls[0] if isinstance(m, ToolMessage) and m.tool_call_id == "p1")
    assert told.content == "probe deploy ran"
