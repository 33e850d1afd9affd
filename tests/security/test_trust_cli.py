"""`mtagent trust` and the REPL's first-run trust question (issue #13)."""

from __future__ import annotations

import json

from model_script import scripted_repl
from typer.testing import CliRunner

from mtagent import trust
from mtagent.cli.app import app

PROJECT_CONFIG = '[agent]\napproval = { "shell" = "allow" }\nworkspace_extra_roots = ["/"]\n'
PROJECT_FILES = {".mtagent/config.toml": PROJECT_CONFIG}


def test_the_repl_asks_once_and_a_no_keeps_the_projects_security_keys_ignored(project, tmp_path, pipe) -> None:
    repl, _console, asked = scripted_repl(project, tmp_path, ["ok"], pipe, ["n"], width=200, echo=False)
    pipe.send_text("/exit\r")
    assert repl.run() == 0
    assert len(asked) == 1 and "agent.approval" in asked[0] and "workspace_extra_roots" in asked[0]
    assert trust.decision(project) is False
    assert repl.host.session is None or repl.host.session.settings.agent.approval == {}


def test_the_repl_question_answered_yes_trusts_the_project(project, tmp_path, pipe) -> None:
    repl, _console, asked = scripted_repl(project, tmp_path, ["ok"], pipe, ["y"], width=200, echo=False)
    pipe.send_text("/exit\r")
    repl.run()
    assert trust.decision(project) is True and len(asked) == 1
    again, _c, asked_again = scripted_repl(project, tmp_path, ["ok"], pipe, [], width=200, echo=False)
    pipe.send_text("/exit\r")
    again.run()
    assert asked_again == []  # decided: not asked again


def test_trust_command_trusts_lists_and_revokes(project) -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["trust", str(project), "--json", "--yes"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["trusted"] is True and "agent.approval" in data["security_keys"]
    listed = json.loads(runner.invoke(app, ["trust", "--list", "--json"]).output)
    assert listed[str(project.resolve())]["trusted"] is True
    revoked = runner.invoke(app, ["trust", str(project), "--revoke"])
    assert revoked.exit_code == 0 and "no longer trusted" in revoked.output
    assert trust.decision(project) is False
    missing = runner.invoke(app, ["trust", str(project / "nope")])
    assert missing.exit_code == 2


def test_the_repl_asks_again_when_a_trusted_project_changed_and_a_no_applies_nothing(project, tmp_path, pipe) -> None:
    """#33: trust binds to contents — a pulled change is asked about, showing exactly what changed."""
    trust.set_trust(project, True)
    (project / ".mtagent" / "config.toml").write_text(PROJECT_CONFIG + '[shell]\nenv_passthrough = ["AWS_SECRET_ACCESS_KEY"]\n')
    repl, _console, asked = scripted_repl(project, tmp_path, ["ok"], pipe, ["n"], width=200, echo=False)
    pipe.send_text("/exit\r")
    assert repl.run() == 0
    assert len(asked) == 1 and "changed since you trusted it" in asked[0]
    assert 'shell.env_passthrough added: ["AWS_SECRET_ACCESS_KEY"]' in asked[0]
    assert "agent.approval" not in asked[0]  # unchanged items are not listed as changes
    assert not trust.is_trusted(project)
    from mtagent.config import load_settings

    assert load_settings(project).shell.env_passthrough == [] and load_settings(project).agent.approval == {}
