"""MTContextMiddleware inside a real ``create_agent`` graph, driven by a scripted tool-calling model; recall
after compaction through it gives the same retrieved bucket as the CLI."""

from __future__ import annotations

import sqlite3

import pytest
from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.context.boundary import is_summary_message
from mtagent.context.invariants import validate_view
from mtagent.context.view import load_session
from mtagent.errors import CompactionFailed, ContextLengthExceeded
from mtagent.integrations.langchain import MTContextMiddleware
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.reader import read_records

from lc_harness import conversation, records_of, request_tokens, small_window_settings, tool_results

STEPS = 40


def forty_step_script(steps: int = STEPS) -> list[AIMessage]:
    """Alternate big shell output, big grep output and small file reads, then a final answer."""
    script: list[AIMessage] = []
    for i in range(steps):
        if i % 3 == 0:
            script.append(tool_call("shell", {"command": f"pytest -k case_{i}"}, id=f"call_{i:03d}"))
        elif i % 3 == 1:
            script.append(tool_call("grep", {"pattern": f"symbol_{i}"}, id=f"call_{i:03d}"))
        else:
            script.append(tool_call("read_file", {"path": f"src/mod_{i}.py"}, id=f"call_{i:03d}"))
    script.append(reply("All 40 steps done; the failing case is case_12."))
    return script


def test_forty_step_session_stays_in_budget_with_valid_pairs_artifacts_and_compaction(project, build_agent):
    settings = small_window_settings()
    model = ScriptedChatModel(forty_step_script(), policy=lambda _m: reply("continuing from the summary"))
    middleware = MTContextMiddleware(settings=settings, project_root=project)
    agent = build_agent(model, [middleware], InMemorySaver())
    config = {"configurable": {"thread_id": "thread-40"}, "recursion_limit": 200}

    result = agent.invoke({"messages": [HumanMessage("Find why case_12 fails; keep going until done.")]}, config)

    assert len(model.calls) == STEPS + 1
    limit = settings.context.token_limit
    threshold = settings.auto_compact_threshold_tokens()
    for sent in model.calls:
        assert request_tokens(sent) <= limit
        validate_view(sent)
    assert max(request_tokens(sent) for sent in model.calls) <= threshold + 4_000

    store = ArtifactStore.for_session(project, "thread-40")
    persisted = store.list_tool_results()
    assert len(persisted) >= 2 * STEPS // 3 - 1  # every shell and grep result is over its limit
    assert any("<persisted-output" in m.content for sent in model.calls for m in tool_results(sent))

    records = records_of(project, "thread-40")
    assert records[0]["type"] == "session_start"
    boundaries = [r for r in records if r["type"] == "compact_boundary"]
    assert boundaries and all(b["trigger"] == "auto" for b in boundaries)
    assert sum(r["type"] == "tool_result_artifact" for r in records) == len(persisted)
    recorded_tools = [r for r in records if r["type"] == "transcript_message" and r["role"] == "tool"]
    assert len(recorded_tools) == STEPS
    assert result["messages"][-1].content.startswith("All 40 steps done")
    assert is_summary_message(result["messages"][0])
    middleware.close()


def test_thread_resumes_from_sqlite_checkpoint_with_compacted_state(project, build_agent, tmp_path):
    settings = small_window_settings()
    db = tmp_path / "checkpoints.sqlite"
    config = {"configurable": {"thread_id": "resume-me"}, "recursion_limit": 200}

    first_model = ScriptedChatModel(forty_step_script(30))
    with MTContextMiddleware(settings=settings, project_root=project) as middleware:
        saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
        build_agent(first_model, [middleware], saver).invoke({"messages": [HumanMessage("start")]}, config)
    boundaries_before = [r for r in records_of(project, "resume-me") if r["type"] == "compact_boundary"]
    assert boundaries_before

    second_model = ScriptedChatModel([tool_call("shell", {"command": "git status"}, id="call_next"),
                                      reply("resumed and finished")])
    with MTContextMiddleware(settings=settings, project_root=project) as middleware:
        saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
        out = build_agent(second_model, [middleware], saver).invoke(
            {"messages": [HumanMessage("continue where you left off")]}, config)

    first_request = conversation(second_model.calls[0])
    assert is_summary_message(first_request[0])
    assert first_request[0].id == f"summary-{boundaries_before[-1]['id']}"
    assert first_request[-1].content == "continue where you left off"
    last_before = conversation(first_model.calls[-1])
    assert [m.id for m in first_request[:-2]] == [m.id for m in last_before]
    assert first_request[-2].content == first_model.steps[-1].content  # the first run's final reply
    assert out["messages"][-1].content == "resumed and finished"

    records = records_of(project, "resume-me")
    ids = [r["id"] for r in records if r["type"] == "transcript_message"]
    assert len(ids) == len(set(ids)), "a resumed thread must not record a message twice"
    assert sum(r["type"] == "session_start" for r in records) == 1
    resumed = load_session(project, "resume-me")
    assert resumed.messages[-1].content == "resumed and finished"
    validate_view(resumed.messages)


