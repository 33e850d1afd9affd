"""``sandbox.mcp_servers``: a stdio MCP server in the shell tool's sandbox (issue 37) — its own folder
writable, nothing else; the user's keys hidden; and it still stops with the session."""

from __future__ import annotations

from pathlib import Path

import pytest
from interrupts import wait_for
from tools.mcp.mcp_helpers import call, fixture_server, tools_of

from mtagent.config import Settings
from mtagent.tools import sandbox
from mtagent.tools.mcp import McpManager, discover_servers

pytestmark = pytest.mark.skipif(sandbox.probe() is not None, reason=f"sandbox cannot run here: {sandbox.probe()}")


def _settings(on: bool) -> Settings:
    return Settings.model_validate({"mcp": {"servers": {"fx": fixture_server()}}, "sandbox": {"mcp_servers": on},
                                    "agent": {"retry_base_seconds": 0.0, "max_retries": 0},
                                    "session_memory": {"enabled": False}})


def test_a_sandboxed_server_writes_only_its_own_folder(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    settings = _settings(True)
    [spec], _ = discover_servers(settings, project)
    assert spec.sandbox is not None
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        blocked = call(tools["mcp__fx__count"], path=str(outside))
        inside = call(tools["mcp__fx__count"], path=str(Path(spec.workdir) / "mine.txt"))
        in_project = call(tools["mcp__fx__count"], path=str(project / "README.md"))
    assert not outside.exists() and blocked.status == "error"
    assert inside.status != "error" and (Path(spec.workdir) / "mine.txt").exists()
    assert in_project.status == "error" and (project / "README.md").read_text() == "# project\n"


def test_without_the_setting_a_server_runs_as_before(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    with McpManager.for_project(_settings(False), project) as manager:
        tools = tools_of(manager)
        call(tools["mcp__fx__count"], path=str(outside))
    assert outside.exists()


def test_a_sandboxed_server_stops_with_the_session(project: Path) -> None:
    import os

    with McpManager.for_project(_settings(True), project) as manager:
        tools = tools_of(manager)
        assert call(tools["mcp__fx__pid"]).content.isdigit()
        mine = set(os.listdir("/proc"))
    wait_for(lambda: not [p for p in os.listdir("/proc") if p.isdigit() and p not in mine and
                          b"fixture_server" in _cmdline(p)], "the sandboxed server to stop", timeout=10)


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
