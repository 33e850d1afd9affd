"""MTContextMiddleware's parts: microcompact stays on the request, summarizer model, session memory,
events, async hooks, and the mtagent CLI / replay reading a LangChain thread's transcript."""

from __future__ import annotations

import asyncio

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from lc_harness import conversation, records_of, request_tokens, small_window_settings, tool_results
from typer.testing import CliRunner

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call, tool_calls
from mtagent.cli.app import app
from mtagent.context.boundary import is_summary_message
from mtagent.context.invariants import validate_view
from mtagent.context.compaction.microcompact import CLEARED_PLACEHOLDER
from mtagent.events import EventBus, EventType
from mtagent.integrations.langchain import MTContextMiddleware
from mtagent.replay.formats import detect_format, load_trajectory


def script(steps: int, final: str = "done") -> list:
    calls = [tool_call("shell" if i % 2 else "grep", {"command": f"c{i}"} if i % 2 else {"pattern": f"p{i}"},
                       id=f"call_{i:03d}") for i in range(steps)]
    return [*calls, reply(final)]


def run(build_agent, model, middleware, thread, text="go"):
    agent = build_agent(model, [middleware], InMemorySaver())
    return agent.invoke({"messages": [HumanMessage(text)]},
                        {"configurable": {"thread_id": thread}, "recursion_limit": 200})


def test_microcompact_clears_results_on_the_request_only_and_records_it(project, build_agent):
    settings = small_window_settings(size_microcompact=True)
    model = ScriptedChatModel(script(16))
    middleware = MTContextMiddleware(settings=settings, project_root=project)
    out = run(build_agent, model, middleware, "micro")
    middleware.close()

    cleared_in_requests = {m.id for sent in model.calls for m in tool_results(sent) if m.content.startswith(CLEARED_PLACEHOLDER)}
    assert cleared_in_requests
    state_results = {m.id: m for m in tool_results(out["messages"])}
    assert all(not state_results[i].content.startswith(CLEARED_PLACEHOLDER) for i in cleared_in_requests if i in state_results)
    recorded = {i for r in records_of(project, "micro") if r["type"] == "microcompact" for i in r["cleared_ids"]}
    assert recorded == cleared_in_requests
    assert not any(r["type"] == "compact_boundary" for r in records_of(project, "micro"))


def test_separate_summarizer_model_writes_the_hand_off(project, build_agent):
    summarizer = ScriptedChatModel(policy=lambda _m: reply(
        "## Goal\nfind the failing case\n## Next step\nrun the tests again"))
    model = ScriptedChatModel(script(24))
    middleware = MTContextMiddleware(settings=small_window_settings(), project_root=project,
                                     summarizer_model=summarizer)
    run(build_agent, model, middleware, "llm-summary")
    middleware.close()

    boundaries = [r for r in records_of(project, "llm-summary") if r["type"] == "compact_boundary"]
    assert boundaries and {b["summary_source"] for b in boundaries} == {"llm"}
    assert "find the failing case" in boundaries[0]["summary"]
    assert len(summarizer.calls) == len(boundaries)
    assert isinstance(summarizer.calls[0][0], SystemMessage)
    assert "<transcript>" in summarizer.calls[0][-1].content
    assert len(model.calls) == 25  # the agent's own model never wrote a summary


def test_session_memory_compacts_without_a_model_call_when_enabled(project, build_agent):
    settings = small_window_settings()
    settings.session_memory.enabled = True
    settings.session_memory.init_tokens = 3_000
    settings.session_memory.update_min_tokens = 1_500
    settings.session_memory.update_min_tool_calls = 1
    settings.session_memory.min_text_messages = 1
    model = ScriptedChatModel(script(30))
    middleware = MTContextMiddleware(settings=settings, project_root=project)
    run(build_agent, model, middleware, "memory")
    session = middleware.session_for_thread("memory")
    assert session is not None
    notes = session.artifacts.session_memory_path
    middleware.close()

    recs = records_of(project, "memory")
    assert any(r["type"] == "session_memory_update" for r in recs)
    assert notes.is_file() and notes.read_text().strip()
    sources = [r["summary_source"] for r in recs if r["type"] == "compact_boundary"]
    assert "session_memory" in sources
    for sent in model.calls:
        validate_view(sent)
        assert request_tokens(sent) <= settings.context.token_limit


def test_events_reach_the_bus_and_the_transcript(project, build_agent):
    bus = EventBus()
    seen: list[EventType] = []
    bus.subscribe(lambda event: seen.append(event.type))
    model = ScriptedChatModel(script(12))
    middleware = MTContextMiddleware(settings=small_window_settings(), project_root=project, events=bus)
    run(build_agent, model, middleware, "events")
    middleware.close()

    for kind in (EventType.TOOL_STARTED, EventType.TOOL_FINISHED, EventType.TOOL_RESULT_PERSISTED,
                 EventType.CONTEXT_PLANNED, EventType.COMPACT_BOUNDARY):
        assert kind in seen
    recorded = [r["event"] for r in records_of(project, "events") if r["type"] == "event"]
    assert recorded.count("tool_started") == recorded.count("tool_finished") == 12


