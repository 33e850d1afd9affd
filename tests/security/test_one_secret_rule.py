"""One secret rule for the shell's environment and the redactor (#33): a variable is withheld from
commands when its *name* says secret (``*PWD*``, ``*PASS*``, ``*CRED*``, ``*BEARER*``, ``*WEBHOOK*``,
``*SALT*`` …) or when its *value* is one the redactor would redact (a key shape, a JWT, a URL or a
connection string with a password, a configured secret) — and every secret's base64, hex and
reversed forms are redacted too, so ``printf %s "$X" | base64`` carries nothing past the redactor."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from tools.conftest import Kit, make_kit  # noqa: F401  (the shared tool-test fixture)

from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.config import Settings
from mtagent.redaction import REDACTED, Redactor, collect_secrets, encoded_forms, is_secret_name
from mtagent.tools.shell import shell_environment

BY_NAME = {  # each passed to commands before #33
    "MYSQL_PWD": "hunter2pw9x",
    "DB_PWD": "dbPwdCanary-77",
    "MASTER_PW": "masterPwCanary-12",
    "GPG_PASSPHRASE": "correct horse battery staple",
    "GOOGLE_API_CREDS": "googleCredsCanary-3",
    "KUBE_BEARER": "kubeBearerCanary-4",
    "SLACK_WEBHOOK": "https://hooks.slack.example/services/T000/B000/slackWebhookCanary",
    "SIGNATURE_SALT": "signatureSaltCanary-5",
}
BY_VALUE = {  # plain names; the value is what the redactor recognises
    "HTTPS_PROXY": "http://proxyuser:proxyPwCanary9@proxy.example:3128",
    "CONN_STRING": "Server=db.example;Database=app;User Id=app;Password=connPwCanary8;",
    "NEUTRAL_A": "sk-proj-neutralCanaryOpenAIkey0123456789",
    "NEUTRAL_B": "sk_live_neutralStripeCanary0123456789",
    "NEUTRAL_C": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJuZXV0cmFsIn0.bmV1dHJhbFNpZ25hdHVyZQ",
}
# what must not reach a command's output (the password inside a URL/connection string, not the URL)
NEEDLES = [*BY_NAME.values(), "proxyPwCanary9", "connPwCanary8", *list(BY_VALUE.values())[2:]]
NEEDED = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/someone", "LANG": "C.UTF-8", "TERM": "xterm",
          "SSH_AUTH_SOCK": "/tmp/ssh-abc/agent.42", "PWD": "/home/someone/project", "OLDPWD": "/home/someone",
          "GIT_COMMIT": "3f786850e387550fdab836ed7e6dc881de23001b",
          "INVOCATION_ID": "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "EDITOR": "vim"}


def _forms(value: str) -> list[str]:
    raw = value.encode()
    return [value, value[::-1], base64.b64encode(raw).decode(), raw.hex()]


def test_secret_names_and_secret_values_are_withheld_and_what_commands_need_passes() -> None:
    env = {**BY_NAME, **BY_VALUE, **NEEDED}
    kept = shell_environment(env, Settings())
    assert set(kept) == set(NEEDED), sorted(set(kept) ^ set(NEEDED))


def test_the_names_the_rule_must_not_take() -> None:
    for name in ("PWD", "OLDPWD", "SSH_AUTH_SOCK", "PATH", "HOME", "LANG", "TERM", "SHELL", "USER", "EDITOR",
                 "MTAGENT_SHELL__ENV_PASSTHROUGH", "LC_ALL", "TMPDIR"):
        assert not is_secret_name(name), name
    for name in BY_NAME:
        assert is_secret_name(name), name


def test_a_plain_named_variable_holding_a_configured_secret_is_withheld(monkeypatch: pytest.MonkeyPatch) -> None:
    """The value is the secret, the name is neutral: ``security.redact_values`` and a secret the
    settings themselves hold (an MCP server's token) are withheld under any name."""
    configured = "configuredCanary-plain-name-1"
    token = "mcp-server-token-2"  # no shape: only the setting makes it a secret
    settings = Settings.model_validate({
        "security": {"redact_values": [configured]},
        "mcp": {"servers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": token}}}},
    })
    env = {"BUILD_LABEL": configured, "ANOTHER_LABEL": token, "WRAPPED": f"prefix:{configured}", "HOME": "/h"}
    assert set(shell_environment(env, settings)) == {"HOME"}
    passthrough = Settings.model_validate({"security": {"redact_values": [configured]},
                                           "shell": {"env_passthrough": ["BUILD_LABEL"]}})
    assert set(shell_environment(env, passthrough)) == {"HOME", "BUILD_LABEL", "ANOTHER_LABEL"}


