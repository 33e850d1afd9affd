"""Secrets are redacted by value and by shape (issue #13): canaries of ≥ 8 shapes must appear
nowhere — model payloads, transcript, artifacts, exports, replay HTML, CLI output."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.cli.app import app
from mtagent.config import Settings
from mtagent.redaction import Redactor, collect_secrets

PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7canaryPEMbody"
CANARIES = {
    "OPENAI_KEY": "sk-canaryOpenAI0123456789abcdefXYZ",
    "ANTHROPIC_KEY_X": "sk-ant-api03-canaryAnthropic0123456789abcdef",
    "GH_THING": "ghp_canaryGithub0123456789abcdefghijklmnop",
    "GH_FINE": "github_pat_11canaryFineGrained0123456789_abcdefghijklmnopqrstuv",
    "AWS_ID": "AKIACANARYAWS1234567",
    "SLACK_HOOK_X": "xoxb-1234567890-canarySlackToken",
    "GOOGLE_X": "AIzaSyCanaryGoogleKey0123456789abcdefg",
    "SOME_JWT": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnkifQ.c2lnbmF0dXJlY2FuYXJ5",
    "DATABASE_URL": "postgres://app:canaryDbPassw0rd@db.internal:5432/prod",
    "RANDOM_BLOB": "Qm9vcCB0aGUgY2FuYXJ5IDEyMzQ1Njc4OTA",
}
# what must not appear: each value, and the password inside the URL
NEEDLES = [v for k, v in CANARIES.items() if k != "DATABASE_URL"] + ["canaryDbPassw0rd", PEM_BODY]


def test_every_shape_is_recognised_by_value_or_shape() -> None:
    r = Redactor(collect_secrets(CANARIES))
    text = " ".join(CANARIES.values()) + f"\n-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----\n"
    out = r.text(text)
    assert not [n for n in NEEDLES if n in out]
    shape_only = Redactor(()).text(text)  # no env at all: known shapes still go
    assert not [n for n in NEEDLES[:8] + [PEM_BODY] if n in shape_only]
    assert "3f786850e387550fdab836ed7e6dc881de23001b" in r.text("commit 3f786850e387550fdab836ed7e6dc881de23001b")


def test_canaries_reach_no_payload_transcript_artifact_export_html_or_output(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mtagent_home: Path) -> None:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    secrets_text = "\n".join(f"{k}={v}" for k, v in CANARIES.items())
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\n"
    (project / ".env").write_text(secrets_text + "\n" + pem)
    (project / "big.log").write_text((secrets_text + "\n") * 3000)
    model = ScriptedChatModel([
        tool_call("read_file", {"file_path": ".env"}, id="c1"),
        tool_call("grep", {"pattern": "=", "path": "big.log"}, id="c2"),
        tool_call("shell", {"command": "env; cat .env"}, id="c3"),
        "I saw " + CANARIES["OPENAI_KEY"],
    ])
    settings = Settings.model_validate({"agent": {"retry_base_seconds": 0.0}, "session_memory": {"enabled": False}})
    with AgentSession.create(project, model=model, settings=settings, approval="auto") as s:
        s.run_turn("look at the config")
        sid, transcript = s.session_id, s.transcript_path
    leaks: list[str] = []

    def check(where: str, text: str) -> None:
        leaks.extend(f"{where}: {n[:12]}" for n in NEEDLES if n in text)

    for i, sent in enumerate(model.calls):
        check(f"payload {i}", "\n".join(str(m.content) + str(getattr(m, "tool_calls", "")) for m in sent))
    check("transcript", transcript.read_text(errors="replace"))
    artifacts = [p for p in mtagent_home.rglob("*") if p.is_file() and "artifacts" in p.parts]
    assert any("tool-results" in p.parts for p in artifacts), "the grep result was expected to be persisted"
    for p in artifacts:
        check(f"artifact {p.name}", p.read_text(errors="replace"))
    runner = CliRunner()
    for args in (["sessions", "show", sid, "--full"], ["sessions", "show", sid, "--raw"],
                 ["sessions", "export", sid], ["sessions", "export", sid, "--format", "md"]):
        result = runner.invoke(app, [*args, "--cwd", str(project)])
        assert result.exit_code == 0, result.output
        check(" ".join(args[:2] + args[3:]), result.output)
    html = tmp_path / "r.html"
    result = runner.invoke(app, ["replay", str(transcript), "-s", "raw", "--html", str(html), "-q"])
    assert result.exit_code == 0, result.output
    check("replay output", result.output)
    check("replay html", html.read_text())
    assert leaks == [], "\n".join(leaks)
