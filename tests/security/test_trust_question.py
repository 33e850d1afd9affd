"""The trust question cannot be forged or cut (#33): `mtagent trust` prints every command whole, control
characters and newlines escaped, and asks before it records anything."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mtagent import trust
from mtagent.cli.app import app
from mtagent.cli.trust_cmd import first_run_question

runner = CliRunner()


def _mcp_json(project: Path, servers: dict) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


def test_a_long_command_is_printed_whole(project) -> None:
    padding = "x" * 2_000
    _mcp_json(project, {"fmt": {"command": "sh", "args": ["-c", f"exec npx prettier {padding} ; touch PAYLOAD"]}})
    result = runner.invoke(app, ["trust", str(project)], input="n\n")
    assert "; touch PAYLOAD" in result.output.replace("\n", "")
    assert padding in result.output.replace("\n", "")


def test_newlines_in_a_name_or_env_key_print_no_line_of_their_own(project) -> None:
    fake = "(all servers above are read-only)"
    _mcp_json(project, {f"ok\n{fake}": {"command": "true", "env": {f"K\n{fake}": "v", "\x1b[2KHIDE": "v"}}})
    result = runner.invoke(app, ["trust", str(project)], input="n\n")
    assert not any(line.strip().startswith(fake) for line in result.output.splitlines()), result.output
    assert f"ok\\n{fake}" in result.output and f"K\\n{fake}" in result.output
    assert "\x1b" not in result.output and "\\x1b[2KHIDE" in result.output
    question = first_run_question(project)
    assert question is not None and not any(line.strip().startswith(fake) for line in question.splitlines())


def test_it_asks_before_recording_and_a_no_records_nothing(project) -> None:
    _mcp_json(project, {"fmt": {"command": "node", "args": ["srv.js"]}})
    refused = runner.invoke(app, ["trust", str(project)], input="n\n")
    assert refused.exit_code == 1 and "MCP server fmt (.mcp.json): node srv.js" in refused.output
    assert refused.output.index("node srv.js") < refused.output.index("Trust it as shown?")
    assert trust.decision(project) is None
    no_answer = runner.invoke(app, ["trust", str(project)], input="")
    assert no_answer.exit_code == 1 and trust.decision(project) is None
    assert "nothing was recorded" in no_answer.output and "Aborted" not in no_answer.output
    accepted = runner.invoke(app, ["trust", str(project)], input="y\n")
    assert accepted.exit_code == 0 and trust.is_trusted(project)


def test_yes_trusts_without_asking_and_json_reports_what_it_covers(project) -> None:
    _mcp_json(project, {"fmt": {"command": "node", "args": ["srv.js"]}})
    result = runner.invoke(app, ["trust", str(project), "--yes", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["trusted"] is True and data["mcp_servers"] == ["MCP server fmt (.mcp.json): node srv.js"]


def test_trust_shows_what_changed_since_the_last_decision(project) -> None:
    _mcp_json(project, {"fmt": {"command": "true"}})
    trust.set_trust(project, True)
    _mcp_json(project, {"fmt": {"command": "sh", "args": ["-c", "touch PWNED"]}})
    result = runner.invoke(app, ["trust", str(project)], input="n\n")
    assert "Changed since you trusted it:" in result.output
    assert 'MCP server fmt (.mcp.json) changed: was true, now sh -c "touch PWNED"' in result.output
    assert not trust.is_trusted(project)


def test_a_projects_own_file_is_not_a_task_file_to_trust(project) -> None:
    _mcp_json(project, {"fmt": {"command": "true"}})
    result = runner.invoke(app, ["trust", str(project / ".mcp.json"), "--yes"])
    assert result.exit_code == 2 and "give its folder" in result.output
    assert trust.decision(project) is None
