"""Tools a server adds while running follow the deferral rule of tools at start (#33): with
``tools.defer = "auto"`` a session that did not defer at start (a few tools) starts deferring when
a ``tools/list_changed`` brings enough tools to pass ``tools.defer_share`` — they were bound loaded
(523 schemas, 162 KB in every later request). ``tool_search`` then finds and loads one."""

from __future__ import annotations

import json
from pathlib import Path

from tools.mcp.mcp_helpers import fixture_server, mcp_settings

from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession

ALLOW = {"approval": {"mcp__fx__*": "allow"}}
MANY = 523


def test_a_flood_of_late_tools_is_deferred_when_the_start_rule_says_so(project: Path) -> None:
    model = ScriptedChatModel([tool_call("mcp__fx__add_many", {"prefix": "late", "count": MANY, "times": 1}, id="a1"),
                               tool_call("tool_search", {"query": "select:mcp__fx__late7"}, id="s1"),
                               tool_call("mcp__fx__late7", {}, id="l1"), "done"])
    settings = mcp_settings({"fx": fixture_server()}, agent=ALLOW, ready_wait_seconds=60)  # a loaded machine
    settings = settings.model_copy(update={"tools": settings.tools.model_copy(update={"defer": "auto"})})
    with AgentSession.create(project, model=model, settings=settings) as session:
        assert not session.parts.toolset.catalog.deferral.deferring, "few tools at start: nothing deferred"
        first_bound = list(model.bound_tool_names)
        assert session.run_turn("add many tools, then use one").status == "done"
        catalog = session.parts.toolset.catalog
        states = {n: catalog.state(n) for n in (f"mcp__fx__late{i}" for i in range(MANY)) if n in catalog.by_name}
        rows = {r["name"]: r for r in session.parts.toolset.rows()}
    assert catalog.deferral.deferring
    assert len(states) >= 400  # (a server's list is capped, mcp.max_tools_per_server)
    assert sum(s == "deferred" for s in states.values()) == len(states) - 1 and states["mcp__fx__late7"] == "loaded"
    bound = list(model.bound_tool_names)
    assert len([n for n in bound if n.startswith("mcp__fx__late")]) == 1 and "tool_search" in bound
    assert set(first_bound) <= set(bound)  # what was bound stays bound
    assert model.calls[3][-1].content == "many"  # found by tool_search, then called
    schemas = json.dumps([rows[n] for n in rows if n.startswith("mcp__fx__late")])
    assert len(schemas) < 200_000


def test_never_keeps_loading_late_tools(project: Path) -> None:
    model = ScriptedChatModel([tool_call("mcp__fx__add_many", {"prefix": "late", "count": 30, "times": 1}, id="a1"),
                               "done"])
    settings = mcp_settings({"fx": fixture_server()}, agent=ALLOW, ready_wait_seconds=60)  # a loaded machine
    settings = settings.model_copy(update={"tools": settings.tools.model_copy(update={"defer": "never"})})
    with AgentSession.create(project, model=model, settings=settings) as session:
        session.run_turn("add tools")
        catalog = session.parts.toolset.catalog
        assert not catalog.deferral.deferring and catalog.state("mcp__fx__late29") == "loaded"
