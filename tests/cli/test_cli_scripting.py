"""Scripting: lazy command table, groups without a subcommand, completion, session-id prefixes."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from mtagent.cli.app import LAZY_COMMANDS, app, load_command
from mtagent.cli.session_options import resolve_session_id
from mtagent.errors import SessionNotFound, UsageError

runner = CliRunner()


@pytest.mark.parametrize("name", sorted(LAZY_COMMANDS))
def test_lazy_one_liner_equals_the_command_s_own_help(name: str) -> None:
    command = load_command(name)
    assert command is not None, name
    assert command.get_short_help_str(limit=500) == LAZY_COMMANDS[name][1]


def test_root_help_lists_every_command_and_completion() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for name in LAZY_COMMANDS:
        assert name in result.output
    assert "--install-completion" in result.output


@pytest.mark.parametrize("group", ["memory", "sessions", "config"])
def test_a_group_without_subcommand_prints_its_help_and_exits_0(group: str) -> None:
    result = runner.invoke(app, [group])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output and "error" not in result.output


def test_main_turns_no_args_is_help_into_exit_0(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from mtagent.cli import app as app_module

    extra = typer.Typer(no_args_is_help=True, help="a group someone registers eagerly")
    extra.command("x")(lambda: None)
    extra.command("y")(lambda: None)
    app_module.app.add_typer(extra, name="extra-group")
    monkeypatch.setattr("sys.argv", ["mtagent", "extra-group"])
    try:
        with pytest.raises(SystemExit) as exit_:
            app_module.main()
    finally:
        app_module.app.registered_groups.pop()
    assert exit_.value.code == 0
    assert "Usage:" in capsys.readouterr().out


def test_session_id_prefix_latest_and_ambiguity(tmp_path: Path) -> None:
    ids = ["20261201T010000000-aaaaaa", "20261201T020000000-bbbbbb", "20261202T000000000-cccccc"]
    assert resolve_session_id(tmp_path, "latest", ids) == "20261202T000000000-cccccc"
    assert resolve_session_id(tmp_path, "20261202", ids) == "20261202T000000000-cccccc"
    assert resolve_session_id(tmp_path, "20261201T020000000-bbbbbb", ids) == "20261201T020000000-bbbbbb"
    with pytest.raises(UsageError, match="matches 2 sessions"):
        resolve_session_id(tmp_path, "20261201", ids)
    with pytest.raises(SessionNotFound, match="no session 2027"):
        resolve_session_id(tmp_path, "2027", ids)
    with pytest.raises(UsageError, match="invalid session id"):
        resolve_session_id(tmp_path, "../../etc/passwd", ids)
    with pytest.raises(SessionNotFound, match="no sessions yet"):
        resolve_session_id(tmp_path / "elsewhere", "latest", [])
