"""MCP resources for the model: mcp_list_resources / mcp_read_resource against the fixture server —
rendered like tool results, hostile listings cleaned, URIs left to the server, asked like MCP tools."""

from __future__ import annotations

from pathlib import Path

from tools.mcp.mcp_helpers import call, console_script, fixture_server, mcp_settings, tools_of

from mtagent.agent.approval import ApprovalPolicy
from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.tools.mcp import McpManager

LIST, READ = "mcp_list_resources", "mcp_read_resource"


def test_a_server_s_resources_are_listed_and_read_like_tool_results(project: Path) -> None:
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        tools = tools_of(manager)
        listing = call(tools[LIST], server="fx")
        text = call(tools[READ], server="fx", uri="fixture://notes")
        binary = call(tools[READ], server="fx", uri="fixture://logo.png")
        templated = call(tools[READ], server="fx", uri="fixture://items/42")
    assert listing.status == "success"
    assert "- fixture://notes — notes (text/plain): Notes of the fixture." in listing.content
    assert "fixture://items/{item}" in listing.content and listing.artifact["templates"] == 1
    assert text.status == "success" and "the canary is kumquat-5517\nsecond line" in text.content
    assert text.artifact["kind"] == "mcp" and text.artifact["resources"] == ["fixture://notes"]
    assert binary.content == "[resource fixture://logo.png: image/png, 2.9 KB of binary data, not shown]"
    assert templated.content.endswith("item 42")


def test_a_hostile_listing_is_cleaned_and_bounded(project: Path) -> None:
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        listing = call(tools_of(manager)[LIST], server="fx").content
    [evil] = [line for line in listing.splitlines() if line.startswith("- fixture://evil")]
    assert "\x1b" not in listing and "\x07" not in listing and "\u202e" not in listing
    assert len(evil) < 600 and "[cut:" in evil  # a 5,000-character description, one cut line


def test_uris_go_to_the_server_and_mtagent_never_reads_a_local_path(project: Path) -> None:
    secret = project / "secret.txt"
    secret.write_text("local-canary-90210")
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        tools = tools_of(manager)
        local = call(tools[READ], server="fx", uri=secret.as_uri())
        unknown = call(tools[READ], server="fx", uri="fixture://nope")
        control = call(tools[READ], server="fx", uri="fixture://notes\x1b[2J")
        huge = call(tools[READ], server="fx", uri="fixture://" + "a" * 10_000)
        other = call(tools[READ], server="elsewhere", uri="fixture://notes")
        still = call(tools[READ], server="fx", uri="fixture://notes")
    assert local.status == "error" and "Unknown resource" in local.content and "local-canary" not in local.content
    assert unknown.status == "error" and "answered with an error" in unknown.content
    assert control.status == "error" and "not a usable resource URI" in control.content
    assert huge.status == "error" and "not a usable resource URI" in huge.content
    assert other.status == "error" and "Servers with resources: fx" in other.content
    assert still.status == "success"  # errors are results; the server stays up


def test_no_resource_tools_without_a_server_that_offers_resources(project: Path) -> None:
    settings = mcp_settings({"time": {"command": console_script("mcp-server-time")}})
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        assert any(name.startswith("mcp__time__") for name in tools)
        assert LIST not in tools and READ not in tools and manager.resource_servers() == []


def test_the_resource_tools_ask_by_default_like_mcp_tools() -> None:
    policy = ApprovalPolicy.from_rules({})
    for tool in (LIST, READ):
        verdict = policy.decide(tool, {"server": "fx", "uri": "fixture://notes"})
        assert verdict.decision == "ask" and "default for MCP tools" in verdict.rule
    assert ApprovalPolicy.from_rules({READ: "allow"}).decide(READ, {}).decision == "allow"
    assert ApprovalPolicy.from_rules({}, "auto").decide(READ, {}).decision == "allow"


def test_in_a_session_a_big_resource_goes_through_the_budget_after_the_user_says_yes(project: Path) -> None:
    settings = mcp_settings({"fx": fixture_server()})
    model = ScriptedChatModel([tool_call(READ, {"server": "fx", "uri": "fixture://big"}, id="r1"), "read it"])
    asked = []

    def approver(requests):
        asked.extend(requests)
        return "allow"

    with AgentSession.create(project, model=model, settings=settings) as session:
        rows = {r["name"]: r for r in session.parts.toolset.rows()}
        result = session.run_turn("read the big resource", approver=approver)
    assert rows[READ]["source"] == "mcp:resources" and rows[LIST]["source"] == "mcp:resources"
    assert [r.tool for r in asked] == [READ] and "default for MCP tools" in asked[0].rule
    sent = model.calls[1][-1]
    assert result.status == "done" and sent.status == "success"
    assert sent.content.startswith(f'<persisted-output tool="{READ}"') and len(sent.content) < 10_000
    assert sent.artifact["budget"]["decision"] == "persisted"


def test_when_the_catalog_defers_the_resource_tools_are_deferred_like_mcp_tools(project: Path) -> None:
    settings = mcp_settings({"fx": fixture_server()})
    settings = settings.model_copy(update={"tools": settings.tools.model_copy(update={"defer": "always"})})
    with AgentSession.create(project, model=ScriptedChatModel(["hi"]), settings=settings) as session:
        catalog = session.parts.toolset.catalog
        assert catalog.state(READ) == "deferred" and catalog.state(LIST) == "deferred"
        assert catalog.state("read_file") == "loaded"  # built-ins stay core
