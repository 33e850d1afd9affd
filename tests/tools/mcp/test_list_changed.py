"""A server that changes its tools while running (tools/list_changed): new tools reach the session's
catalog and run, removed ones answer with the server's error, floods and hostile lists are bounded."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tools.mcp.mcp_helpers import call, fixture_server, mcp_settings

from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.tools.mcp import McpManager

ALLOW = {"approval": {"mcp__fx__*": "allow"}}


def _by_name(manager: McpManager) -> dict:
    """The servers' own tools (not the resource tools)."""
    return {t.name: t for t in manager.tools() if t.name.startswith("mcp__")}


def test_a_tool_added_during_a_call_is_handed_on_before_the_call_returns_and_runs(project: Path) -> None:
    arrived: list[list[str]] = []
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        manager.offered.on_new_tools(lambda tools: arrived.append([t.name for t in tools]))
        tools = _by_name(manager)
        assert "mcp__fx__late" not in tools
        assert call(tools["mcp__fx__add_tool"], name="late", answer="I am new").content == "added late"
        assert arrived == [["mcp__fx__late"]]  # no wait: the call returned after the re-list
        late = _by_name(manager)["mcp__fx__late"]
        assert late.source == "mcp:fx" and call(late).content == "I am new"
        assert manager.servers()[0].state == "ready"


def test_a_removed_tool_answers_with_the_server_s_error_and_stays_listed(project: Path) -> None:
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        tools = _by_name(manager)
        call(tools["mcp__fx__add_tool"], name="brief", answer="here")
        brief = _by_name(manager)["mcp__fx__brief"]
        assert call(tools["mcp__fx__drop_tool"], name="brief").content == "removed brief"
        gone = call(brief)
        assert gone.status == "error" and "brief" in gone.content
        assert "mcp__fx__brief" in _by_name(manager)  # never dropped: bound schemas are the cached prefix
        assert call(tools["mcp__fx__echo"], text="still up").content == "still up"


def test_a_flood_of_1000_changes_costs_a_bounded_number_of_relists(project: Path) -> None:
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        tools = _by_name(manager)
        started = time.monotonic()
        assert call(tools["mcp__fx__add_many"], prefix="flood", count=1, times=1000).content == "added 1"
        time.sleep(1.2)  # past the debounce and the minimum interval: every re-list that will run has run
        watcher = manager._connections["fx"].watcher
        assert watcher is not None and watcher.signals >= 1
        assert watcher.relists <= 3, f"{watcher.relists} re-lists for {watcher.signals} signals"
        assert "mcp__fx__flood0" in _by_name(manager)
        assert time.monotonic() - started < 30


def test_ten_thousand_hostile_names_on_a_relist_are_capped_and_made_valid(project: Path) -> None:
    settings = mcp_settings({"fx": fixture_server()}, max_tools_per_server=40)
    with McpManager.for_project(settings, project) as manager:
        before = _by_name(manager)
        call(before["mcp__fx__add_many"], prefix="we!rd/../\x1b[31m\u202e" + "n" * 80, count=10_000, times=1)
        after = _by_name(manager)
        assert len(after) == 40 and len(after) > len(before)
        for name, tool in after.items():
            assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name), name
            assert "\x1b" not in tool.description
        assert manager.servers()[0].tool_count == 40


def _session(project: Path, defer: str, model: ScriptedChatModel) -> AgentSession:
    settings = mcp_settings({"fx": fixture_server()}, agent=ALLOW)
    settings = settings.model_copy(update={"tools": settings.tools.model_copy(update={"defer": defer})})
    return AgentSession.create(project, model=model, settings=settings)


def test_in_a_session_the_new_tool_is_listed_bound_and_called_without_a_restart(project: Path) -> None:
    model = ScriptedChatModel([tool_call("mcp__fx__pid", {}, id="p1"),
                               tool_call("mcp__fx__add_tool", {"name": "late", "answer": "hello late"}, id="a1"),
                               tool_call("mcp__fx__late", {}, id="l1"),
                               tool_call("mcp__fx__pid", {}, id="p2"), "done"])
    with _session(project, "never", model) as session:
        bound_before = list(model.bound_tool_names)
        assert session.run_turn("add a tool and use it").status == "done"
        rows = {r["name"]: r for r in session.parts.toolset.rows()}
        bound_after = list(model.bound_tool_names)
    assert rows["mcp__fx__late"]["source"] == "mcp:fx" and rows["mcp__fx__late"]["state"] == "loaded"
    assert bound_after[:len(bound_before)] == bound_before and bound_after[-1] == "mcp__fx__late"  # appended
    assert model.calls[3][-1].content == "hello late" and model.calls[3][-1].status == "success"
    assert model.calls[1][-1].content == model.calls[4][-1].content  # one server process throughout
    assert session.parts.toolset.catalog.stats.tools_loaded >= 1  # priced like a load


def test_when_the_catalog_defers_the_new_tool_is_deferred_and_found_by_tool_search(project: Path) -> None:
    model = ScriptedChatModel([tool_call("tool_search", {"query": "select:mcp__fx__add_tool"}, id="s1"),
                               tool_call("mcp__fx__add_tool", {"name": "late", "answer": "deferred one"}, id="a1"),
                               tool_call("tool_search", {"query": "select:mcp__fx__late"}, id="s2"),
                               tool_call("mcp__fx__late", {}, id="l1"), "done"])
    with _session(project, "always", model) as session:
        assert session.run_turn("add a tool, find it, use it").status == "done"
        state = session.parts.toolset.catalog.state("mcp__fx__late")
        sent = "\n".join(str(m.content) for m in model.calls[2])
    assert "mcp__fx__late" in sent  # the listing's delta named it before the search
    assert "mcp__fx__late" in model.calls[3][-1].content and state == "loaded"
    assert model.calls[4][-1].content == "deferred one"


def test_a_handshake_era_notification_marks_the_list_stale_and_nothing_else_does() -> None:
    import asyncio

    from mcp_types import ResourceListChangedNotification, ToolListChangedNotification

    from mtagent.tools.mcp.changes import ChangeWatcher

    async def scenario() -> tuple[int, int]:
        relisted = []

        async def relist() -> None:
            relisted.append(1)

        watcher = ChangeWatcher(relist)
        watcher.start(None, listen=False)
        await watcher.on_message(ResourceListChangedNotification())
        await watcher.on_message(ValueError("a stream error the SDK hands over"))
        assert not watcher.pending
        for _ in range(1000):
            await watcher.on_message(ToolListChangedNotification())
        await watcher.settle()
        await asyncio.sleep(0.6)
        await watcher.stop()
        return watcher.signals, len(relisted)

    signals, relists = asyncio.run(scenario())
    assert signals == 1000 and relists == 1
