"""The agent loop with the scripted model: transcript, approvals, resume, Ctrl-C, limits."""

from __future__ import annotations


import pytest
from langchain_core.messages import AIMessage, ToolMessage

from agent_helpers import agent_settings
from mtagent.agent.scripted import ScriptedChatModel, tool_call, tool_calls
from mtagent.agent.session import AgentSession
from mtagent.agent.storage import session_ids
from mtagent.config import load_settings
from mtagent.context.boundary import is_summary_message
from mtagent.errors import ModelError
from mtagent.session.reader import read_records


def _messages(path):
    return [r for r in read_records(path) if r["type"] == "transcript_message"]


def test_a_turn_runs_tools_and_records_every_message_in_order(project):
    model = ScriptedChatModel([tool_call("ls", {"path": "."}, id="c1"), "There is a src folder."])
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        result = session.run_turn("what is here?")
        path = session.transcript_path
    assert result.status == "done"
    assert result.reply == "There is a src folder."
    assert (result.model_calls, result.tool_executions) == (2, 1)
    roles = [(r["role"], r.get("name")) for r in _messages(path)]
    assert roles == [("user", None), ("assistant", None), ("tool", "ls"), ("assistant", None)]
    tool = _messages(path)[2]
    assert tool["tool_call_id"] == "c1" and "src/" in tool["content"]
    assert any(r["type"] == "context_plan" for r in read_records(path))


def test_the_model_gets_the_system_prompt_session_context_and_bound_tools(project):
    model = ScriptedChatModel(["hello"])
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        session.run_turn("hi")
    sent = model.calls[0]
    assert sent[0].type == "system" and "mtagent" in sent[0].content
    assert "<session_context>" in sent[1].content
    assert sent[-1].content == "hi"
    assert {"read_file", "shell", "edit_file", "grep"} <= set(model.bound_tool_names)


def test_a_denied_shell_command_is_not_run_and_the_model_is_told_why(project):
    victim = project / "README.md"
    model = ScriptedChatModel([tool_call("shell", {"command": f"rm -f {victim}"}, id="rm1"), "ok, I will not."])
    settings = agent_settings(agent={"approval": {"shell:rm *": "deny"}})
    with AgentSession.create(project, model=model, settings=settings) as session:
        result = session.run_turn("clean up")
    assert result.status == "done" and result.tool_executions == 0
    assert victim.exists()
    told = model.calls[1][-1]
    assert isinstance(told, ToolMessage) and told.status == "error" and told.tool_call_id == "rm1"
    assert "denied" in told.content and "shell:rm *" in told.content


def test_asked_calls_pause_the_turn_and_resume_in_a_new_process_without_rerunning_tools(project, counter):
    settings = agent_settings(agent={"approval": {"probe": "ask"}})
    steps = [
        tool_call("ls", {"path": "."}, id="a1"),
        tool_calls(("grep", {"pattern": "def"}), ("probe", {"label": "first"})),
        "all done",
    ]
    session = AgentSession.create(project, model=ScriptedChatModel(steps[:2]), settings=settings,
                                  tools=counter.tools)
    result = session.run_turn("look around")
    assert result.status == "approval_required"
    assert [(r.tool, r.args) for r in result.approvals] == [("probe", {"label": "first"})]
    assert counter.runs == []
    assert result.tool_executions == 1  # the ls, before the pause
    sid = session.session_id
    session.close()

    model = ScriptedChatModel(steps[2:])
    with AgentSession.resume(sid, project, model=model, settings=settings, tools=counter.tools) as resumed:
        assert [r.tool for r in resumed.pending_approval] == ["probe"]
        done = resumed.resume_approval("allow")
        path = resumed.transcript_path
    assert done.status == "done" and done.reply == "all done"
    assert counter.runs == ["first"]
    assert done.tool_executions == 2  # grep and probe; the ls is never run again
    results = [r for r in _messages(path) if r["role"] == "tool"]
    assert len(results) == len({r["tool_call_id"] for r in results}) == 3


def test_an_approver_callback_answers_inline_and_a_no_is_reported_to_the_model(project, counter):
    settings = agent_settings(agent={"approval": {"probe": "ask"}})
    model = ScriptedChatModel([tool_call("probe", {"label": "x"}, id="p1"), "understood"])
    asked = []

    def approver(requests):
        asked.extend(requests)
        return {requests[0].tool_call_id: {"decision": "deny", "reason": "not today"}}

    with AgentSession.create(project, model=model, settings=settings, tools=counter.tools) as session:
        result = session.run_turn("probe it", approver=approver)
    assert result.status == "done" and counter.runs == [] and len(asked) == 1
    told = model.calls[1][-1]
    assert "not today" in told.content and told.status == "error"


