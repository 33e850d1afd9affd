"""The agent wired to the engine's optional parts: session memory on resume, static-context
conflicts in the plan, end-of-turn memory extraction, and the session statistics."""

from __future__ import annotations

import re
from pathlib import Path

from agent_helpers import agent_settings

from mtagent.agent.scripted import ScriptedChatModel
from mtagent.agent.session import AgentSession
from mtagent.context.tokens import message_text
from mtagent.session.reader import read_records

_WATCHED = ("compact_boundary", "session_memory_update")


def _memory_settings():
    return agent_settings(context={"token_limit": 48_000, "auto_compact_threshold": 15_000},
                          microcompact={"size_trigger_fraction": 1.0}, session_memory={"enabled": True})


def _run_until(project: Path, last_two: list[str]) -> tuple[str, Path, str]:
    """Turns until the last compaction/notes records are ``last_two``; (session id, transcript, last ask).

    The notes and the compactions follow their own triggers, whose cadence moves with every token of
    the tool schemas; when the notes are wanted after a compaction and the next turns keep compacting
    in step with them, the notes are brought up to date once more right after that compaction (as the
    per-call hook would have on a later call)."""
    settings = _memory_settings()
    model = ScriptedChatModel([], policy=lambda sent: "noted: " + "the kernel plan goes on " * 40)
    with AgentSession.create(project, model=model, settings=settings) as session:
        memory = session.parts.opened.session_memory
        assert memory is not None
        for i in range(20):
            ask = f"step {i}: keep the GEMM kernel bit-exact. " + "details of the work " * 300
            session.run_turn(ask)
            assert memory.wait_idle(60)  # background notes settle: the order is the rules', not the scheduler's
            seen = [r["type"] for r in read_records(session.transcript_path) if r["type"] in _WATCHED]
            if seen.count("compact_boundary") >= 2 and seen[-1] == "compact_boundary" == last_two[0]:
                memory.update_session_memory(list(session.conversation.messages))
                seen = [r["type"] for r in read_records(session.transcript_path) if r["type"] in _WATCHED]
            if "compact_boundary" in seen and seen[-2:] == last_two:
                return session.session_id, session.transcript_path, f"step {i}:"
    raise AssertionError(f"the records never ended with {last_two}")


def test_resume_sends_session_memory_updated_after_the_last_boundary_with_the_recent_tail(project):
    sid, path, last_ask = _run_until(project, ["compact_boundary", "session_memory_update"])
    boundary = [r for r in read_records(path) if r["type"] == "compact_boundary"][-1]
    assert boundary["summary_source"] == "session_memory"
    notes = (path.parent / "artifacts" / sid / "session-memory" / "summary.md").read_text()
    model = ScriptedChatModel(["welcome back"])
    with AgentSession.resume(sid, project, model=model, settings=_memory_settings()) as again:
        again.run_turn("where were we?")
    sent = [message_text(m) for m in model.calls[0]]
    memory = [t for t in sent if t.startswith("<session_memory>")]
    assert len(memory) == 1 and notes.strip() in memory[0]
    assert any("<compact_boundary" in t or "conversation_history_summary" in t for t in sent)
    assert any(t.startswith(last_ask) for t in sent)
    assert sent[-1] == "where were we?"


def test_resume_right_after_a_session_memory_compaction_does_not_send_the_notes_twice(project):
    sid, path, last_ask = _run_until(project, ["session_memory_update", "compact_boundary"])
    notes = (path.parent / "artifacts" / sid / "session-memory" / "summary.md").read_text()
    model = ScriptedChatModel(["welcome back"])
    with AgentSession.resume(sid, project, model=model, settings=_memory_settings()) as again:
        again.run_turn("where were we?")
    sent = "\n".join(message_text(m) for m in model.calls[0])
    assert "<session_memory>" not in sent
    first_section = notes.strip().splitlines()[0]
    assert sent.count(first_section) == 1
    assert last_ask in sent