def test_context_length_error_triggers_reactive_compact_and_one_retry(project, build_agent):
    settings = small_window_settings(token_limit=200_000)  # far from auto compaction
    script = forty_step_script(9)[:-1]
    script += [ContextLengthExceeded("prompt is too long: 210000 tokens > 200000 maximum"), reply("fits now")]
    model = ScriptedChatModel(script)
    middleware = MTContextMiddleware(settings=settings, project_root=project)
    agent = build_agent(model, [middleware], InMemorySaver())
    config = {"configurable": {"thread_id": "reactive"}}

    out = agent.invoke({"messages": [HumanMessage("go")]}, config)

    rejected, retried = model.calls[-2], model.calls[-1]
    assert len(conversation(retried)) < len(conversation(rejected))
    assert is_summary_message(conversation(retried)[0])
    validate_view(retried)
    boundaries = [r for r in records_of(project, "reactive") if r["type"] == "compact_boundary"]
    assert [b["trigger"] for b in boundaries] == ["reactive"]
    assert out["messages"][-1].content == "fits now"
    assert is_summary_message(out["messages"][0])
    middleware.close()


def test_second_context_length_error_after_the_retry_propagates(project, build_agent):
    settings = small_window_settings(token_limit=200_000)
    error = ContextLengthExceeded("maximum context length exceeded")
    model = ScriptedChatModel([*forty_step_script(6)[:-1], error, ContextLengthExceeded("still too long")])
    middleware = MTContextMiddleware(settings=settings, project_root=project)
    agent = build_agent(model, [middleware], InMemorySaver())

    with pytest.raises(ContextLengthExceeded, match="still too long"):
        agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "twice"}})
    middleware.close()


def test_reactive_compaction_that_cannot_shrink_reraises_the_providers_error(project, monkeypatch):
    middleware = MTContextMiddleware(settings=small_window_settings(), project_root=project, session_id="tiny")
    manager = middleware.session(None).engine.window

    def cannot_shrink(*_args, **_kwargs):
        raise CompactionFailed("nothing to compact: everything is in the recent tail")

    monkeypatch.setattr(manager, "run_compaction", cannot_shrink)
    calls = []

    def provider(request):
        calls.append(request)
        raise ContextLengthExceeded("prompt is too long: the first message alone")

    request = ModelRequest(model=ScriptedChatModel(), messages=[HumanMessage("go", id="h-1")])
    with pytest.raises(ContextLengthExceeded, match="the first message alone") as raised:
        middleware.wrap_model_call(request, provider)
    middleware.close()
    assert isinstance(raised.value.__cause__, CompactionFailed)
    assert len(calls) == 1


def test_other_model_errors_are_not_swallowed(project, build_agent):
    model = ScriptedChatModel([RuntimeError("rate limited")])
    middleware = MTContextMiddleware(settings=small_window_settings(), project_root=project)
    agent = build_agent(model, [middleware], InMemorySaver())
    with pytest.raises(RuntimeError, match="rate limited"):
        agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "err"}})
    assert len(model.calls) == 1
    middleware.close()


