"""A session with many MCP-like tools: their schemas are deferred, the model finds one with
tool_search, it is bound (appended) from the next call and runs; /context shows the buckets; a
compaction brings the post-compaction delta."""

from __future__ import annotations

from pathlib import Path

from agent_helpers import agent_settings, make_project
from langchain_core.tools import StructuredTool

from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.agent.session import AgentSession
from mtagent.tools import default_tools

RUNS: list[str] = []


def fake_mcp_tools(n: int) -> list[StructuredTool]:
    tools = []
    for i in range(n):
        def run(target: str, _i: int = i) -> str:
            RUNS.append(f"op_{_i}:{target}")
            return f"op_{_i} done on {target}"
        tools.append(StructuredTool.from_function(
            run, name=f"mcp__fake__op_{i}",
            description=f"Operation {i}: rotate the widget of kind {i} and report its new angle in degrees."))
    return tools


def open_session(tmp_path: Path, steps: list, **sections) -> AgentSession:
    model = ScriptedChatModel(steps=steps)
    tools = lambda ctx: [*default_tools(ctx.workspace.root, context=ctx), *fake_mcp_tools(80)]  # noqa: E731
    sections.setdefault("context", {"token_limit": 32_768})
    return AgentSession.create(make_project(tmp_path), model=model, tools=tools, approval="auto",
                               settings=agent_settings(**sections))


def bound_names(session: AgentSession) -> list[str]:
    return [t["function"]["name"] if isinstance(t, dict) else t.name for t in session.runtime.request_tools()]


def test_deferred_tool_is_found_loaded_appended_and_run(tmp_path: Path) -> None:
    RUNS.clear()
    steps = [tool_call("tool_search", {"query": "rotate widget of kind 7", "k": 1}),
             tool_call("mcp__fake__op_7", {"target": "gear"}), reply("rotated")]
    with open_session(tmp_path, steps) as session:
        before = bound_names(session)
        assert before[-1] == "tool_search" and not any(n.startswith("mcp__") for n in before)
        result = session.run_turn("rotate the kind-7 widget")
        assert result.reply == "rotated" and RUNS == ["op_7:gear"]
        after = bound_names(session)
        assert after[: len(before)] == before and after[len(before):] == ["mcp__fake__op_7"]
        stats = session.parts.toolset.catalog.stats
        assert stats.loads == 1 and stats.cache_invalidations == 1 and stats.cache_cost > 0
        buckets = session.last_plan.buckets.as_dict()
        assert buckets["mcp_tools"] > 0 and buckets["deferred_tools"] > 0 and buckets["tools"] > 0
        system = session.opened.system
        assert system.schema_tokens() == int(session.parts.toolset.tokens())


def test_never_defer_sends_every_schema(tmp_path: Path) -> None:
    with open_session(tmp_path, [reply("ok")], tools={"defer": "never"}) as session:
        names = bound_names(session)
        assert "tool_search" not in names and "mcp__fake__op_79" in names


def test_compaction_brings_the_delta_of_loaded_tools(tmp_path: Path) -> None:
    steps = [tool_call("tool_search", {"query": "select:mcp__fake__op_3"}), reply("loaded"),
             *[reply(f"noted part {i}") for i in range(6)]]
    with open_session(tmp_path, steps, context={"token_limit": 32_768, "compression_preserve_min_tokens": 10,
                                                "compression_preserve_max_tokens": 900}) as session:
        session.run_turn("load op 3")
        for i in range(6):
            session.run_turn(f"part {i} of the notes: " + "lorem ipsum dolor sit amet " * 150)
        session.compact()
        assert session.parts.toolset.context.compactions == 1
        texts = [str(m.content) for m in session.opened.system.messages()]
        delta = [t for t in texts if t.startswith("<tools-delta>")]
        assert delta and "mcp__fake__op_3" in delta[0]
        assert "mcp__fake__op_3" in bound_names(session)  # still bound after the compaction


def test_a_resumed_session_binds_what_it_had_loaded(tmp_path: Path) -> None:
    steps = [tool_call("tool_search", {"query": "select:mcp__fake__op_5"}), reply("loaded")]
    with open_session(tmp_path, steps) as session:
        session.run_turn("load op 5")
        sid, root = session.session_id, session.project_root
    tools = lambda ctx: [*default_tools(ctx.workspace.root, context=ctx), *fake_mcp_tools(80)]  # noqa: E731
    with AgentSession.resume(sid, root, model=ScriptedChatModel([reply("back")]), tools=tools, approval="auto",
                             settings=agent_settings(context={"token_limit": 32_768})) as again:
        assert bound_names(again)[-1] == "mcp__fake__op_5"
        assert again.parts.toolset.catalog.stats.loads == 0  # restored, not loaded (or priced) again


