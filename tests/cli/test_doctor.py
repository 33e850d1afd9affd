"""``mtagent doctor`` says which sandbox mode shell commands run in, and why (issue 37)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent.tools import sandbox


def test_doctor_says_off_when_the_user_turned_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTAGENT_SANDBOX__MODE", "off")
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0 and result.stdout.startswith('sandbox: off (sandbox.mode = "off")')


def test_doctor_without_bubblewrap_says_why_and_fails_when_the_sandbox_is_required(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.runtime, "bwrap_path", lambda: None)
    monkeypatch.setenv("MTAGENT_SANDBOX__MODE", "on")
    result = CliRunner().invoke(app, ["doctor", "--json"])
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["sandbox"] == "unavailable"
    assert "bubblewrap (bwrap) is not installed" in report["reason"]


@pytest.mark.skipif(sandbox.probe() is not None, reason=f"sandbox cannot run here: {sandbox.probe()}")
def test_doctor_says_on_where_bubblewrap_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTAGENT_SANDBOX__MODE", "auto")
    monkeypatch.setenv("MTAGENT_SANDBOX__ALLOW_HOSTS", '["pypi.org"]')
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0 and result.stdout.startswith("sandbox: on") and "pypi.org" in result.stdout
