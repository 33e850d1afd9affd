"""Each child has its own tools and approvals: explore/review are read-only, general follows the parent."""

from __future__ import annotations

import json

from subagent_helpers import open_session, report_json, settings, task

from mtagent.agent.scripted import tool_call
from mtagent.config import Settings


def _tool_results(model):
    last = model.calls[-1]
    return {m.tool_call_id: m for m in last if getattr(m, "tool_call_id", None)}


def test_a_review_child_cannot_write_edit_or_run_the_shell(code):
    before = (code / "auth.py").read_text()
    attempts = [
        tool_call("write_file", {"file_path": "pwned.txt", "content": "x"}, id="w"),
        tool_call("edit_file", {"file_path": "auth.py", "old_string": "login", "new_string": "pwn"}, id="e"),
        tool_call("shell", {"command": "touch shell_was_here"}, id="s"),
        report_json("reviewed"),
    ]
    session, children = open_session(code, [task(agent="review"), "done"], [attempts], approval="auto")
    with session:
        session.run_turn("review auth.py")
    child = children[0]
    assert set(child.bound_tool_names) <= {"read_file", "grep", "glob", "ls", "read_tool_result"}
    results = _tool_results(child)
    assert all(results[i].status == "error" and "no tool named" in results[i].content for i in "wes")
    assert not (code / "pwned.txt").exists() and not (code / "shell_was_here").exists()
    assert (code / "auth.py").read_text() == before


def test_an_explore_child_has_no_task_tool_at_the_default_depth(code):
    session, children = open_session(code, [task(), "done"], [[task(id="nested"), report_json()]])
    with session:
        session.run_turn("go")
    assert "task" not in children[0].bound_tool_names
    assert "no tool named 'task'" in _tool_results(children[0])["nested"].content


def test_a_general_child_follows_the_parents_deny_rules(code):
    cfg = Settings.model_validate({"agent": {"approval": {"write_file": "deny"}}})
    steps = [tool_call("write_file", {"file_path": "new.txt", "content": "x"}, id="w"), report_json("tried")]
    session, children = open_session(code, [task(agent="general"), "done"], [steps], cfg=cfg, approval="auto")
    with session:
        session.run_turn("go")
    assert "denied" in _tool_results(children[0])["w"].content and not (code / "new.txt").exists()


def test_a_general_child_may_write_when_the_parent_may(code):
    steps = [tool_call("write_file", {"file_path": "new.txt", "content": "hello\n"}, id="w"), report_json("wrote")]
    session, _ = open_session(code, [task(agent="general"), "done"], [steps], approval="auto")
    with session:
        result = session.run_turn("go")
    assert (code / "new.txt").read_text() == "hello\n"
    assert json.loads(result.messages[1].content)["files_changed"] == ["new.txt"]


def test_an_unknown_profile_is_refused_with_the_choices(code):
    session, _ = open_session(code, [task(agent="root"), "done"], [])
    with session:
        result = session.run_turn("go")
    assert result.messages[1].status == "error"
    assert "no agent profile 'root'" in result.messages[1].content and "explore" in result.messages[1].content


def test_disabled_subagents_offer_no_task_tool(code):
    session, _ = open_session(code, ["hi"], [], cfg=settings(enabled=False))
    with session:
        assert "task" not in session.tools


def test_a_malformed_task_call_is_an_error_result_and_starts_nothing(code):
    bad = [tool_call("task", {"description": "x" * 500, "prompt": "p"}, id="long"),
           tool_call("task", {"description": "no prompt"}, id="none"),
           tool_call("task", {"description": "d", "prompt": "p", "files": "auth.py"}, id="shape")]
    session, made = open_session(code, [*bad, "done"], [])
    with session:
        result = session.run_turn("go")
    results = {m.tool_call_id: m for m in result.messages if getattr(m, "tool_call_id", None)}
    assert all(results[i].status == "error" for i in ("long", "none", "shape")) and made == []


def test_a_general_child_decides_shell_calls_as_the_parent_does_sandbox_and_always_included() -> None:
    from mtagent.agent.approval import ApprovalPolicy
    from mtagent.agent.subagents.child import child_policy
    from mtagent.agent.subagents.profiles import BUILTIN_PROFILES

    general = BUILTIN_PROFILES["general"]
    sandboxed = ApprovalPolicy.from_rules({}, "ask", sandboxed=True)
    child = child_policy(sandboxed, general)
    assert child.decide("shell", {"command": "echo in the sandbox"}).decision == "allow"
    assert child.decide("shell", {"command": "curl x", "needs": ["network:x"]}).decision == "ask"

    parent = ApprovalPolicy.from_rules({}, "ask")
    parent.remember("shell", {"command": "make test"})  # the user's "always", said before the child started
    child = child_policy(parent, general)
    assert child.decide("shell", {"command": "make test"}).decision == "allow"
    assert child.decide("shell", {"command": "make other"}).decision == "ask"