def test_a_real_mcp_servers_deferred_tool_is_searched_loaded_and_called(tmp_path: Path) -> None:
    import json
    import sys

    import pytest

    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    fixture = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "fixture_server.py"
    settings = agent_settings(tools={"defer": "always"},
                              mcp={"servers": {"fixture": {"command": sys.executable, "args": [str(fixture)]}},
                                   "ready_wait_seconds": 120})
    steps = [tool_call("tool_search", {"query": "repeat the text back", "k": 1}),
             tool_call("mcp__fixture__echo", {"text": "hello through MCP"}), reply("echoed")]
    with AgentSession.create(make_project(tmp_path), model=ScriptedChatModel(steps=steps), settings=settings,
                             approval="auto") as session:
        assert "mcp__fixture__echo" not in bound_names(session)
        assert session.run_turn("echo something").reply == "echoed"
        assert bound_names(session)[-1] == "mcp__fixture__echo"
        results = [m for m in session.history if m.type == "tool"]
        assert "mcp__fixture__echo" in str(results[0].content) and results[1].content == "hello through MCP"
        rows = {r["name"]: r for r in session.parts.toolset.rows()}
        assert rows["mcp__fixture__echo"]["source"] == "mcp:fixture" and rows["mcp__fixture__echo"]["state"] == "loaded"
        assert rows["mcp__fixture__sleep"]["state"] == "deferred"
        assert json.dumps(session.last_plan.buckets.as_dict())  # plan records the buckets
        assert session.last_plan.buckets.as_dict()["mcp_instructions"] > 0


def test_a_deferred_tool_called_by_name_runs_and_is_loaded(tmp_path: Path) -> None:
    RUNS.clear()
    steps = [tool_call("mcp__fake__op_9", {"target": "cog"}), reply("turned")]
    with open_session(tmp_path, steps) as session:
        assert "mcp__fake__op_9" not in bound_names(session)
        assert session.run_turn("turn the cog with op 9").reply == "turned"
        assert RUNS == ["op_9:cog"] and bound_names(session)[-1] == "mcp__fake__op_9"
        assert session.parts.toolset.catalog.stats.loads == 1


def test_a_tool_loaded_before_the_last_compaction_is_bound_again_on_resume(tmp_path: Path) -> None:
    """Resume reads from the last boundary's first kept message; the load happened long before it.
    The live session kept the tool bound through the compaction, so the resumed one must too."""
    steps = [tool_call("tool_search", {"query": "select:mcp__fake__op_3"}), reply("loaded"),
             *[reply(f"noted part {i}") for i in range(6)]]
    context = {"token_limit": 32_768, "compression_preserve_min_tokens": 10, "compression_preserve_max_tokens": 900}
    with open_session(tmp_path, steps, context=context) as session:
        session.run_turn("load op 3")
        for i in range(6):
            session.run_turn(f"part {i} of the notes: " + "lorem ipsum dolor sit amet " * 150)
        session.compact()
        live = bound_names(session)
        sid, root = session.session_id, session.project_root
    assert "mcp__fake__op_3" in live
    tools = lambda ctx: [*default_tools(ctx.workspace.root, context=ctx), *fake_mcp_tools(80)]  # noqa: E731
    with AgentSession.resume(sid, root, model=ScriptedChatModel([reply("back")]), tools=tools, approval="auto",
                             settings=agent_settings(context=context)) as again:
        assert not any(r.get("event") == "tools_loaded" and "carried" not in (r.get("data") or {})
                       for r in again.opened.records)  # the original load is not among what resume read
        assert bound_names(again) == live
        assert again.parts.toolset.catalog.stats.loads == 0


def test_a_recall_embeddings_setting_that_cannot_be_set_up_is_one_warning_and_keyword_search(
        tmp_path: Path, caplog, monkeypatch) -> None:
    import logging

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with caplog.at_level(logging.WARNING, logger="mtagent.agent.opener"):
        with open_session(tmp_path, [reply("ok")], recall={"embeddings": "bogus"}) as session:
            assert session.parts.toolset is not None  # the session opened, tool_search on BM25
    said = [r.getMessage() for r in caplog.records if r.name == "mtagent.agent.opener"]
    assert len(said) == 1 and "recall.embeddings" in said[0] and "keywords only" in said[0]


def test_a_deferred_tool_called_by_name_without_a_search_runs_and_the_next_request_carries_it(tmp_path: Path) -> None:
    """The model read the name in the listing and called it: it runs, and its schema is sent from the
    next request on (the loop loads it as the call starts — no event listener does it)."""
    RUNS.clear()
    with open_session(tmp_path, [tool_call("mcp__fake__op_3", {"target": "gear"}), reply("done")]) as session:
        assert "mcp__fake__op_3" not in bound_names(session)
        assert session.run_turn("rotate kind 3").reply == "done" and RUNS == ["op_3:gear"]
        assert bound_names(session)[-1] == "mcp__fake__op_3"
        assert session.parts.toolset.catalog.loaded == ["mcp__fake__op_3"]
