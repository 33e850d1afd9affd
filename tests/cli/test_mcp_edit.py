"""``mtagent mcp add / get / remove`` edit the config a user edits by hand (issue 36)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent.config import load_settings
from mtagent.errors import ConfigError

runner = CliRunner()


def _config(home: Path) -> dict:
    return tomllib.loads((home / "config.toml").read_text())


def test_add_writes_a_server_table_the_settings_read_and_keeps_the_user_s_comments(mtagent_home: Path,
                                                                                   tmp_path: Path) -> None:
    (mtagent_home / "config.toml").write_text("# mine\n[context]\ntoken_limit = 90000  # on purpose\n")
    result = runner.invoke(app, ["mcp", "add", "time", "-e", "TZ=UTC", "--", "python3", "-I", "-m",
                                 "mcp_server_time"])
    assert result.exit_code == 0, result.output
    text = (mtagent_home / "config.toml").read_text()
    assert "# mine" in text and "# on purpose" in text
    server = load_settings(tmp_path).mcp.servers["time"]
    assert (server.command, server.args, server.env) == ("python3", ["-I", "-m", "mcp_server_time"], {"TZ": "UTC"})


def test_add_an_http_server_with_a_header(mtagent_home: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["mcp", "add", "docs", "--url", "https://mcp.example/mcp", "-H", "X-Key: abc"])
    assert result.exit_code == 0, result.output
    server = load_settings(tmp_path).mcp.servers["docs"]
    assert server.url == "https://mcp.example/mcp" and server.headers == {"X-Key": "abc"}


def test_get_masks_values_and_remove_leaves_the_rest(mtagent_home: Path) -> None:
    runner.invoke(app, ["mcp", "add", "a", "-e", "TOKEN=s3cret-value", "--", "srv"])
    runner.invoke(app, ["mcp", "add", "b", "--", "other"])
    shown = runner.invoke(app, ["mcp", "get", "a", "--json"])
    assert shown.exit_code == 0 and "s3cret-value" not in shown.output
    assert json.loads(shown.stdout)["env"] == {"TOKEN": "***"}
    assert runner.invoke(app, ["mcp", "remove", "a"]).exit_code == 0
    assert list(_config(mtagent_home)["mcp"]["servers"]) == ["b"]


def test_project_scope_writes_the_project_s_config(mtagent_home: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["mcp", "add", "own", "--scope", "project", "--cwd", str(tmp_path), "--", "srv"])
    assert result.exit_code == 0, result.output
    assert tomllib.loads((tmp_path / ".mtagent" / "config.toml").read_text())["mcp"]["servers"]["own"] == \
        {"command": "srv", "args": []}
    assert "mtagent trust" in result.output
    assert not (mtagent_home / "config.toml").exists()


@pytest.mark.parametrize("argv, says", [
    (["mcp", "add", "x"], "after `--`"),
    (["mcp", "add", "x", "--url", "http://h", "--", "cmd"], "not both"),
    (["mcp", "add", "a.b", "--", "cmd"], "invalid server name"),
    (["mcp", "add", "a\nb", "--", "cmd"], "invalid server name"),
    (["mcp", "add", "x", "-e", "NOEQUALS", "--", "cmd"], "KEY=VALUE"),
    (["mcp", "add", "x", "--scope", "global", "--", "cmd"], "--scope takes"),
    (["mcp", "get", "nope"], "no MCP server 'nope'"),
    (["mcp", "remove", "nope"], "no MCP server 'nope'"),
])
def test_bad_input_is_a_usage_error_that_says_what_to_do_and_writes_nothing(argv, says, mtagent_home: Path) -> None:
    result = runner.invoke(app, argv)
    assert result.exit_code == 2 and says in result.output, result.output
    assert not (mtagent_home / "config.toml").exists()


def test_add_refuses_a_clash_unless_replace(mtagent_home: Path) -> None:
    assert runner.invoke(app, ["mcp", "add", "a", "--", "one"]).exit_code == 0
    again = runner.invoke(app, ["mcp", "add", "a", "--", "two"])
    assert again.exit_code == 2 and "--replace" in again.output
    assert runner.invoke(app, ["mcp", "add", "a", "--replace", "--", "two"]).exit_code == 0
    assert _config(mtagent_home)["mcp"]["servers"]["a"]["command"] == "two"


def test_a_broken_config_file_is_not_overwritten(mtagent_home: Path) -> None:
    (mtagent_home / "config.toml").write_text("[context\n")
    result = runner.invoke(app, ["mcp", "add", "a", "--", "srv"])
    assert result.exit_code == 2 and "fix it by hand" in result.output
    assert (mtagent_home / "config.toml").read_text() == "[context\n"


@pytest.mark.parametrize("table, agent", [("mcp_servers", "Codex"), ("mcpServers", "Claude Code")])
def test_another_agent_s_spelling_gets_a_one_line_hint(table: str, agent: str, mtagent_home: Path,
                                                       tmp_path: Path) -> None:
    (mtagent_home / "config.toml").write_text(f'[{table}.time]\ncommand = "mcp-server-time"\n')
    with pytest.raises(ConfigError, match=rf"{agent}'s spelling; mtagent spells it \[mcp\.servers\.NAME\]"):
        load_settings(tmp_path)