def test_remembered_approval_allows_the_same_call_later_without_asking(project, counter):
    settings = agent_settings(agent={"approval": {"probe": "ask"}})
    model = ScriptedChatModel([tool_call("probe", {"label": "1"}), "a", tool_call("probe", {"label": "2"}), "b"])
    asked = []

    def approver(requests):
        asked.append(requests)
        return {r.tool_call_id: {"decision": "allow", "remember": True} for r in requests}

    with AgentSession.create(project, model=model, settings=settings, tools=counter.tools) as session:
        session.run_turn("one", approver=approver)
        session.run_turn("two", approver=approver)
    assert counter.runs == ["1", "2"] and len(asked) == 1
    started = [r["data"] for r in read_records(session.transcript_path)
               if r["type"] == "event" and r["event"] == "tool_started"]
    assert [d["approved_by"] for d in started] == ["allowed by the user for this session"] * 2


def test_a_new_message_while_approval_waits_answers_the_waiting_calls(project, counter):
    settings = agent_settings(agent={"approval": {"probe": "ask"}})
    model = ScriptedChatModel([tool_call("probe", {"label": "x"}, id="w1"), "moving on"])
    with AgentSession.create(project, model=model, settings=settings, tools=counter.tools) as session:
        assert session.run_turn("probe").status == "approval_required"
        result = session.run_turn("never mind, just say hi")
    assert result.status == "done" and counter.runs == []
    sent = model.calls[1]
    answer = next(m for m in sent if isinstance(m, ToolMessage) and m.tool_call_id == "w1")
    assert "new message" in answer.content


def test_ctrl_c_during_a_tool_records_it_and_leaves_the_session_usable(project):
    from langchain_core.tools import StructuredTool

    def hang(seconds: int) -> str:
        """A tool the user interrupts."""
        raise KeyboardInterrupt

    def tools(context):
        from mtagent.tools import default_tools
        return [*default_tools(context.workspace.root, context=context),
                StructuredTool.from_function(hang, name="hang")]

    model = ScriptedChatModel([tool_calls(("hang", {"seconds": 5}), ("ls", {"path": "."})), "after the stop"])
    with AgentSession.create(project, model=model, settings=agent_settings(), tools=tools) as session:
        first = session.run_turn("wait")
        assert first.status == "interrupted"
        results = [m for m in session.history if isinstance(m, ToolMessage)]
        assert [m.status for m in results] == ["error", "error"]
        assert "Ctrl-C" in results[0].content and "Not run" in results[1].content
        second = session.run_turn("go on")
        path = session.transcript_path
    assert second.status == "done" and second.reply == "after the stop"
    assert any(r["type"] == "event" and r["event"] == "turn_interrupted" for r in read_records(path))


def test_ctrl_c_during_the_model_call_keeps_the_history_valid(project):
    model = ScriptedChatModel([KeyboardInterrupt(), "second try"])
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        assert session.run_turn("first").status == "interrupted"
        assert session.run_turn("again").reply == "second try"
        assert [m.type for m in session.history] == ["human", "human", "ai"]


def test_a_malformed_tool_call_is_answered_with_an_error_and_the_loop_continues(project):
    bad = AIMessage(content="", invalid_tool_calls=[{"name": "read_file", "args": "{oops", "id": "bad1",
                                                      "error": "not JSON", "type": "invalid_tool_call"}])
    model = ScriptedChatModel([bad, "fixed"])
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        result = session.run_turn("read")
    assert result.status == "done" and result.reply == "fixed"
    sent = model.calls[1]
    assert [c["id"] for c in sent[-2].tool_calls] == ["bad1"]
    assert sent[-1].tool_call_id == "bad1" and "not valid JSON" in sent[-1].content


def test_max_steps_stops_a_runaway_turn(project):
    model = ScriptedChatModel(policy=lambda _m: tool_call("ls", {"path": "."}))
    with AgentSession.create(project, model=model, settings=agent_settings(agent={"max_steps": 3})) as session:
        result = session.run_turn("loop forever")
    assert result.status == "max_steps" and result.model_calls == 3


def test_auth_errors_surface_as_one_model_error(project):
    class Unauthorized(Exception):
        status_code = 401

    model = ScriptedChatModel([Unauthorized("bad key")])
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        with pytest.raises(ModelError, match="rejected the credentials"):
            session.run_turn("hi")


def test_continue_resumes_the_latest_session_with_its_history(project):
    with AgentSession.create(project, model=ScriptedChatModel(["one"]), settings=agent_settings()) as first:
        first.run_turn("remember the number 42")
        sid = first.session_id
    assert session_ids(load_settings(project), project)[-1] == sid
    model = ScriptedChatModel(["two"])
    with AgentSession.resume(None, project, model=model, settings=agent_settings()) as again:
        again.run_turn("what number?")
    assert any("42" in str(m.content) for m in model.calls[0])


def test_checkpoints_live_in_the_session_artifact_folder(project):
    with AgentSession.create(project, model=ScriptedChatModel(["x"]), settings=agent_settings()) as session:
        session.run_turn("hi")
        assert (session.artifacts.root / "checkpoints.sqlite").is_file()


