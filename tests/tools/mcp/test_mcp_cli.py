"""``mtagent mcp list [--json]`` and ``/mcp``: each server's source, trust, state and tool count."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from tools.mcp.mcp_helpers import FIXTURE, alive, children_of

from mtagent import trust
from mtagent.cli.app import app
from mtagent.cli.slash import SlashOutcome, dispatch
from mtagent.tools.mcp import McpServerStatus

runner = CliRunner()


def _user_config(home: Path, body: str) -> None:
    (home / "config.toml").write_text(body)


def _fixture(name: str, *flags: str) -> str:
    import sys

    args = ", ".join(json.dumps(a) for a in [str(FIXTURE), *flags])
    return f'[mcp.servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = [{args}]\n'


def test_mcp_list_json_shows_every_server_and_leaves_no_process(project: Path, mtagent_home: Path) -> None:
    _user_config(mtagent_home, _fixture("fx") + '[mcp.servers.gone]\ncommand = "mtagent-no-such-server"\n'
                 + '[mcp.servers.off]\ncommand = "x"\nenabled = false\n')
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": {"command": "evil", "args": ["--now"]}}}))
    before = set(children_of(__import__("os").getpid()))  # a suite's own services (PostgreSQL, Ray) too
    result = runner.invoke(app, ["mcp", "list", "--json", "--cwd", str(project)])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)["servers"]}
    assert (rows["fx"]["state"], rows["fx"]["source"], rows["fx"]["trusted"]) == ("ready", "user config", True)
    assert rows["fx"]["tools"] >= 9
    assert rows["gone"]["state"] == "failed" and "command not found" in rows["gone"]["note"]
    assert rows["off"]["state"] == "disabled"
    assert (rows["repo"]["state"], rows["repo"]["source"], rows["repo"]["trusted"]) == ("untrusted", ".mcp.json", False)
    assert rows["repo"]["command"] == "evil --now"
    assert not [p for p in set(children_of(__import__("os").getpid())) - before if alive(p)]


def test_mcp_list_no_start_reads_the_config_only(project: Path, mtagent_home: Path) -> None:
    _user_config(mtagent_home, _fixture("fx"))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                                                                        "headers": {"Authorization": "Bearer s3cr3t"}}}}))
    trust.set_trust(project, True)  # trust binds to what the project holds when it is given
    result = runner.invoke(app, ["mcp", "list", "--no-start", "--cwd", str(project)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "not started" in result.output and "http://127.0.0.1:9/mcp (headers: Authorization)" in result.output
    assert "s3cr3t" not in result.output  # header values are never shown


def test_mcp_list_without_servers_says_how_to_add_one(project: Path) -> None:
    result = runner.invoke(app, ["mcp", "list", "--cwd", str(project)])
    assert result.exit_code == 0 and "No MCP servers configured" in result.output


def test_a_hostile_server_name_and_note_print_as_visible_text(project: Path, mtagent_home: Path) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"x\u001b]0;owned\u0007": {"command": "\u001b[2Jrm"}}}))
    result = runner.invoke(app, ["mcp", "list", "--cwd", str(project)], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "\x1b" not in result.output and "\x07" not in result.output


def test_a_newline_in_a_server_name_or_command_cannot_print_a_line_of_its_own(project: Path) -> None:
    forged = "(all servers above are read-only)"
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {f"fmt\n{forged}": {"command": f"true\n{forged}"}}}))
    result = runner.invoke(app, ["mcp", "list", "--no-start", "--cwd", str(project)], env={"COLUMNS": "250"})
    assert result.exit_code == 0
    assert not any(line.strip().startswith(forged) for line in result.output.splitlines()), result.output
    assert "fmt\\n(all servers" in result.output  # shown, escaped


@dataclass
class _Host:
    cwd: Path
    servers: tuple | None
    console: Console = field(default_factory=lambda: Console(record=True, width=160))

    def mcp_servers(self):
        return self.servers


def test_slash_mcp_prints_the_session_s_servers(tmp_path: Path) -> None:
    status = McpServerStatus("time", "user config", True, "stdio", "failed", "did not start within 30 s", 0,
                             "mcp-server-time", "")
    host = _Host(tmp_path, ([status], ["a note"]))
    assert dispatch(host, "/mcp") is SlashOutcome.CONTINUE
    out = host.console.export_text()
    assert "time" in out and "failed" in out and "did not start within 30 s" in out and "a note" in out
    bare = _Host(tmp_path, None)
    dispatch(bare, "/mcp")
    assert "no MCP client" in bare.console.export_text()


def test_slash_context_names_mcp_servers_that_are_not_serving(tmp_path: Path) -> None:
    from mtagent.cli.context_render import WindowUsage

    failed = McpServerStatus("git", ".mcp.json", True, "stdio", "failed", "did not start within 30 s", 0, "uvx", "")
    ready = McpServerStatus("time", "user config", True, "stdio", "ready", "", 2, "mcp-server-time", "")

    @dataclass
    class ContextHost(_Host):
        session_id: str = "s"
        schemas_said: tuple | None = None

        def window_usage(self):
            return WindowUsage(16_000, 10_000, {"messages": 4_000, "system": 1_000})

        def session_report(self):
            return None

        def work_plan(self):
            return None

        def context_warnings(self):
            return []

    host = ContextHost(tmp_path, ([failed, ready], []))
    dispatch(host, "/context")
    out = host.console.export_text()
    assert "MCP server git: failed — did not start within 30 s" in out and "MCP server time" not in out
