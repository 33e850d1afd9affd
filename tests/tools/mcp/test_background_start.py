"""A session's first request never waits on a slow or hung MCP server, and says so (issue 36)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from interrupts import sigint_default_in_child
from tools.mcp.mcp_helpers import fixture_server, mcp_settings

from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.events import EventBus, EventType
from mtagent.tools.mcp import McpManager

pytestmark = pytest.mark.slow


def _settings(servers: dict, wait: float):
    settings = mcp_settings(servers)
    return settings.model_copy(update={"mcp": settings.mcp.model_copy(update={"ready_wait_seconds": wait})})


def test_the_first_request_goes_out_with_the_ready_servers_and_a_late_one_s_tools_arrive(project: Path) -> None:
    settings = _settings({"fx": fixture_server(), "slow": fixture_server("--slow-start", "8"),
                          "hang": fixture_server("--hang-start", start_timeout_seconds=14)}, wait=3)
    bus, told = EventBus(), []
    late_ready = threading.Event()

    def heard(event) -> None:
        told.append((event.data["server"], event.data["state"], event.data["note"]))
        if event.data["server"] == "slow" and event.data["state"] == "ready":
            late_ready.set()

    bus.subscribe(heard, EventType.MCP_SERVER)
    model = ScriptedChatModel(["first answer", tool_call("mcp__slow__echo", {"text": "late hello"}, id="s1"),
                               "echoed"])
    began = time.monotonic()
    with AgentSession.create(project, model=model, settings=settings, events=bus) as session:
        assert session.run_turn("hi").status == "done"
        first = time.monotonic() - began
        assert first < 7.5, f"the first turn waited {first:.1f} s for servers that were not ready"
        assert ("slow", "starting", "its tools arrive when it is ready") in told
        assert ("hang", "starting", "its tools arrive when it is ready") in told
        assert late_ready.wait(30), told
        result = session.run_turn("now echo", approver=lambda requests: "allow")
        assert result.status == "done"
        sent = model.calls[-1][-1]  # what the model saw last: the late server's answer
        assert sent.type == "tool" and sent.content == "late hello", sent
        deadline = time.monotonic() + 30
        while not any(s == "hang" and state == "failed" for s, state, _ in told) and time.monotonic() < deadline:
            time.sleep(0.2)
    assert any(s == "hang" and state == "failed" and "did not start within 14 s" in note for s, state, note in told)


def test_without_a_wait_every_server_is_waited_for_as_mcp_list_does(project: Path) -> None:
    settings = mcp_settings({"slow": fixture_server("--slow-start", "2")})
    with McpManager.for_project(settings, project) as manager:
        assert "mcp__slow__echo" in [t.name for t in manager.tools()]


def test_run_says_which_server_is_starting_and_does_not_wait_for_it(tmp_path: Path, mtagent_home: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    project = tmp_path / "project"
    project.mkdir()
    server = fixture_server("--hang-start", start_timeout_seconds=60)
    (mtagent_home / "config.toml").write_text(
        f"[mcp]\nready_wait_seconds = 1\n[mcp.servers.hang]\ncommand = {json.dumps(server['command'])}\n"
        f"args = {json.dumps(server['args'])}\nstart_timeout_seconds = 60\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps(["Done without it."]))
    env = {**os.environ, "MTAGENT_HOME": str(mtagent_home), "TERM": "xterm", "NO_COLOR": "1", "COLUMNS": "120"}
    began = time.monotonic()
    child = pexpect.spawn(sys.executable, ["-m", "mtagent.cli.app", "run", "--cwd", str(project), "--model",
                                           f"scripted:{script}", "go"],
                          env=env, encoding="utf-8", timeout=60, dimensions=(40, 120),
                          preexec_fn=sigint_default_in_child)
    child.expect(pexpect.EOF)
    took = time.monotonic() - began
    screen = child.before
    assert "MCP server hang is starting" in screen and "/mcp" in screen, screen
    assert "Done without it." in screen
    assert took < 30, f"run waited {took:.0f} s for a hung server"
