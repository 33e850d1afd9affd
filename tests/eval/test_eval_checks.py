"""Checks run in the workspace with a time limit that kills the whole process group (#29)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from interrupts import alive, wait_for

from mtagent.eval.checks import run_command


def test_exit_code_decides_and_output_is_kept(tmp_path: Path) -> None:
    (tmp_path / "answer.txt").write_text("42\n")
    ok = run_command("grep -qx 42 answer.txt && echo yes", tmp_path, 10)
    assert ok.ok and ok.exit_code == 0 and "yes" in ok.output
    bad = run_command("echo nope >&2; exit 3", tmp_path, 10)
    assert not bad.ok and bad.exit_code == 3 and "nope" in bad.output


def test_a_hanging_check_is_killed_with_its_children(tmp_path: Path) -> None:
    start = time.monotonic()
    outcome = run_command("sleep 60 & echo $! > child.pid; wait", tmp_path, 1.0)
    assert outcome.timed_out and not outcome.ok and outcome.exit_code is None
    assert time.monotonic() - start < 10
    child = int((tmp_path / "child.pid").read_text())
    wait_for(lambda: not alive(child), f"the check's child {child} to end with the time limit", timeout=5)


def test_a_timed_out_checks_child_that_ignores_sigterm_is_killed_too(tmp_path: Path) -> None:
    """The leader dies of SIGTERM, a child ignoring it keeps the group (and the pipe): the group
    gets SIGKILL after the grace too, as the shell tool's calls do (one ``kill_group``)."""
    outcome = run_command("sh -c 'trap \"\" TERM; echo $$ > child.pid; sleep 60' & wait", tmp_path, 1.0)
    assert outcome.timed_out and outcome.exit_code is None
    child = int((tmp_path / "child.pid").read_text())
    wait_for(lambda: not alive(child), f"the check's TERM-ignoring child {child} to be killed", timeout=5)


KEY = "sk-evalCheckCanary0123456789abcdef"


def test_a_task_check_does_not_get_the_users_secret_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task file comes from others (SWE-bench lines): its ``check``/``setup`` runs with the shell
    tool's environment, so ``echo $OPENAI_API_KEY | rev`` shows nothing (reversed, redaction would miss it)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DATABASE_URL", "postgres://app:evalCheckDbPw@db/app")
    monkeypatch.setenv("PLAIN_SETTING", "plain-value-passes")
    outcome = run_command('echo "[$OPENAI_API_KEY][$DATABASE_URL]" | rev; env | rev; echo "$PLAIN_SETTING"', tmp_path, 10)
    assert outcome.ok, outcome.output
    assert "][][" in outcome.output and "plain-value-passes" in outcome.output
    for secret in (KEY, "evalCheckDbPw", "OPENAI_API_KEY", "DATABASE_URL"):
        assert secret not in outcome.output and secret[::-1] not in outcome.output, secret


def test_the_users_env_passthrough_lets_a_named_one_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           mtagent_home: Path) -> None:
    (mtagent_home / "config.toml").write_text('[shell]\nenv_passthrough = ["OPENAI_*"]\n')
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_TOKEN", "ghx_evalCheckCanaryToken0123456789")
    outcome = run_command('echo "[$OPENAI_API_KEY][$GITHUB_TOKEN]" | rev', tmp_path, 10)
    assert ("[" + KEY + "][]")[::-1] in outcome.output
