"""`mtagent memory list|add|remove` through typer's runner."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from mtagent.cli.app import app

runner = CliRunner()


def _run(*args: str) -> str:
    result = runner.invoke(app, ["memory", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_add_twice_stores_once() -> None:
    assert "remembered" in _run("add", "prefer small commits")
    assert "already remembered" in _run("add", "Prefer  small commits")
    listed = _run("list", "--global")
    assert listed.count("prefer small commits") == 1


def test_remove_by_number_and_by_text(tmp_path: Path) -> None:
    for fact in ("one fact", "two fact", "three fact"):
        _run("add", fact, "--project", "--cwd", str(tmp_path))
    assert "removed (project): two fact" in _run("remove", "2", "--project", "--cwd", str(tmp_path))
    assert "removed (project): three fact" in _run("remove", "three fact", "--project", "--cwd", str(tmp_path))
    listed = _run("list", "--project", "--cwd", str(tmp_path))
    assert "1. one fact" in listed and "two" not in listed and "three" not in listed


def test_list_without_scope_shows_both(tmp_path: Path) -> None:
    _run("add", "global thing")
    _run("add", "project thing", "--project", "--cwd", str(tmp_path))
    out = _run("list", "--cwd", str(tmp_path))
    assert "global memory" in out and "project memory" in out
    assert out.index("global thing") < out.index("project thing")


def test_remove_obsolete_keeps_line_struck_through() -> None:
    _run("add", "uses python 3.10")
    assert "marked obsolete" in _run("remove", "1", "--obsolete")
    assert "(obsolete)" in _run("list", "--global")


def test_unknown_number_is_one_line_error_with_exit_code() -> None:
    result = runner.invoke(app, ["memory", "remove", "7"])
    assert result.exit_code == 2
    assert "no global memory number 7" in result.output
    assert "Traceback" not in result.output


def test_list_json_has_both_scopes_with_numbers(tmp_path: Path) -> None:
    import json

    _run("add", "global thing")
    _run("add", "project thing", "--project", "--cwd", str(tmp_path))
    _run("remove", "1", "--project", "--obsolete", "--cwd", str(tmp_path))
    rows = json.loads(_run("list", "--cwd", str(tmp_path), "--json"))
    assert [(r["scope"], r["number"], r["text"], r["obsolete"]) for r in rows] == [
        ("global", 1, "global thing", False), ("project", 1, "project thing", True)]
    assert json.loads(_run("list", "--global", "--json", "--cwd", str(tmp_path)))[0]["scope"] == "global"
