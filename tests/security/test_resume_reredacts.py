"""A secret configured after a session was written never reaches the model on resume, nor the
terminal from ``mtagent recall`` (#27): what was recorded is redacted again with today's secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel
from mtagent.agent.session import AgentSession
from mtagent.cli.app import app
from mtagent.config import Settings

LATER_SECRET = "corp-intranet-passphrase-7731"  # no key shape, not in the environment: unknown at first


def _settings(*secrets: str) -> Settings:
    return Settings.model_validate({"agent": {"retry_base_seconds": 0.0}, "session_memory": {"enabled": False},
                                    "security": {"redact_values": list(secrets)}})


@pytest.fixture
def written(project: Path) -> tuple[Path, str]:
    with AgentSession.create(project, model=ScriptedChatModel([f"noted: {LATER_SECRET}"]), settings=_settings(),
                             approval="never") as s:
        s.run_turn(f"remember the passphrase {LATER_SECRET} for the deploy")
        sid = s.session_id
        transcript = s.transcript_path
    assert LATER_SECRET in transcript.read_text(), "the secret was not known when the session was written"
    return project, sid


def test_resume_redacts_the_history_with_todays_secrets_before_it_is_sent(written: tuple[Path, str]) -> None:
    project, sid = written
    model = ScriptedChatModel(["ok"])
    with AgentSession.resume(sid, project, model=model, settings=_settings(LATER_SECRET), approval="never") as s:
        s.run_turn("go on with the deploy")
    sent = "\n".join(str(m.content) for m in model.calls[0])
    assert "remember the passphrase" in sent and LATER_SECRET not in sent


@pytest.mark.parametrize("args", [["recall", "passphrase"], ["recall", "passphrase", "--json"]])
def test_recall_prints_no_secret_configured_after_indexing(written: tuple[Path, str], args: list[str]) -> None:
    project, _ = written
    runner = CliRunner()
    first = runner.invoke(app, [*args, "--cwd", str(project)])
    assert first.exit_code == 0 and LATER_SECRET in first.output, "indexed before the secret was configured"
    paths.global_config_path().parent.mkdir(parents=True, exist_ok=True)
    paths.global_config_path().write_text(f'[security]\nredact_values = ["{LATER_SECRET}"]\n')
    result = runner.invoke(app, [*args, "--cwd", str(project)])
    assert result.exit_code == 0 and "passphrase" in result.output and LATER_SECRET not in result.output
    if "--json" in args:
        refs = [hit["ref"] for hit in json.loads(result.output)]
        full = runner.invoke(app, ["recall", "--ref", refs[0], "--cwd", str(project)])
        assert full.exit_code == 0 and LATER_SECRET not in full.output
