"""Secret-named environment variables are not handed to the shell tool's commands (#27), so
``echo $OPENAI_API_KEY | rev`` (an encoding the redactor cannot recognise) reveals nothing; the
user names the ones a command needs in ``shell.env_passthrough``."""

from __future__ import annotations

import pytest
from tools.conftest import Kit, make_kit  # noqa: F401  (the shared tool-test fixture)

from mtagent.config import Settings
from mtagent.redaction import collect_secrets, is_secret_name
from mtagent.tools.shell import HANDLES, shell_environment

SECRETS = {
    "OPENAI_API_KEY": "sk-envPolicyCanary0123456789abcdef",
    "GITHUB_TOKEN": "ghx_envPolicyCanaryToken0123456789",
    "MY_SECRET": "envPolicy-my-secret-value-42",
    "DB_PASSWORD": "envPolicy-db-password-value",
    "AWS_SECRET_ACCESS_KEY": "envPolicyAwsSecretAccessKey0123456",
    "gcp_credentials": "envPolicy-gcp-credentials-json",
    "UNRELATED_NAME": "envPolicy-configured-secret-9",
}


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PLAIN_SETTING", "plain-value-passes")


def _run(kit: Kit, command: str) -> str:
    return str(kit.call("shell", command=command).content)


def test_secret_named_variables_do_not_reach_commands(secret_env: None, make_kit) -> None:
    kit = make_kit(Settings.model_validate({"security": {"redact_env": ["UNRELATED_NAME"]}}))
    out = _run(kit, 'echo "[$OPENAI_API_KEY]" | rev; env | rev; echo "$PLAIN_SETTING"')
    for value in SECRETS.values():
        assert value not in out and value[::-1] not in out, value
    assert "plain-value-passes" in out and "][" in out  # the key, reversed: empty


def test_env_passthrough_names_the_ones_a_command_may_see(secret_env: None, make_kit) -> None:
    kit = make_kit(Settings.model_validate({"shell": {"env_passthrough": ["GITHUB_TOKEN"]}}))
    out = _run(kit, 'echo "$GITHUB_TOKEN" | rev; echo "[$OPENAI_API_KEY]"')
    assert SECRETS["GITHUB_TOKEN"][::-1] in out and "[]" in out


def test_the_policy_on_names() -> None:
    env = {"PATH": "/bin", "HOME": "/h", "KEYCHAIN_X": "1", "npm_config_authtoken": "2", "X_PASSWD": "3",
           "SSH_AUTH_SOCK": "/tmp/s", "LANG": "C"}
    kept = shell_environment(env, Settings())
    assert set(kept) == {"PATH", "HOME", "LANG", "SSH_AUTH_SOCK"}  # the ssh agent's socket: a handle, no key
    assert set(shell_environment(env, Settings.model_validate({"shell": {"env_passthrough": ["X_*"]}}))) == {
        "PATH", "HOME", "SSH_AUTH_SOCK", "LANG", "X_PASSWD"}
    withheld = Settings.model_validate({"security": {"redact_env": ["SSH_AUTH_SOCK"]}})
    assert "SSH_AUTH_SOCK" not in shell_environment(env, withheld)


REDACTOR_ONLY = {  # secret by the redactor's rule, not by the shell's old narrower one
    "DATABASE_URL": "postgres://app:envPolicyDbUrlPw@db/app",
    "SENTRY_DSN": "https://envPolicyDsnPublicKey@sentry.example/1",
    "SESSION_COOKIE": "envPolicy-session-cookie-value",
    "GITLAB_AUTH": "envPolicy-gitlab-auth-value-7",
    "SIGNING_PRIVATE": "envPolicy-signing-private-value",
    "FTP_PASS": "envPolicy-ftp-pass-value-1234",
    "PIP_INDEX_URL": "https://user:envPolicyPipPw@pypi.example/simple",
}


def test_a_name_the_redactor_calls_secret_is_withheld_from_commands(monkeypatch: pytest.MonkeyPatch, make_kit) -> None:
    for name, value in REDACTOR_ONLY.items():
        monkeypatch.setenv(name, value)
    out = _run(make_kit(Settings()), "env | rev")
    for name in REDACTOR_ONLY:
        assert name[::-1] not in out, name
    passed = _run(make_kit(Settings.model_validate({"shell": {"env_passthrough": ["SENTRY_DSN"]}})),
                  'echo "[$SENTRY_DSN]" | rev; echo "[$DATABASE_URL]"')
    assert ("[" + REDACTOR_ONLY["SENTRY_DSN"] + "]")[::-1] in passed and "[]" in passed


def test_one_rule_the_shell_withholds_what_the_redactor_collects_by_name() -> None:
    """The shell and the redactor judge a name by one predicate: a value (plain, not key-shaped)
    under a name is collected by the redactor exactly when the shell withholds that name."""
    names = [*SECRETS, *REDACTOR_ONLY, "KEYCHAIN_X", "npm_config_authtoken", "X_PASSWD", "SSH_AUTH_SOCK",
             "XDG_SESSION_ID", "MONKEY_BUSINESS", "TOKENIZERS_PARALLELISM", "PATH", "HOME", "LANG", "EDITOR"]
    env = {name: "plain words value" for name in names}
    kept = shell_environment(env, Settings())
    for name in names:
        by_name = collect_secrets({name: "plain words value"}) != ()
        assert is_secret_name(name) == by_name == (name not in kept), name  # HANDLES: neither
    assert HANDLES <= {"SSH_AUTH_SOCK", "PWD", "OLDPWD"} and not any(map(is_secret_name, HANDLES))
