"""A scripted session calls MCP tools end to end: approval, budget and artifacts, recall, at-most-once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tools.mcp.mcp_helpers import alive, fixture_server, mcp_settings, wait_gone

from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.tools import default_tools
from mtagent.tools.mcp import McpManager

TESTS = Path(__file__).resolve().parents[2]


def _with_mcp(manager: McpManager):
    return lambda context: [*default_tools(context.workspace.root, context=context), *manager.tools()]


def _tool_records(path: Path) -> list[dict]:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("role") == "tool"]


def test_a_scripted_session_calls_an_mcp_tool_after_the_user_says_yes(project: Path) -> None:
    settings = mcp_settings({"fx": fixture_server()})
    model = ScriptedChatModel([tool_call("mcp__fx__echo", {"text": "hello from MCP"}, id="m1"), "echoed"])
    asked = []

    def approver(requests):
        asked.extend(requests)
        return "allow"

    with McpManager.for_project(settings, project) as manager, \
            AgentSession.create(project, model=model, settings=settings, tools=_with_mcp(manager)) as session:
        result = session.run_turn("echo something", approver=approver)
        path = session.transcript_path
    # tools travel with each call (nothing binds the model at create): the first request offered the MCP tool
    assert "mcp__fx__echo" in [t["function"]["name"] for t in model.call_tools[0]]
    assert result.status == "done" and result.reply == "echoed"
    assert [(r.tool, r.args) for r in asked] == [("mcp__fx__echo", {"text": "hello from MCP"})]
    assert "default for MCP tools" in asked[0].rule
    sent = model.calls[1][-1]
    assert sent.content == "hello from MCP" and sent.status == "success"
    [record] = _tool_records(path)
    assert record["tool_call_id"] == "m1" and record["content"] == "hello from MCP"


def test_a_denied_mcp_call_never_reaches_the_server(project: Path) -> None:
    marker = project / "count.txt"
    settings = mcp_settings({"fx": fixture_server()})
    model = ScriptedChatModel([tool_call("mcp__fx__count", {"path": str(marker)}), "ok"])
    with McpManager.for_project(settings, project) as manager, \
            AgentSession.create(project, model=model, settings=settings, tools=_with_mcp(manager),
                                approval="never") as session:
        session.run_turn("count")
    assert not marker.exists()
    assert model.calls[1][-1].status == "error"


def test_a_5_mb_result_becomes_an_artifact_and_a_preview_and_is_recalled(project: Path) -> None:
    word = "zanzibar-quokka-7731"  # only in the server's environment: it reaches the index through a result
    settings = mcp_settings({"fx": fixture_server(env={"WORD": word})}, agent={"approval": {"mcp__fx__*": "allow"}})
    model = ScriptedChatModel([tool_call("mcp__fx__big", {"size": 5_000_000}, id="b1"), "big one",
                               tool_call("mcp__fx__env", {"name": "WORD"}, id="e1"), "noted"])
    with McpManager.for_project(settings, project) as manager, \
            AgentSession.create(project, model=model, settings=settings, tools=_with_mcp(manager)) as session:
        result = session.run_turn("make a big one")
        session.run_turn("and look up a word")
        sent = model.calls[1][-1]
        recalled = session.tools["recall"].invoke({"name": "recall", "args": {"query": word},
                                                    "id": "r1", "type": "tool_call"})
        artifact = session.artifacts.root / sent.artifact["artifact"]
    assert result.status == "done"
    assert sent.content.startswith('<persisted-output tool="mcp__fx__big" path="tool-results/b1.txt" '
                                   'original_chars="5000000">')
    assert len(sent.content) < 10_000
    assert sent.artifact["kind"] == "mcp" and sent.artifact["budget"]["decision"] == "persisted"
    assert artifact.stat().st_size == 5_000_000
    assert word in recalled.content and "no recalled" not in recalled.content


_CRASH_MID_CALL = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from tools.mcp.mcp_helpers import fixture_server, mcp_settings
    from mtagent.agent.scripted import ScriptedChatModel, tool_call
    from mtagent.agent.session import AgentSession
    from mtagent.tools import default_tools
    from mtagent.tools.mcp import McpManager
    settings = mcp_settings({{"fx": fixture_server()}}, agent={{"approval": {{"mcp__fx__*": "allow"}}}})
    manager = McpManager.for_project(settings, {project!r})
    tools = lambda c: [*default_tools(c.workspace.root, context=c), *manager.tools()]
    model = ScriptedChatModel([tool_call("mcp__fx__count", {{"path": {marker!r}, "then_sleep": 5}}, id="once")])
    session = AgentSession.create({project!r}, model=model, settings=settings, tools=tools)
    print(session.session_id, flush=True)
    session.run_turn("count once")
""")