def test_async_agent_runs_the_same_pipeline(project, build_agent):
    model = ScriptedChatModel(script(24, final="async done"))
    middleware = MTContextMiddleware(settings=small_window_settings(), project_root=project)
    agent = build_agent(model, [middleware], InMemorySaver())

    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("go")]},
                                    {"configurable": {"thread_id": "async"}, "recursion_limit": 200}))
    middleware.close()

    assert out["messages"][-1].content == "async done"
    assert is_summary_message(out["messages"][0])
    assert any(r["type"] == "compact_boundary" for r in records_of(project, "async"))
    for sent in model.calls:
        validate_view(sent)


def test_mtagent_cli_and_replay_read_a_langchain_thread(project, build_agent):
    model = ScriptedChatModel(script(24, final="the bug is in mod_3"))
    middleware = MTContextMiddleware(settings=small_window_settings(), project_root=project)
    run(build_agent, model, middleware, "cli-thread", text="find the bug")
    middleware.close()

    runner = CliRunner()
    listed = runner.invoke(app, ["sessions", "list", "--cwd", str(project)], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and "cli-thread" in listed.output
    shown = runner.invoke(app, ["sessions", "show", "cli-thread", "--cwd", str(project)])
    assert shown.exit_code == 0, shown.output
    assert "find the bug" in shown.output and "the bug is in mod_3" in shown.output
    view = runner.invoke(app, ["sessions", "show", "cli-thread", "--view", "--cwd", str(project)])
    assert view.exit_code == 0 and "conversation_history_summary" in view.output

    path = paths.session_transcript_path(project, "cli-thread")
    assert detect_format(path) == "mtagent"
    trajectory = load_trajectory(path)
    assert len([m for m in trajectory.messages if m.type == "tool"]) == 24
    assert trajectory.meta["compact_boundaries"]
    validate_view(conversation(trajectory.messages))


def test_parallel_results_over_the_turn_aggregate_are_persisted_in_state_and_transcript(project, build_agent):
    settings = small_window_settings(token_limit=400_000)
    calls = tool_calls(*(("fetch", {"url": f"https://example.test/{i}"}) for i in range(6)))
    model = ScriptedChatModel([calls, reply("read them all")])
    middleware = MTContextMiddleware(settings=settings, project_root=project)
    out = run(build_agent, model, middleware, "aggregate")
    middleware.close()

    results = tool_results(out["messages"])
    assert len(results) == 6
    persisted = [m for m in results if m.content.startswith("<persisted-output")]
    assert persisted and len(persisted) < 6
    assert sum(len(m.content) for m in results) <= settings.tool_results.aggregate_max_chars
    assert {m.artifact["budget"]["stage"] for m in results} == {"turn"}
    sent = tool_results(model.calls[-1])
    assert [m.content for m in sent] == [m.content for m in results]
    recorded = {r["id"]: r for r in records_of(project, "aggregate") if r["type"] == "transcript_message"}
    for message in results:
        assert recorded[message.id]["content"] == message.content


def test_model_pages_through_a_persisted_result_with_the_registered_tool(project, build_agent):
    model = ScriptedChatModel([
        tool_call("shell", {"command": "pytest"}, id="big_run"),
        tool_call("read_tool_result", {"path": "tool-results/big_run.txt", "offset": 600, "limit": 5}, id="page"),
        tool_call("read_tool_result", {"path": "../../escape.txt"}, id="bad"),
        reply("paged"),
    ])
    middleware = MTContextMiddleware(settings=small_window_settings(), project_root=project)
    out = run(build_agent, model, middleware, "paging")
    middleware.close()

    assert "read_tool_result" in model.bound_tool_names
    big, page, bad = tool_results(out["messages"])
    assert big.content.startswith("<persisted-output")
    assert "shell[pytest]:00599" in page.content.splitlines()[0]
    assert "[Showing lines 600-604 of 700" in page.content
    assert page.artifact["artifact"] is None
    assert bad.status == "error" and "escapes" in bad.content


def test_idle_gap_clears_old_results_by_time_even_after_a_resume_in_a_new_process(project, build_agent):
    settings = small_window_settings(token_limit=400_000)
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "idle"}, "recursion_limit": 200}
    clock = {"now": 1_000_000.0}
    first = MTContextMiddleware(settings=settings, project_root=project, session_id="idle")
    first.session(None).engine.window.clock = lambda: clock["now"]
    build_agent(ScriptedChatModel(script(8)), [first], saver).invoke({"messages": [HumanMessage("go")]}, config)
    first.close()

    clock["now"] += (settings.microcompact.gap_threshold_minutes + 1) * 60
    model = ScriptedChatModel([reply("back after lunch")])
    second = MTContextMiddleware(settings=settings, project_root=project, session_id="idle")
    second.session(None).engine.window.clock = lambda: clock["now"]
    build_agent(model, [second], saver).invoke({"messages": [HumanMessage("continue")]}, config)
    second.close()

    sent = tool_results(model.calls[0])
    cleared = [m for m in sent if m.content.startswith(CLEARED_PLACEHOLDER)]
    assert len(cleared) == len(sent) - settings.microcompact.keep_recent
    time_records = [r for r in records_of(project, "idle") if r["type"] == "microcompact" and r["trigger"] == "time"]
    assert [r["cleared_ids"] for r in time_records] == [[m.id for m in cleared]]