def test_large_tool_result_is_persisted_and_small_one_kept_inline(project, build_agent):
    model = ScriptedChatModel([tool_call("shell", {"command": "make"}, id="big_1"),
                               tool_call("read_file", {"path": "a.py"}, id="small_1"), reply("ok")])
    middleware = MTContextMiddleware(settings=small_window_settings(), project_root=project)
    out = build_agent(model, [middleware], InMemorySaver()).invoke(
        {"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "budget"}})
    middleware.close()

    big, small = tool_results(out["messages"])
    assert big.content.startswith("<persisted-output")
    assert big.artifact["artifact"] == "tool-results/big_1.txt"
    assert big.artifact["original_chars"] > len(big.content)
    full = ArtifactStore.for_session(project, "budget").read_text("tool-results/big_1.txt")
    assert len(full) == big.artifact["original_chars"]
    assert small.artifact["artifact"] is None and not small.content.startswith("<persisted-output")
    recorded = {r["tool_call_id"]: r for r in records_of(project, "budget") if r.get("role") == "tool"}
    assert recorded["big_1"]["toolUseResult"]["artifact"] == "tool-results/big_1.txt"


def test_threads_get_separate_sessions_and_an_unsafe_thread_id_is_sanitised(project, build_agent):
    middleware = MTContextMiddleware(settings=small_window_settings(), project_root=project)
    for thread in ("alpha", "team/beta: 7"):
        model = ScriptedChatModel([reply(f"hi {thread}")])
        build_agent(model, [middleware], InMemorySaver()).invoke(
            {"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": thread}})
    beta = middleware.session_for_thread("team/beta: 7")
    middleware.close()
    assert beta is not None and beta.session_id.startswith("lc-team-beta-7-")
    for session_id in ("alpha", beta.session_id):
        texts = [r["content"] for r in records_of(project, session_id) if r["type"] == "transcript_message"]
        assert texts[0] == "hello" and texts[-1].startswith("hi ")


def test_explicit_session_id_and_token_limit_override_settings(project):
    middleware = MTContextMiddleware(settings=small_window_settings(), token_limit=50_000,
                                     project_root=project, session_id="fixed-session")
    assert middleware.token_limit == 50_000
    assert middleware.session(None).session_id == "fixed-session"
    middleware.close()


def test_without_a_checkpointer_every_run_of_the_middleware_shares_one_new_session(project, build_agent):
    middleware = MTContextMiddleware(settings=small_window_settings(), project_root=project)
    for text in ("first run", "second run"):
        build_agent(ScriptedChatModel([reply(f"answer to {text}")]), [middleware], None).invoke(
            {"messages": [HumanMessage(text)]})
    session_id = middleware.session(None).session_id
    middleware.close()
    texts = [r["content"] for r in records_of(project, session_id) if r["type"] == "transcript_message"]
    assert texts == ["first run", "answer to first run", "second run", "answer to second run"]


NAME = "frobnicate_quux_total"


def _script(steps: int = 24) -> list:
    script = [tool_call("grep", {"pattern": NAME if i == 1 else f"symbol_{i}"}, id=f"call_{i:03d}")
              if i % 2 else tool_call("shell", {"command": f"pytest -k case_{i}"}, id=f"call_{i:03d}")
              for i in range(steps)]
    return [*script, reply("done with the sweep")]


def test_a_compacted_identifier_named_by_the_user_is_recalled_into_the_request(project, build_agent):
    model = ScriptedChatModel([*_script(), reply("it came from the grep")])
    config = {"configurable": {"thread_id": "recall-mw"}, "recursion_limit": 200}
    with MTContextMiddleware(settings=small_window_settings(), project_root=project) as middleware:
        agent = build_agent(model, [middleware], InMemorySaver())
        agent.invoke({"messages": [HumanMessage("sweep the repository")]}, config)
        first_run_calls = len(model.calls)
        assert all(m.id != "retrieved-context" for sent in model.calls for m in sent), \
            "a compaction alone (its summary, the kept tail) must not pull in a retrieved bucket"
        out = agent.invoke({"messages": [HumanMessage(f"where did {NAME} show up?")]}, config)

    sent = model.calls[first_run_calls]
    assert is_summary_message(next(m for m in sent if m.type != "system"))
    assert sent[-2].content == f"where did {NAME} show up?"
    assert NAME not in "".join(str(m.content) for m in sent[:-2])  # compacted away …
    last = sent[-1]
    assert last.id == "retrieved-context" and NAME in str(last.content)  # … and recalled
    assert "session recall-mw" in str(last.content)
    validate_view([m for m in sent if m.id != "retrieved-context"])
    # Ephemeral: the bucket is in the request only, never in the graph state or the transcript.
    assert all(m.id != "retrieved-context" for m in out["messages"])
    records = read_records(paths.session_transcript_path(project, "recall-mw"))
    assert all(r.get("id") != "retrieved-context" for r in records)
    plans = [r for r in records if r.get("type") == "context_plan" and (r.get("plan") or r).get("retrieved")]
    assert plans, "the plan records why the bucket was filled"
