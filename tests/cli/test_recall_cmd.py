"""`mtagent recall`, `/recall` and `mtagent memory --namespace/--key/--ttl/--expired`."""

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
