"""A user's own MCP server never starts in an untrusted project (issue 33, critical).

``python -m pkg`` puts the working folder first on ``sys.path`` and ``npx`` resolves ``node_modules``
from it: a user server started in a cloned repository runs the repository's code as the user's server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tools.mcp.mcp_helpers import mcp_settings

from mtagent import trust
from mtagent.cli.app import app
from mtagent.tools.mcp import McpManager, discover_servers

runner = CliRunner()


def _plant_module(project: Path, marker: Path) -> None:
    """The repository's own ``mcp_server_time`` package, which ``-m`` would import from the project."""
    pkg = project / "mcp_server_time"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\n")


def _user_config(home: Path, servers: dict) -> None:
    lines = []
    for name, table in servers.items():
        lines.append(f"[mcp.servers.{name}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in table.items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def test_mcp_list_in_an_untrusted_clone_does_not_import_the_clone_s_module(
        project: Path, tmp_path: Path, mtagent_home: Path) -> None:
    marker = tmp_path / "marker"
    _plant_module(project, marker)
    _user_config(mtagent_home, {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}})
    result = runner.invoke(app, ["mcp", "list", "--json", "--cwd", str(project)])
    assert result.exit_code == 0, result.output
    assert not marker.exists(), "the user's server imported the repository's mcp_server_time"
    [server] = json.loads(result.stdout)["servers"]
    assert server["state"] == "ready", server  # the real package, from site-packages, started


def test_a_user_server_without_cwd_starts_in_its_own_folder_under_the_home(project: Path, mtagent_home: Path) -> None:
    settings = mcp_settings({"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}})
    [spec], _ = discover_servers(settings, project)
    assert Path(spec.workdir) == mtagent_home / "mcp" / spec.key
    assert not Path(spec.workdir).is_relative_to(project)


def test_a_user_server_s_relative_cwd_in_an_untrusted_project_cannot_start(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    _plant_module(project, marker)
    settings = mcp_settings({"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"], "cwd": "."}})
    [spec], _ = discover_servers(settings, project)
    assert not spec.startable
    assert "not trusted" in spec.error and "absolute cwd" in spec.error
    with McpManager.for_project(settings, project) as manager:
        assert manager.tools() == []
    assert not marker.exists()


def test_a_user_server_s_relative_cwd_in_a_trusted_project_is_the_project_s_folder(project: Path) -> None:
    (project / "sub").mkdir()
    trust.set_trust(project, True)
    settings = mcp_settings({"srv": {"command": "x", "cwd": "sub"}})
    [spec], _ = discover_servers(settings, project.resolve())
    assert spec.startable and Path(spec.workdir) == project.resolve() / "sub"


@pytest.mark.parametrize("cwd", ["/opt/tools", "~/servers"])
def test_an_absolute_cwd_is_honoured_as_given(project: Path, cwd: str) -> None:
    settings = mcp_settings({"srv": {"command": "x", "cwd": cwd}})
    [spec], _ = discover_servers(settings, project)
    assert Path(spec.workdir) == Path(cwd).expanduser()


def test_a_trusted_project_s_own_server_starts_in_the_project(project: Path) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"own": {"command": "x"}}}))
    trust.set_trust(project, True)
    [spec], _ = discover_servers(mcp_settings({}), project.resolve())
    assert spec.source == ".mcp.json" and spec.startable and Path(spec.workdir) == project.resolve()
