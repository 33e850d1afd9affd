"""The engine's plan is shown where a user looks: run --json, sessions show, /context and the
explain UI — and a plan step's hostile text reaches none of them raw."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from model_script import script
from typer.testing import CliRunner

from mtagent.cli.app import app

runner = CliRunner()
STEPS = [{"step": "read the parser", "status": "done"}, {"step": "fix the <b>bug</b>", "status": "in_progress"},
         {"step": "run the tests", "status": "pending"}]


def _run(tmp_path: Path, steps: list) -> tuple[Path, dict]:
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, steps), "--json", "fix it"])
    assert result.exit_code == 0, result.output
    return project, json.loads(result.stdout)


def test_run_json_and_sessions_show_report_the_plan(tmp_path: Path) -> None:
    hostile = {"steps": [{"step": "pwn\x1b]0;owned\x07", "status": "done"}]}
    project, out = _run(tmp_path, [{"tool": "update_plan", "args": {"steps": STEPS, "note": "parser first"}},
                                   {"tool": "update_plan", "args": hostile}, "done"])
    assert out["plan"] == {"steps": STEPS, "note": "parser first"}  # the refused call changed nothing
    shown = runner.invoke(app, ["sessions", "show", "latest", "--cwd", str(project)])
    assert shown.exit_code == 0, shown.output
    assert "plan · 1/3 done; in progress: fix the <b>bug</b>" in shown.output
    assert "[~] fix the <b>bug</b> (in progress)" in shown.output and "[ ] run the tests (pending)" in shown.output
    assert "\x1b" not in shown.output and "\x07" not in shown.output


def test_run_json_says_null_without_a_plan(tmp_path: Path) -> None:
    assert _run(tmp_path, ["hi"])[1]["plan"] is None


def test_slash_context_plan_lines() -> None:
    from mtagent.cli import context_render
    from mtagent.context.ledger import validate_plan

    assert context_render.plan_lines(None) == []
    text = "\n".join(context_render.plan_lines(validate_plan(STEPS, "parser first")))
    assert "Plan · 1/3 done; in progress: fix the <b>bug</b>" in text and "[x] read the parser (done)" in text


def test_the_explain_ui_shows_the_plan_escaped(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="the UI needs the [ui] extra")
    from starlette.testclient import TestClient

    from mtagent.ui.app import UiOptions, create_app
    from mtagent.ui.records import Redactor

    project, out = _run(tmp_path, [{"tool": "update_plan", "args": {"steps": STEPS, "note": "parser first"}}, "done"])
    home = Path(os.environ["MTAGENT_HOME"])
    transcript = next(home.rglob(f"{out['session_id']}.jsonl"))
    client = TestClient(create_app(UiOptions(cwd=project, home=home, redactor=Redactor(()))), base_url="http://127.0.0.1")
    page = client.get(f"/p/{transcript.parent.name}/s/{out['session_id']}")
    assert page.status_code == 200, page.text
    assert "1/3 done; in progress: fix the &lt;b&gt;bug&lt;/b&gt;" in page.text
    assert "fix the <b>bug</b>" not in page.text and "run the tests" in page.text
