"""A general child's "ask" reaches the user exactly like the parent's own (issue 17: the parent's approvals)."""

from __future__ import annotations

import json

import pytest
from subagent_helpers import open_session, report_json, subagent_records, task

from mtagent.agent.scripted import tool_call

COMMAND = "echo ran >> ran.txt"


def _asking_child():
    return [tool_call("shell", {"command": COMMAND}, id="child_shell"), report_json("tried the shell")]


def _report(result):
    return json.loads(next(m for m in result.messages if getattr(m, "name", None) == "task").content)


def _child_result(model):
    return next(m for m in model.calls[-1] if getattr(m, "tool_call_id", None) == "child_shell")


def test_the_users_yes_at_the_prompt_runs_the_childs_shell_call_once(code):
    asked = []

    def approver(requests):
        asked.append(list(requests))
        return {r.tool_call_id: {"decision": "allow"} for r in requests}

    session, children = open_session(code, [task(agent="general"), "done"], [_asking_child()], approval="ask")
    with session:
        result = session.run_turn("go", approver=approver)
    assert result.status == "done"
    [[request]] = asked  # the parent's task call needs no yes; the child's shell call does
    assert request.tool == "shell" and request.args == {"command": COMMAND}
    assert request.rule.startswith("subagent agent-") and "(general)" in request.rule
    assert (code / "ran.txt").read_text() == "ran\n"
    assert _child_result(children[0]).status == "success"
    assert _report(result).get("open_questions", []) == []


def test_the_users_no_is_a_denial_the_report_names(code):
    def approver(requests):
        return {r.tool_call_id: {"decision": "deny", "reason": "not on my machine"} for r in requests}

    session, children = open_session(code, [task(agent="general"), "done"], [_asking_child()], approval="ask")
    with session:
        result = session.run_turn("go", approver=approver)
    assert not (code / "ran.txt").exists()
    assert "not on my machine" in _child_result(children[0]).content
    [question] = _report(result)["open_questions"]
    assert question.startswith("denied: shell(") and "not on my machine" in question


@pytest.mark.parametrize("answer, runs", [("allow", True), ("deny", False)])
def test_without_an_approver_the_childs_ask_pauses_the_parents_turn_like_its_own(code, answer, runs):
    session, children = open_session(code, [task(agent="general"), "done"], [_asking_child()], approval="ask")
    with session:
        paused = session.run_turn("go")
        assert paused.status == "approval_required"
        [request] = paused.approvals
        assert (request.tool_call_id, request.tool) == ("child_shell", "shell")
        assert request.rule.startswith("subagent agent-")
        assert session.pending_approval == paused.approvals
        result = session.resume_approval({"child_shell": answer})
    assert result.status == "done"
    assert (code / "ran.txt").read_text() == "ran\n" if runs else not (code / "ran.txt").exists()
    assert len(children) == 1 and len(children[0].calls) == 2  # the child was not restarted
    report = json.loads(next(m for m in session.history if getattr(m, "name", None) == "task").content)
    assert report["summary"] == "tried the shell"
    assert bool(report.get("open_questions")) is not runs


def test_approval_deny_denies_the_childs_call_without_asking(code):
    def approver(requests):
        raise AssertionError("--approval deny asks no one")

    session, children = open_session(code, [task(agent="general"), "done"], [_asking_child()], approval="never")
    with session:
        result = session.run_turn("go", approver=approver)
    assert result.status == "done" and not (code / "ran.txt").exists()
    assert "denied" in _child_result(children[0]).content


def test_always_for_a_childs_call_is_remembered_by_the_parent(code):
    def approver(requests):
        return {r.tool_call_id: {"decision": "allow", "remember": True} for r in requests}

    session, _ = open_session(code, [task(agent="general"), "done"], [_asking_child()], approval="ask")
    with session:
        session.run_turn("go", approver=approver)
        assert session.policy.decide("shell", {"command": COMMAND}).decision == "allow"
        assert session.policy.decide("shell", {"command": "echo other"}).decision == "ask"


def test_the_prompt_names_the_subagent_that_asks(code):
    from rich.console import Console

    from mtagent.cli.turn_display import make_approver

    questions = []

    def read(question):
        questions.append(question)
        return "n"

    approver = make_approver(Console(record=True), read)
    session, _ = open_session(code, [task(agent="general"), "done"], [_asking_child()], approval="ask")
    with session:
        session.run_turn("go", approver=approver)
    [question] = questions
    assert question.startswith("subagent agent-") and "(general) asks: Run shell command" in question


def test_a_new_message_instead_of_an_answer_stops_the_asking_child_and_asks_nothing_stale(code):
    second = [tool_call("shell", {"command": "echo second >> ran.txt"}, id="second_shell"), report_json("second")]
    session, children = open_session(code, [task(agent="general"), task(agent="general"), "done"],
                                     [_asking_child(), second], approval="ask")
    with session:
        assert session.run_turn("go").status == "approval_required"
        paused = session.run_turn("never mind, do something else")  # the user moved on
        assert paused.status == "approval_required"
        assert [r.tool_call_id for r in paused.approvals] == ["second_shell"]  # only the new question
        result = session.resume_approval({"second_shell": "allow"})
        assert result.status == "done"
        statuses = [r["status"] for r in subagent_records(session.transcript_path)]
    assert statuses.count("interrupted") == 1 and statuses.count("finished") == 1
    assert (code / "ran.txt").read_text() == "second\n"  # the abandoned child's call never ran
    assert len(children[0].calls) == 1  # stopped before its next model call


def test_a_grandchilds_question_reaches_the_user_through_its_parent(code):
    from subagent_helpers import settings

    asked = []

    def approver(requests):
        asked.extend(requests)
        return {r.tool_call_id: "allow" for r in requests}

    def children(profile, request):
        if request.prompt == "middle":
            return [task("leaf", agent="general", id="to_leaf"), report_json("middle done")]
        return _asking_child()

    session, made = open_session(code, [task("middle", agent="general"), "done"], children,
                                 cfg=settings(max_depth=2), approval="ask")
    with session:
        result = session.run_turn("go", approver=approver)
    assert result.status == "done" and len(made) == 2
    [request] = asked
    assert request.rule.count("subagent agent-") == 2  # named by both levels
    assert (code / "ran.txt").read_text() == "ran\n"