def test_an_mcp_call_cut_off_by_a_crash_is_never_run_again_on_resume(project: Path) -> None:
    marker = project / "count.txt"
    script = _CRASH_MID_CALL.format(tests=str(TESTS), project=str(project), marker=str(marker))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    session_id = child.stdout.readline().strip()
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists(), "the MCP call never started"
    child.send_signal(signal.SIGKILL)  # the agent dies mid-call: no result was written
    child.wait(10)

    settings = mcp_settings({"fx": fixture_server()}, agent={"approval": {"mcp__fx__*": "allow"}})
    model = ScriptedChatModel(["carrying on"])
    with McpManager.for_project(settings, project) as manager, \
            AgentSession.resume(session_id, project, model=model, settings=settings,
                                tools=_with_mcp(manager)) as session:
        result = session.run_turn("what happened?")
        path = session.transcript_path
    assert result.status == "done"
    assert marker.read_text() == "ran\n", "the cut-off call ran a second time"
    [record] = _tool_records(path)
    assert record["tool_call_id"] == "once" and record.get("status") == "error"
    orphan = int((project / "count.txt.pid").read_text())
    assert wait_gone(orphan, 20), "the killed agent's server kept running after its call ended"


def test_a_session_with_default_tools_opens_the_configured_servers_and_stops_them_on_close(project: Path) -> None:
    settings = mcp_settings({"fx": fixture_server()}, agent={"approval": {"mcp__fx__*": "allow"}})
    model = ScriptedChatModel([tool_call("mcp__fx__pid", {}, id="p1"), "done"])
    with AgentSession.create(project, model=model, settings=settings) as session:
        assert session.parts.mcp is not None and "mcp__fx__pid" in session.tools and "read_file" in session.tools
        assert session.run_turn("which pid?").status == "done"
        pid = int(model.calls[1][-1].content)
        sent = "\n".join(str(m.content) for m in model.calls[0])
        assert '<mcp_server_instructions server="fx">' in sent and "Fixture server: echo repeats text." in sent
        assert alive(pid) and [s.state for s in session.parts.mcp.servers()] == ["ready"]
    assert wait_gone(pid, 5), "the server outlived its session"


def test_a_session_given_its_own_tools_starts_no_servers(project: Path) -> None:
    settings = mcp_settings({"fx": fixture_server()})
    with AgentSession.create(project, model=ScriptedChatModel(["hi"]), settings=settings,
                             tools=lambda c: default_tools(c.workspace.root, context=c)) as session:
        assert session.parts.mcp is None and not any(name.startswith("mcp__") for name in session.tools)


def test_a_secret_in_an_mcp_result_is_redacted_before_the_model_or_the_transcript_sees_it(project: Path) -> None:
    secret = "mcp-canary-6b1f0e9d2c"
    settings = mcp_settings({"fx": fixture_server(env={"LEAK": f"token={secret}"})},
                            agent={"approval": {"mcp__fx__*": "allow"}})
    settings = settings.model_copy(update={"security": settings.security.model_copy(update={"redact_values": [secret]})})
    model = ScriptedChatModel([tool_call("mcp__fx__env", {"name": "LEAK"}, id="s1"), "ok"])
    with McpManager.for_project(settings, project) as manager, \
            AgentSession.create(project, model=model, settings=settings, tools=_with_mcp(manager)) as session:
        session.run_turn("read it")
        path = session.transcript_path
    sent = model.calls[1][-1]
    assert secret not in sent.content and "[redacted]" in sent.content
    assert secret not in path.read_text()


def test_deferred_mcp_tools_are_found_with_tool_search_then_called(project: Path) -> None:
    settings = mcp_settings({"fx": fixture_server()}, agent={"approval": {"mcp__fx__*": "allow"}})
    settings = settings.model_copy(update={"tools": settings.tools.model_copy(update={"defer": "always"})})
    model = ScriptedChatModel([tool_call("tool_search", {"query": "repeat the text echo"}, id="s1"),
                               tool_call("mcp__fx__echo", {"text": "found and called"}, id="e1"), "done"])
    with AgentSession.create(project, model=model, settings=settings) as session:
        assert "mcp__fx__echo" not in model.bound_tool_names  # deferred: listed by name only
        assert session.run_turn("echo via search").status == "done"
        assert "mcp__fx__echo" in model.bound_tool_names  # loaded by the search, bound from the next call
    assert "mcp__fx__echo" in model.calls[1][-1].content
    assert model.calls[2][-1].content == "found and called"


def test_secrets_in_an_mcp_server_s_own_config_are_redacted_too(project: Path) -> None:
    token = "plain-but-secret-value-42"  # not key-shaped: known only because the config names it a token
    settings = mcp_settings({"fx": fixture_server(env={"SERVICE_TOKEN": token})}, agent={"approval": {"mcp__fx__*": "allow"}})
    model = ScriptedChatModel([tool_call("mcp__fx__env", {"name": "SERVICE_TOKEN"}, id="t1"), "ok"])
    with McpManager.for_project(settings, project) as manager, \
            AgentSession.create(project, model=model, settings=settings, tools=_with_mcp(manager)) as session:
        session.run_turn("read it")
        path = session.transcript_path
    assert model.calls[1][-1].content == "[redacted]"
    assert token not in path.read_text()
