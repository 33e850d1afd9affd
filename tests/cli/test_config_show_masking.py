"""`config show` and `mcp list` name an MCP server's header and env keys, never their values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtagent.cli.app import app

runner = CliRunner()
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"  # shaped like a key: the redactor knew it
PLAIN = {"X-Team": "blue-falcon-42", "DB_PASSWORD": "hunter2", "MODE": "fast-lane"}  # nothing marks these


@pytest.fixture
def configured(tmp_path: Path, mtagent_home: Path) -> Path:
    (mtagent_home / "config.toml").write_text(
        '[mcp.servers.gh]\nurl = "http://127.0.0.1:9/mcp"\n'
        f'headers = {{Authorization = "Bearer {TOKEN}", X-Team = "{PLAIN["X-Team"]}"}}\n'
        '[mcp.servers.local]\ncommand = "no-such-mcp-server"\n'
        f'env = {{DB_PASSWORD = "{PLAIN["DB_PASSWORD"]}", MODE = "{PLAIN["MODE"]}"}}\n')
    (tmp_path / "proj").mkdir()
    return tmp_path / "proj"


def _leaks(text: str) -> list[str]:
    return [v for v in (TOKEN, *PLAIN.values()) if v in text]


def test_config_show_masks_every_mcp_header_and_env_value(configured: Path) -> None:
    text = runner.invoke(app, ["config", "show", "--cwd", str(configured)], env={"COLUMNS": "300"})
    assert text.exit_code == 0 and _leaks(text.stdout) == []
    for name in ("Authorization", "X-Team", "DB_PASSWORD", "MODE"):
        assert f'"{name}": "***"' in text.stdout
    data = json.loads(runner.invoke(app, ["config", "show", "--json", "--cwd", str(configured)]).stdout)
    servers = data["mcp"]["servers"]
    assert servers["gh"]["headers"] == {"Authorization": "***", "X-Team": "***"}
    assert servers["local"]["env"] == {"DB_PASSWORD": "***", "MODE": "***"}
    assert servers["gh"]["url"] == "http://127.0.0.1:9/mcp" and servers["local"]["command"] == "no-such-mcp-server"


def test_mcp_list_names_headers_and_env_without_values(configured: Path) -> None:
    text = runner.invoke(app, ["mcp", "list", "--no-start", "--cwd", str(configured)], env={"COLUMNS": "300"})
    raw = runner.invoke(app, ["mcp", "list", "--no-start", "--json", "--cwd", str(configured)])
    assert text.exit_code == 0 and raw.exit_code == 0
    assert _leaks(text.stdout) == [] and _leaks(raw.stdout) == []
    runs = {s["name"]: s["command"] for s in json.loads(raw.stdout)["servers"]}
    assert "Authorization" in runs["gh"] and "DB_PASSWORD" in runs["local"]
