"""A child starts from a narrow brief: never the parent's history, only the context items named."""

from __future__ import annotations

from subagent_helpers import open_session, report_json, task

from mtagent.context.tokens import message_text

SECRET_TURN = "the parent's private history: token-XYZZY"


def _child_view(code, **task_args):
    session, children = open_session(code, [task(**task_args), "done"], [[report_json()]])
    with session:
        session.run_turn(SECRET_TURN)
    return [message_text(m) for m in children[0].calls[0]]


def test_the_child_never_sees_the_parents_history(code):
    sent = "\n".join(_child_view(code, prompt="where is login?"))
    assert "XYZZY" not in sent and "where is login?" in sent and '<task description="find login">' in sent


def test_named_files_are_handed_over_and_outside_paths_are_refused(code, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("SECRET-OUTSIDE")
    sent = "\n".join(_child_view(code, files=["auth.py", str(outside), "../outside.txt", "nope.py"]))
    assert '<file path="auth.py">' in sent and "FACT: login redirects" in sent
    assert "SECRET-OUTSIDE" not in sent and "outside the workspace" in sent and "nope.py" in sent


def test_rules_come_only_when_selected(code):
    (code / "CONTEXT.md").write_text("PROJECT-RULE: always use tabs\n")
    assert "PROJECT-RULE" not in "\n".join(_child_view(code))
    assert "PROJECT-RULE" in "\n".join(_child_view(code, context=["rules"]))


def test_task_state_is_the_parents_notes_or_said_missing(code):
    sent = "\n".join(_child_view(code, context=["task_state", "everything"]))
    assert "task_state: the parent has no session notes yet" in sent
    assert "context item 'everything' is unknown" in sent


def test_a_finished_childs_facts_reach_the_parents_session_notes(code):
    report = report_json("login is in auth.py", findings=[{"claim": "login redirects to /home",
                                                            "evidence": ["auth.py:2"]}])
    session, _ = open_session(code, [task(), "done"], [[report]])
    with session:
        session.run_turn("go")
        notes = session.parts.opened.session_memory.load()
    assert "login redirects to /home (auth.py:2)" in notes and "[subagent agent-" in notes
