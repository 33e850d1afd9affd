"""A repository's .mcp.json and [mcp] start nothing until the project is trusted; approvals ask by default."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tools.mcp.mcp_helpers import call, fixture_server, mcp_settings, tools_of

from mtagent import trust
from mtagent.agent.approval import ApprovalPolicy
from mtagent.cli.app import app
from mtagent.config import load_settings
from mtagent.tools.mcp import McpManager, discover_servers


def _planted(project: Path, marker: Path) -> dict:
    """A server whose mere start leaves a file behind (what a hostile repository would run)."""
    script = project / "evil.sh"
    script.write_text(f"#!/bin/sh\necho started >> {marker}\nexec sleep 30\n")
    script.chmod(0o755)
    return {"command": str(script)}


def _write_mcp_json(project: Path, servers: dict) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


def test_an_untrusted_mcp_json_starts_nothing(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    _write_mcp_json(project, {"evil": _planted(project, marker)})
    settings = load_settings(project)
    with McpManager.for_project(settings, project) as manager:
        assert manager.tools() == []
        [status] = manager.servers()
        assert (status.name, status.source, status.trusted, status.state) == ("evil", ".mcp.json", False, "untrusted")
        assert "mtagent trust" in status.note
        assert not manager._loop_box, "no loop, no thread, no process for an untrusted project"
    assert not marker.exists(), "the untrusted server was spawned"


def test_an_untrusted_project_config_starts_nothing(project: Path, tmp_path: Path, capsys) -> None:
    marker = tmp_path / "started"
    server = _planted(project, marker)
    (project / ".mtagent").mkdir()
    (project / ".mtagent" / "config.toml").write_text(f'[mcp.servers.evil]\ncommand = "{server["command"]}"\n')
    settings = load_settings(project)
    assert settings.mcp.servers == {}
    assert "mcp.servers" in capsys.readouterr().err  # the trust layer's warning names what it dropped
    with McpManager.for_project(settings, project) as manager:
        assert manager.tools() == []
        assert [(s.source, s.state) for s in manager.servers()] == [("project config", "untrusted")]
    assert not marker.exists()


def test_trusting_the_project_lets_its_servers_run(project: Path) -> None:
    _write_mcp_json(project, {"fx": fixture_server()})
    trust.set_trust(project, True)
    with McpManager.for_project(load_settings(project), project) as manager:
        tools = tools_of(manager)
        assert call(tools["mcp__fx__echo"], text="trusted").content == "trusted"
        assert [(s.source, s.trusted, s.state) for s in manager.servers()] == [(".mcp.json", True, "ready")]


def test_mtagent_trust_lists_what_will_run(project: Path) -> None:
    _write_mcp_json(project, {"fx": {"command": "node", "args": ["server.js", "--port", "1"], "env": {"TOKEN": "x"}}})
    result = CliRunner().invoke(app, ["trust", str(project)], input="y\n")
    assert result.exit_code == 0, result.output
    assert "fx (.mcp.json): node server.js --port 1 (env: TOKEN)" in result.output
    as_json = json.loads(CliRunner().invoke(app, ["trust", str(project), "--revoke", "--json"]).output)
    assert as_json["trusted"] is False and as_json["mcp_servers"] == ["MCP server fx (.mcp.json): node server.js --port 1 (env: TOKEN)"]


@pytest.mark.parametrize("content, problem", [
    (b"{not json", "not valid JSON"),
    (b'{"servers": {}}', 'no "mcpServers" object'),
    (b"[" * 100_000, "not valid JSON"),
])
def test_a_broken_mcp_json_is_a_note(project: Path, content: bytes, problem: str) -> None:
    (project / ".mcp.json").write_bytes(content)
    trust.set_trust(project, True)
    specs, notes = discover_servers(load_settings(project), project)
    assert specs == [] and problem in notes[0]


def test_an_mcp_json_pointing_at_a_device_is_not_read(project: Path) -> None:
    os.symlink("/dev/zero", project / ".mcp.json")
    trust.set_trust(project, True)
    specs, notes = discover_servers(load_settings(project), project)
    assert specs == [] and "not a regular file" in notes[0]


def test_hostile_entries_are_listed_as_invalid_not_started(project: Path) -> None:
    _write_mcp_json(project, {"sse": {"type": "sse", "url": "http://x"}, "both": {"command": "a", "url": "b"},
                              "odd": {"command": "a", "shell": True}, "notatable": "rm -rf /"})
    trust.set_trust(project, True)
    with McpManager.for_project(load_settings(project), project) as manager:
        assert manager.tools() == []
        states = {s.name: (s.state, s.note) for s in manager.servers()}
    assert states["sse"][0] == "invalid" and "not supported" in states["sse"][1]
    assert states["both"][0] == "invalid" and "exactly one of command" in states["both"][1]
    assert states["odd"][0] == "invalid" and "unknown key 'shell'" in states["odd"][1]
    assert states["notatable"][0] == "invalid"


def test_the_users_own_server_wins_a_name_clash_with_the_repository(project: Path) -> None:
    _write_mcp_json(project, {"fx": {"command": "repository-binary"}})
    trust.set_trust(project, True)
    settings = mcp_settings({"fx": fixture_server()})
    specs, _ = discover_servers(settings, project)
    assert [(s.name, s.source) for s in specs] == [("fx", "user config")]


def test_servers_from_several_config_layers_add_up(project: Path, mtagent_home: Path) -> None:
    (mtagent_home / "config.toml").write_text('[mcp.servers.mine]\ncommand = "mine"\n')
    (project / ".mtagent").mkdir()
    (project / ".mtagent" / "config.toml").write_text('[mcp.servers.theirs]\ncommand = "theirs"\n')
    trust.set_trust(project, True)
    specs, _ = discover_servers(load_settings(project), project)
    assert sorted((s.name, s.source) for s in specs) == [("mine", "user config"), ("theirs", "project config")]


def test_mcp_tools_ask_by_default_and_rules_match_them_by_glob() -> None:
    policy = ApprovalPolicy.from_rules({})
    assert policy.decide("mcp__time__get_current_time").decision == "ask"
    assert policy.decide("ls").decision == "allow"
    policy = ApprovalPolicy.from_rules({"mcp__time__*": "allow", "mcp__time__convert*": "deny",
                                        "mcp__git__git_status": "allow"})
    assert policy.decide("mcp__time__get_current_time").decision == "allow"
    assert policy.decide("mcp__time__convert_time").decision == "deny"  # the longer pattern wins
    assert policy.decide("mcp__git__git_status").decision == "allow"
    assert policy.decide("mcp__git__git_commit").decision == "ask"
    assert ApprovalPolicy.from_rules({}, "never").decide("mcp__x__y").decision == "deny"


def test_an_untrusted_mcp_json_starts_nothing_in_a_real_session(project: Path, tmp_path: Path) -> None:
    from mtagent.agent.scripted import ScriptedChatModel
    from mtagent.agent.session import AgentSession

    marker = tmp_path / "started"
    _write_mcp_json(project, {"evil": _planted(project, marker)})
    with AgentSession.create(project, model=ScriptedChatModel(["hello"])) as session:
        assert session.run_turn("hi").status == "done"
        assert not any(name.startswith("mcp__") for name in session.tools)
        assert [(s.name, s.state) for s in session.parts.mcp.servers()] == [("evil", "untrusted")]
    assert not marker.exists(), "a server from an untrusted .mcp.json was spawned"


def test_the_first_run_question_lists_the_servers_before_they_can_run(project: Path) -> None:
    from mtagent.cli.trust_cmd import answer_first_run, first_run_question

    _write_mcp_json(project, {"fx": {"command": "node", "args": ["srv.js"]}})
    question = first_run_question(project)
    assert question is not None and "MCP server fx (.mcp.json): node srv.js" in question
    answer_first_run(project, "n")
    assert first_run_question(project) is None and trust.decision(project) is False


def test_without_the_mcp_sdk_a_configured_server_is_failed_with_what_to_install(project: Path, monkeypatch) -> None:
    import sys

    for name in [n for n in sys.modules if n == "mtagent.tools.mcp.server"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp → ImportError, as without the extra
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        assert manager.tools() == []
        [status] = manager.servers()
    assert status.state == "failed" and "pip install 'mtagent[mcp]'" in status.note
