"""Recall after compaction through the LangChain middleware: the same retrieved bucket as the CLI."""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lc_harness import small_window_settings

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.context.boundary import is_summary_message
from mtagent.context.invariants import validate_view
from mtagent.integrations.langchain import MTContextMiddleware
from mtagent.session.reader import read_records

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
