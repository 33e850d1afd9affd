"""Configured secrets (issue #13): values the user names in ``[security]`` and the secrets the
settings hold themselves (a DSN's password, an auth header in model options) are redacted like
environment secrets — in payloads, the transcript, artifacts, exports, ``sessions show``, the UI,
``config show`` — and a project's own config can add redactions but never remove one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtagent import paths, trust
from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.cli.app import app
from mtagent.config import load_settings
from mtagent.errors import ConfigError
from mtagent.redaction import Redactor, collect_secrets

# None of these is recognisable by its name or shape: only the settings make them secrets.
VALUE = "horse battery staple canary"  # security.redact_values
ENV_NAME, ENV_VALUE = "BUILD_LABEL_NOTE", "plain words env canary"  # security.redact_env
DSN_PW = "dsn-canary-pw"  # storage.dsn = "... password=dsn-canary-pw"
URL_PW = "urlcanarypw"  # agent.base_url = http://u:urlcanarypw@...
HEADER = "hdr-canary-token"  # agent.model_options[...].extra_headers.Authorization = "Bearer ..."
TYPED = "tok-typed-canary-value"  # an env secret (SERVICE_TOKEN) the user pastes into a message
NEEDLES = [VALUE, ENV_VALUE, DSN_PW, URL_PW, HEADER, TYPED]
ADDED = "projAddedCanary7Qx9Lm2Vb8Nz4Kt"  # a project's own redaction: random-looking, so it needs no trust
CONFIG = f"""
[security]
redact_values = ["{VALUE}"]
redact_env = ["{ENV_NAME}"]
[storage]
dsn = "host=db.internal user=app password={DSN_PW}"
[agent]
retry_base_seconds = 0.0
base_url = "http://u:{URL_PW}@127.0.0.1:9/v1"
model_options = {{ "scripted" = {{ extra_headers = {{ Authorization = "Bearer {HEADER}" }} }} }}
[session_memory]
enabled = false
"""


@pytest.fixture
def configured(project: Path, monkeypatch: pytest.MonkeyPatch, mtagent_home: Path) -> Path:
    monkeypatch.setenv(ENV_NAME, ENV_VALUE)
    monkeypatch.setenv("SERVICE_TOKEN", TYPED)
    (mtagent_home / "config.toml").write_text(CONFIG)
    return project


def _leaks(where: str, text: str, needles: list[str] = NEEDLES) -> list[str]:
    return [f"{where}: {n}" for n in needles if n in text]


def test_without_the_settings_none_of_the_canaries_would_be_redacted(configured: Path) -> None:
    """The guard for every test below: the canaries pass the environment/shape redaction untouched."""
    untyped = [n for n in NEEDLES if n != TYPED]
    text = " ".join(untyped) + f" password={DSN_PW} http://u:{URL_PW}@h"
    bare = Redactor(collect_secrets(os.environ)).text(" ".join(untyped))
    assert all(n in bare for n in untyped)
    with_settings = Redactor(collect_secrets(os.environ, settings=load_settings(configured))).text(text)
    assert _leaks("redacted", with_settings) == []


def test_configured_canaries_reach_no_payload_transcript_artifact_export_show_or_config(configured: Path,
                                                                                        mtagent_home: Path) -> None:
    lines = "\n".join(NEEDLES)
    (configured / "notes.txt").write_text(lines + "\n")
    (configured / "big.log").write_text(("x = " + lines.replace("\n", "\nx = ") + "\n") * 2500)
    model = ScriptedChatModel([
        tool_call("read_file", {"file_path": "notes.txt"}, id="c1"),
        tool_call("grep", {"pattern": "x = ", "path": "big.log"}, id="c2"),
        tool_call("shell", {"command": f"cat notes.txt; echo ${ENV_NAME}"}, id="c3"),
        f"I saw {VALUE} and {DSN_PW}",
    ])
    with AgentSession.create(configured, model=model, approval="auto") as s:  # settings from config.toml
        s.run_turn(f"the deploy token is {TYPED}; the note says {VALUE}")
        sid, transcript = s.session_id, s.transcript_path
    leaks: list[str] = []
    for i, sent in enumerate(model.calls):
        leaks += _leaks(f"payload {i}", "\n".join(str(m.content) + str(getattr(m, "tool_calls", "")) for m in sent))
    leaks += _leaks("transcript", transcript.read_text(errors="replace"))
    artifacts = [p for p in mtagent_home.rglob("*") if p.is_file() and "artifacts" in p.parts]
    assert any("tool-results" in p.parts for p in artifacts), "the grep result was expected to be persisted"
    for p in artifacts:
        leaks += _leaks(f"artifact {p.name}", p.read_text(errors="replace"))
    runner = CliRunner()
    for args in (["sessions", "show", sid, "--full"], ["sessions", "show", sid, "--raw"],
                 ["sessions", "export", sid], ["sessions", "export", sid, "--format", "md"],
                 ["config", "show"], ["config", "show", "--json"]):
        result = runner.invoke(app, [*args, "--cwd", str(configured)])
        assert result.exit_code == 0, result.output
        leaks += _leaks(" ".join(args), result.output)
    assert leaks == [], "\n".join(leaks)
    assert "[redacted]" in transcript.read_text()


def test_a_transcript_and_artifact_written_before_the_setting_are_shown_redacted(configured: Path) -> None:
    """Readers redact on the way out: ``sessions show --full``, the Markdown export and the UI."""
    sid = "20260101T000000000-abcdef"
    path = paths.session_transcript_path(configured, sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    art_dir = paths.session_artifact_dir(configured, sid) / "tool-results"
    art_dir.mkdir(parents=True)
    (art_dir / "c1.txt").write_text(f"old artifact {VALUE} {ENV_VALUE}\n")
    records = [
        {"type": "session_start", "session_id": sid, "cwd": str(configured), "timestamp": "2026-01-01T00:00:00Z"},
        {"type": "transcript_message", "role": "user", "id": "m1", "content": f"old {VALUE}",
         "timestamp": "2026-01-01T00:00:01Z"},
        {"type": "transcript_message", "role": "tool", "id": "m2", "name": "shell", "tool_call_id": "c1",
         "content": f"preview {DSN_PW}", "toolUseResult": {"artifact": "tool-results/c1.txt"},
         "timestamp": "2026-01-01T00:00:02Z"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    runner = CliRunner()
    leaks: list[str] = []
    for args in (["sessions", "show", sid, "--full"], ["sessions", "show", sid],
                 ["sessions", "export", sid, "--format", "md"]):
        result = runner.invoke(app, [*args, "--cwd", str(configured)])
        assert result.exit_code == 0, result.output
        leaks += _leaks(" ".join(args), result.output)
    pytest.importorskip("starlette")
    from mtagent.ui.app import Pages, UiOptions
    from mtagent.ui.records import read_range

    pages = Pages(UiOptions(cwd=configured, settings=load_settings(configured)))
    leaks += _leaks("ui records", json.dumps(read_range(path, 0, len(records), pages.redactor)))
    assert leaks == [], "\n".join(leaks)


def test_the_middleware_session_redacts_configured_secrets_in_records_and_artifacts(configured: Path) -> None:
    from mtagent.integrations.thread_session import open_thread_session

    session = open_thread_session(configured, "20260101T000000000-fedcba", load_settings(configured))
    try:
        session.sink.append({"type": "transcript_message", "role": "tool", "id": "m1", "content": f"out {VALUE}"})
        session.artifacts.write_text("tool-results/x.txt", f"artifact {ENV_VALUE} {DSN_PW}")
    finally:
        session.close()
    text = session.transcript_path.read_text() + session.artifacts.read_text("tool-results/x.txt")
    assert _leaks("thread session", text) == []


def test_a_project_config_adds_redactions_but_cannot_remove_the_users(configured: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (configured / ".mtagent").mkdir()
    (configured / ".mtagent" / "config.toml").write_text(
        f'[security]\nredact_values = ["{ADDED}"]\nredact_env = []\n')
    settings = load_settings(configured, environ={"MTAGENT_SECURITY__REDACT_VALUES": "[]"})
    assert settings.security.redact_values == [VALUE, ADDED]
    assert settings.security.redact_env == [ENV_NAME]
    assert "not trusted" not in capsys.readouterr().err  # adding a secret-shaped redaction needs no trust
    out = Redactor(collect_secrets(os.environ, settings=settings)).text(f"{VALUE} {ADDED}")
    assert out == "[redacted] [redacted]"  # (plain words from an untrusted project: test_untrusted_redactions.py)


@pytest.mark.parametrize("values, why", [(["tiny7"], "shorter than 8"), (["x" * 9] * 300, "at most 256")])
def test_bad_redact_values_are_one_error_naming_the_key_without_the_value(
        configured: Path, values: list[str], why: str) -> None:
    (configured / ".mtagent").mkdir()
    (configured / ".mtagent" / "config.toml").write_text(f"[security]\nredact_values = {json.dumps(values)}\n")
    trust.set_trust(configured, True)  # (untrusted, entries that do not look like secrets are ignored)
    with pytest.raises(ConfigError) as err:
        load_settings(configured)
    assert "security.redact_values" in str(err.value) and why in str(err.value)
    assert "tiny7" not in str(err.value)
