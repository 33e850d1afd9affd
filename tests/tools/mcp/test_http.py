"""Streamable-HTTP servers: url and headers from the config; a dead endpoint is a state, not a crash."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.mcp.mcp_helpers import FIXTURE, call, mcp_settings, tools_of

from mtagent.testing.pg_server import free_port
from mtagent.tools.mcp import McpManager


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(FIXTURE), "--http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def test_an_http_server_gets_the_configured_headers(project: Path, http_server: str) -> None:
    settings = mcp_settings({"web": {"url": http_server, "headers": {"X-Team-Token": "abc-123"}}})
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        assert call(tools["mcp__web__echo"], text="over http").content == "over http"
        assert call(tools["mcp__web__header"], name="x-team-token").content == "abc-123"
        [status] = manager.servers()
        assert (status.transport, status.state, status.command) == ("http", "ready",
                                                                    f"{http_server} (headers: X-Team-Token)")


def test_a_dead_endpoint_is_a_failed_state_with_a_reason_and_no_credentials(project: Path) -> None:
    port = free_port()
    settings = mcp_settings({"web": {"url": f"http://me:s3cr@t@127.0.0.1:{port}/mcp", "start_timeout_seconds": 10}})
    started = time.monotonic()
    with McpManager.for_project(settings, project) as manager:
        assert manager.tools() == []
        [status] = manager.servers()
    assert status.state == "failed" and status.note.startswith(f"could not start at http://127.0.0.1:{port}/mcp: ")
    assert "s3cr" not in status.note + status.command  # /mcp shows both; the transcript keeps the note
    assert time.monotonic() - started < 15
