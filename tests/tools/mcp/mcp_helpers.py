"""Real MCP servers for the client's tests: the fixture server (tests/tools/mcp/fixture_server.py),
mcp-server-time and mcp-server-git from PyPI (the dev extra), and the npm reference servers when
`.ci/run` installed them (MTAGENT_NPM_PREFIX, default ~/.cache/mtagent-npm); each skips with its reason."""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from interrupts import alive

from mtagent.config import Settings

FIXTURE = Path(__file__).with_name("fixture_server.py")
NPM_PREFIX = Path(os.environ.get("MTAGENT_NPM_PREFIX", Path.home() / ".cache" / "mtagent-npm"))
_ids = itertools.count(1)


def fixture_server(*flags: str, **extra: Any) -> dict[str, Any]:
    """A ``[mcp.servers.NAME]`` table running the fixture server with ``flags``."""
    return {"command": sys.executable, "args": [str(FIXTURE), *flags], **extra}


def mcp_settings(servers: dict[str, dict[str, Any]], agent: dict[str, Any] | None = None, **mcp: Any) -> Settings:
    # a session waits at most mcp.ready_wait_seconds for its servers; on a loaded test machine a fixture
    # server can take longer to start, so tests wait for them (test_background_start sets its own wait)
    return Settings.model_validate({"mcp": {"servers": servers, "ready_wait_seconds": 120, **mcp},
                                    "agent": {"retry_base_seconds": 0.0, "max_retries": 0, **(agent or {})},
                                    "session_memory": {"enabled": False}})


def tools_of(manager: Any) -> dict[str, Any]:
    """A manager's tools by name (asking starts its servers)."""
    return {t.name: t for t in manager.tools()}


def call(tool: Any, **args: Any) -> Any:
    """Invoke like the agent's tool node does: a tool call in, a ToolMessage out."""
    return tool.invoke({"name": tool.name, "args": args, "id": f"call{next(_ids)}", "type": "tool_call"})


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def children_of(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def npm_server(name: str) -> str:
    """The path of an npm reference server's bin, or skip with the reason."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed; the npm MCP reference servers cannot run")
    binary = NPM_PREFIX / "node_modules" / ".bin" / name
    if not binary.exists():
        pytest.skip(f"{name} is not installed under {NPM_PREFIX} (.ci/run installs it with npm when CI=true; "
                    f"locally: npm install --prefix {NPM_PREFIX} @modelcontextprotocol/server-everything "
                    "@modelcontextprotocol/server-filesystem)")
    return str(binary)


def console_script(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(found).exists():
        pytest.skip(f"{name} is not installed (it is in the dev extra: pip install -e '.[dev]')")
    return found