def test_manual_compact_records_a_boundary_and_the_next_call_sees_the_summary(project):
    steps = [tool_call("read_file", {"file_path": "src/app.py"}), "read it"] + [f"answer {i}" for i in range(6)]
    model = ScriptedChatModel(steps + ["after compact"])
    settings = agent_settings(context={"compression_preserve_min_tokens": 10, "compression_preserve_max_tokens": 60})
    with AgentSession.create(project, model=model, settings=settings) as session:
        session.run_turn("read the app")
        for i in range(6):
            session.run_turn(f"question {i}: " + "some long details about the task " * 120)
        result = session.compact("keep the file names")
        assert result.pre_tokens > result.post_tokens
        assert session.last_plan is not None and session.threshold > 0
        session.run_turn("continue")
        path = session.transcript_path
    assert [r["trigger"] for r in read_records(path) if r["type"] == "compact_boundary"] == ["manual"]
    assert any("<conversation_history_summary>" in str(m.content) for m in model.calls[-1])


def test_after_a_long_pause_a_resumed_session_clears_old_tool_results(project):
    import time as _time

    reads = [tool_call("read_file", {"file_path": "src/app.py", "offset": 1, "limit": n}) for n in range(1, 8)]
    model = ScriptedChatModel([*reads, "read them all"])
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        session.runtime.clock = lambda: _time.time() - 2 * 3600  # the last reply was two hours ago
        session.run_turn("read the app seven times")
        sid = session.session_id
    later = ScriptedChatModel(["welcome back"])
    with AgentSession.resume(sid, project, model=later, settings=agent_settings()) as resumed:
        resumed.run_turn("I am back")
        path = resumed.transcript_path
    cleared = [r for r in read_records(path) if r["type"] == "microcompact"]
    assert cleared and cleared[0]["trigger"] == "time"
    sent_results = [m for m in later.calls[0] if isinstance(m, ToolMessage)]
    assert sum("cleared" in m.content for m in sent_results) == 2  # seven results, the newest five kept


def test_compact_from_a_message_keeps_that_round_and_what_follows(project):
    model = ScriptedChatModel([f"answer {i}" for i in range(5)] + ["after"])
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        for i in range(5):
            session.run_turn(f"question {i}: " + "long context about the work " * 80)
        pivot = [m for m in session.history if m.type == "human"][3]
        result = session.compact(from_message_id=pivot.id)
        assert result.trigger == "manual"
        kept = session.history
        assert kept[0].content.startswith("<compact_boundary") and pivot.id in [m.id for m in kept]
        assert "question 0" not in " ".join(str(m.content) for m in kept[1:])


def test_resume_right_after_a_compaction_does_not_compact_again(project):
    model = ScriptedChatModel([f"answer {i}" for i in range(5)])
    settings = agent_settings(context={"compression_preserve_min_tokens": 10, "compression_preserve_max_tokens": 900})
    with AgentSession.create(project, model=model, settings=settings) as session:
        for i in range(5):
            session.run_turn(f"question {i}: " + "long context about the work " * 150)
        session.compact()
        sid, path = session.session_id, session.transcript_path
    with AgentSession.resume(sid, project, model=ScriptedChatModel(["hi again"]), settings=settings) as again:
        assert not any(m.usage_metadata for m in again.history if isinstance(m, AIMessage))
        again.run_turn("still there?")
    records = list(read_records(path))
    boundary = next(r for r in records if r["type"] == "compact_boundary")
    first_plan_after = next(r for r in records[records.index(boundary):] if r["type"] == "context_plan")
    assert first_plan_after["tokens"] < boundary["post_tokens"] + 200 < boundary["pre_tokens"]


def test_a_second_context_length_error_after_the_reactive_compact_is_one_clear_error(project):
    class TooLong(Exception):
        status_code = 400

    too_long = "This model's maximum context length is 10 tokens"
    model = ScriptedChatModel([TooLong(too_long), TooLong(too_long)])
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        with pytest.raises(ModelError, match="too long even after compacting"):
            session.run_turn("hi")
    assert len(model.calls) == 2


def test_a_context_length_error_compacts_reactively_and_retries_once(project):
    class TooLong(Exception):
        status_code = 400

    steps = [f"answer {i}" for i in range(4)] + [TooLong("context_length_exceeded"), "after the compact"]
    model = ScriptedChatModel(steps)
    settings = agent_settings(context={"compression_preserve_min_tokens": 10, "compression_preserve_max_tokens": 300})
    with AgentSession.create(project, model=model, settings=settings) as session:
        for i in range(4):
            session.run_turn(f"part {i}: " + "notes about the task " * 100)
        result = session.run_turn("and now?")
        path = session.transcript_path
        assert is_summary_message(session.history[0])  # the loop keeps the history it compacted
    assert result.reply == "after the compact" and result.model_calls == 1
    assert [r["trigger"] for r in read_records(path) if r["type"] == "compact_boundary"] == ["reactive"]
    assert len(model.calls[-1]) < len(model.calls[-2])