def test_commands_see_none_of_them_in_any_form(monkeypatch: pytest.MonkeyPatch, make_kit) -> None:
    for name, value in {**BY_NAME, **BY_VALUE}.items():
        monkeypatch.setenv(name, value)
    kit: Kit = make_kit(Settings())
    names = " ".join(f'"${n}"' for n in {**BY_NAME, **BY_VALUE})
    raw = str(kit.call("shell", command=f"for v in {names}; do printf '%s|' \"$v\"; done; env").content)
    probe = str(kit.call("shell", command=f"printf %s {names} | base64 -w0; echo; printf %s {names} | rev").content)
    for needle in NEEDLES:
        for form in _forms(needle):
            assert form not in raw and form not in probe, needle


def test_every_secret_is_redacted_in_its_encoded_forms() -> None:
    env = {"MYSQL_PWD": "hunter2pw9x", "NEUTRAL_A": BY_VALUE["NEUTRAL_A"]}
    redactor = Redactor(collect_secrets(env))
    for secret in env.values():
        raw = secret.encode()
        for form in (*_forms(secret), raw.hex().upper(), base64.urlsafe_b64encode(raw).decode()):
            assert form not in redactor.text(f"out: {form}\n"), form
        for pad in ("a", "ab", "abc"):  # base64 of the secret inside a longer text: any alignment
            encoded = base64.b64encode(pad.encode() + raw + b"tail").decode()
            cleaned = redactor.text(encoded)
            fixed = 4 * len(raw) // 3 - 2  # the characters only the secret's bytes decide
            assert cleaned.count(REDACTED) == 1 and len(cleaned) - len(REDACTED) <= len(encoded) - fixed, pad
        wrapped = base64.encodebytes(raw * 8).decode()  # `base64` wraps at 76 columns
        assert redactor.text(wrapped).count(REDACTED) >= 1
    assert "hunter2pw9x" in encoded_forms("hunter2pw9x")


def test_harmless_identifiers_are_not_taken_for_secrets() -> None:
    """A commit hash, a digest or a UUID in a plain-named variable is an identifier tools print all
    the time (git log, sha256sum); taken for a secret it would be redacted from every log."""
    redactor = Redactor(collect_secrets(NEEDED))
    line = f"commit {NEEDED['GIT_COMMIT']} in {NEEDED['PWD']} run {NEEDED['INVOCATION_ID']}"
    assert redactor.text(line) == line


def test_the_repro_base64_of_a_password_reaches_no_model_payload(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 mtagent_home: Path) -> None:
    monkeypatch.setenv("MYSQL_PWD", "hunter2pw9x")
    monkeypatch.setenv("NEUTRAL_C", BY_VALUE["NEUTRAL_C"])
    model = ScriptedChatModel([
        tool_call("shell", {"command": 'printf %s "$MYSQL_PWD" | base64; printf %s "$NEUTRAL_C" | rev'}, id="c1"),
        "done",
    ])
    settings = Settings.model_validate({"agent": {"retry_base_seconds": 0.0}, "session_memory": {"enabled": False}})
    with AgentSession.create(project, model=model, settings=settings, approval="auto") as s:
        s.run_turn("go")
    sent = "\n".join(str(m.content) for call in model.calls for m in call)
    for secret in ("hunter2pw9x", BY_VALUE["NEUTRAL_C"]):
        for form in _forms(secret):
            assert form not in sent, form
