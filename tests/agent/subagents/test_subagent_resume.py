"""Crash and resume with finished and unfinished children; Ctrl-C stops running children."""

from __future__ import annotations

import _thread
import json

import pytest
from interrupts import wait_for
from subagent_helpers import open_session, report_json, subagent_records, task

from mtagent.agent.scripted import ScriptedChatModel, tool_call, tool_calls
from mtagent.agent.session import AgentSession
from mtagent.session.reader import read_records


class SimulatedCrash(BaseException):
    """Stands for the process dying: nothing in the session catches it."""


def _two_tasks():
    message = tool_calls(("task", {"description": "slow part", "prompt": "b"}),
                         ("task", {"description": "quick part", "prompt": "a"}))
    message.tool_calls[0]["id"], message.tool_calls[1]["id"] = "call_b", "call_a"
    return message


def test_resume_reuses_a_finished_childs_report_and_reports_an_unfinished_one_as_interrupted(code):
    def children(profile, request):
        if request.tool_call_id == "call_a":
            return [report_json("A found login in auth.py")]

        def crash(messages):
            wait_for(lambda: any(r["status"] == "finished" for r in subagent_records(session.transcript_path)),
                     "child A to finish")
            raise SimulatedCrash()

        return [crash]

    session, made = open_session(code, [_two_tasks(), "unused"], children)
    with pytest.raises(SimulatedCrash):
        session.run_turn("split the work")
    session.close()
    sid, transcript = session.session_id, session.transcript_path
    assert len(made) == 2

    def no_recompute(profile, request):
        raise AssertionError("a finished child must not run again")

    resumed_model = ScriptedChatModel(["resumed"])
    with AgentSession.resume(sid, code, model=resumed_model, approval="auto") as resumed:
        resumed.subagents.model_factory = no_recompute
        results = {m.tool_call_id: m for m in resumed.history if getattr(m, "tool_call_id", None)}
        assert json.loads(results["call_a"].content)["summary"] == "A found login in auth.py"
        assert results["call_b"].content.startswith("Interrupted: subagent agent-")
        assert resumed.run_turn("go on").reply == "resumed"
    statuses = {(r["tool_call_id"], r["status"]) for r in subagent_records(transcript)}
    assert {("call_a", "finished"), ("call_a", "reused"), ("call_b", "interrupted")} <= statuses
    assert ("call_b", "finished") not in statuses
    written = [r for r in read_records(transcript) if r["type"] == "transcript_message" and r["role"] == "tool"]
    assert {r["tool_call_id"] for r in written} == {"call_a", "call_b"}  # the file agrees with the history


def _parent_cancelled(session: AgentSession) -> bool:
    """The parent caught the Ctrl-C and told its children to stop."""
    return session.subagents._stopped()


def test_ctrl_c_stops_running_children_and_leaves_the_session_usable(code, sigint_delivered):
    def interrupting(messages):
        _thread.interrupt_main()  # the user presses Ctrl-C while the child works
        wait_for(lambda: _parent_cancelled(session), "the parent to cancel its children")
        return tool_call("grep", {"pattern": "login"})

    session, made = open_session(code, [task(), "after the interrupt"], [[interrupting, report_json("never")]])
    with session:
        result = session.run_turn("explore")
        assert result.status == "interrupted"
        records = subagent_records(session.transcript_path)
        assert records[-1]["status"] == "interrupted"
        assert len(made[0].calls) == 1  # stopped before its next model call
        child_records = list(read_records(session.transcript_path.parent / records[-1]["path"]))
        assert any(r.get("event") == "turn_interrupted" for r in child_records)
        assert session.run_turn("continue").reply == "after the interrupt"


def test_ctrl_c_answers_a_sibling_that_already_finished_with_its_report(code, sigint_delivered):
    def children(profile, request):
        if request.tool_call_id == "call_a":
            return [report_json("A finished before Ctrl-C")]

        def interrupt_after_a(messages):
            wait_for(lambda: any(r["status"] == "finished" for r in subagent_records(session.transcript_path)),
                     "child A to finish")
            _thread.interrupt_main()  # the user presses Ctrl-C while B still works
            wait_for(lambda: _parent_cancelled(session), "the parent to cancel its children")
            return tool_call("grep", {"pattern": "login"})

        return [interrupt_after_a, report_json("never")]

    session, made = open_session(code, [_two_tasks(), "after the interrupt"], children)
    with session:
        result = session.run_turn("split the work")
        assert result.status == "interrupted"
        results = {m.tool_call_id: m for m in session.history if getattr(m, "tool_call_id", None)}
        assert json.loads(results["call_a"].content)["summary"] == "A finished before Ctrl-C"
        assert results["call_a"].status == "success"
        assert results["call_b"].content.startswith("Interrupted: subagent agent-")
        written = {r["tool_call_id"]: r for r in read_records(session.transcript_path)
                   if r["type"] == "transcript_message" and r["role"] == "tool"}
        assert json.loads(written["call_a"]["content"])["summary"] == "A finished before Ctrl-C"
        assert session.run_turn("continue").reply == "after the interrupt"