def test_a_memory_contradicting_a_project_rule_is_in_the_plan_and_in_context_explain(project):
    from rich.console import Console

    from mtagent import paths
    from mtagent.cli.repl_host import ReplHost
    from mtagent.cli.run_cmd import SessionOptions
    from mtagent.cli.slash import dispatch

    (project / "CONTEXT.md").write_text("# Rules\nNever edit files under tests/.\n")
    paths.global_context_path().parent.mkdir(parents=True, exist_ok=True)
    paths.global_context_path().write_text("# Global\n\n## Agent Memories\n\n- always edit tests when they fail\n")
    model = ScriptedChatModel(["ok"])
    console = Console(record=True, width=200, force_terminal=False)
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        session.run_turn("fix the failing test")
        plans = [r for r in read_records(session.transcript_path) if r["type"] == "context_plan"]
        host = ReplHost(console=console, options=SessionOptions(cwd=project), session=session)
        dispatch(host, "/context explain")
        host.session = None
    conflicts = plans[-1]["conflicts"]
    assert len(conflicts) == 1
    assert conflicts[0]["winner"].startswith("rule") and conflicts[0]["losers"]
    assert "always edit tests" not in "\n".join(message_text(m) for m in model.calls[0])
    out = console.export_text()
    assert "Conflicts" in out and conflicts[0]["winner"] in out


def _memory_file_facts(project):
    from mtagent.context.static import memory

    return memory.memory_file("project", project).active()


def test_auto_extract_writes_a_proposed_fact_to_project_memory_after_a_turn_without_tools(project):
    model = ScriptedChatModel(["Tests pass now.", "- Tests run with `make check`."])
    settings = agent_settings(memory={"auto_extract": True})
    with AgentSession.create(project, model=model, settings=settings) as session:
        result = session.run_turn("how do I run the tests? make check, right?")
        path = session.transcript_path
    assert result.reply == "Tests pass now."
    assert len(model.calls) == 2 and "Already remembered" in message_text(model.calls[1][-1])
    assert _memory_file_facts(project) == ["Tests run with `make check`."]
    events = [r for r in read_records(path) if r["type"] == "event" and r["event"] == "memory_extracted"]
    assert events and events[0]["data"]["added"] == ["Tests run with `make check`."]


def test_auto_extract_off_writes_nothing_and_makes_no_extra_model_call(project):
    model = ScriptedChatModel(["Tests pass now.", "- Tests run with `make check`."])
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        session.run_turn("how do I run the tests?")
    assert len(model.calls) == 1
    assert _memory_file_facts(project) == []


def test_a_failing_extraction_call_does_not_fail_the_turn(project):
    model = ScriptedChatModel(["Done.", RuntimeError("provider down")])
    settings = agent_settings(memory={"auto_extract": True})
    with AgentSession.create(project, model=model, settings=settings) as session:
        result = session.run_turn("hi")
        path = session.transcript_path
    assert result.status == "done" and result.reply == "Done."
    assert any(r["type"] == "event" and r["event"] == "memory_extract_failed" for r in read_records(path))


def test_session_stats_count_model_calls_and_context_stats_shows_them(project):
    from rich.console import Console

    from mtagent.agent.scripted import tool_call
    from mtagent.cli.repl_host import ReplHost
    from mtagent.cli.run_cmd import SessionOptions
    from mtagent.cli.slash import dispatch

    model = ScriptedChatModel([tool_call("ls", {"path": "."}), "listed", "second answer"])
    console = Console(record=True, width=200, force_terminal=False)
    with AgentSession.create(project, model=model, settings=agent_settings()) as session:
        session.run_turn("what is here?")
        session.run_turn("and now?")
        assert session.stats.model_calls == 3 == len(model.calls)
        host = ReplHost(console=console, options=SessionOptions(cwd=project), session=session)
        assert host.stats_counters()["model_calls"] == 3
        dispatch(host, "/context stats")
        host.session = None
    assert re.search(r"model calls\s+3\b", console.export_text())


def test_ctrl_c_while_a_tool_start_is_announced_records_the_call_as_interrupted(project):
    from langchain_core.messages import ToolMessage

    from mtagent.agent.scripted import tool_call
    from mtagent.events import EventBus, EventType

    bus = EventBus()
    pressed: list[str] = []

    def ctrl_c_once(event):
        if not pressed:
            pressed.append(event.data["tool_call_id"])
            raise KeyboardInterrupt

    bus.subscribe(ctrl_c_once, EventType.TOOL_STARTED)
    model = ScriptedChatModel([tool_call("ls", {"path": "."}, id="c1"), "after the stop"])
    with AgentSession.create(project, model=model, settings=agent_settings(), events=bus) as session:
        assert session.run_turn("list").status == "interrupted"
        result = [m for m in session.history if isinstance(m, ToolMessage)]
        assert len(result) == 1 and "Ctrl-C" in result[0].content
        assert session.run_turn("go on").reply == "after the stop"
