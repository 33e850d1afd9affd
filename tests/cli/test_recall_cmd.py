"""`mtagent recall`, `/recall` and `mtagent memory` (list, add, remove, --namespace/--key/--ttl/--expired)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from transcripts import write_exchange
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent.cli.recall_cmd import print_recall

runner = CliRunner()


def _session(root: Path, sid: str = "s1") -> None:
    write_exchange(root, "why does checkout_total_cents overflow?", "shell", {"command": "pytest"},
                   "OverflowError: checkout_total_cents exceeded int32", sid=sid)


def test_recall_prints_ranked_hits_with_references(tmp_path: Path) -> None:
    _session(tmp_path)
    result = runner.invoke(app, ["recall", "OverflowError checkout_total_cents", "--cwd", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "[1] session s1 message t1" in result.output and "ref: msg:s1:t1" in result.output
    assert result.output.strip().splitlines()[-1].startswith("vector backend: none (keyword search;")


def test_recall_json_and_session_filter(tmp_path: Path) -> None:
    _session(tmp_path, "s1")
    _session(tmp_path, "s2")
    result = runner.invoke(app, ["recall", "checkout_total_cents", "--session", "s2", "--json",
                                 "--cwd", str(tmp_path)])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)
    assert hits and {h["session"] for h in hits} == {"s2"}
    assert {"ref", "reference", "authority", "freshness", "temperature", "confidence"} <= set(hits[0])
    full = runner.invoke(app, ["recall", "--ref", hits[0]["ref"], "--json", "--cwd", str(tmp_path)])
    assert json.loads(full.output)["text"]


def test_recall_usage_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    for args in (["recall", "--cwd", str(tmp_path)], ["recall", "x", "--session", "../x", "--cwd", str(tmp_path)],
                 ["recall", "x", "--scope", "nope", "--cwd", str(tmp_path)],
                 ["recall", "--ref", "msg:none:x", "--cwd", str(tmp_path)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "error:" in result.output


def test_slash_recall(tmp_path: Path) -> None:
    _session(tmp_path)
    console = Console(record=True, width=200)
    print_recall(console, tmp_path, "checkout_total_cents")
    shown = console.export_text()
    assert "ref: msg:s1:" in shown and shown.strip().splitlines()[-1].startswith("vector backend: ")
    print_recall(console, tmp_path, "--ref msg:s1:u1")
    assert "why does checkout_total_cents overflow?" in console.export_text()


def test_memory_namespaces_ttl_and_expired_listing(tmp_path: Path) -> None:
    cwd = ["--cwd", str(tmp_path)]
    assert runner.invoke(app, ["memory", "add", "ship on fridays", "--namespace", "team", "--key", "ship",
                               *cwd]).exit_code == 0
    assert runner.invoke(app, ["memory", "add", "old staging host", "--namespace", "project", "--ttl",
                               "2020-01-01", *cwd]).exit_code == 0
    team = runner.invoke(app, ["memory", "list", "--namespace", "team", *cwd]).output
    assert "ship on fridays" in team and "key=ship" in team
    expired = runner.invoke(app, ["memory", "list", "--namespace", "project", "--expired", "--json", *cwd]).output
    rows = json.loads(expired)
    assert [r["text"] for r in rows] == ["old staging host"] and rows[0]["expired"] is True
    none = runner.invoke(app, ["memory", "list", "--namespace", "team", "--expired", *cwd]).output
    assert "(none)" in none
    bad = runner.invoke(app, ["memory", "list", "--namespace", "tenant", *cwd])
    assert bad.exit_code == 2


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
