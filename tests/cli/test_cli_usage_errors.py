"""Usage errors from the command line itself are one line on stderr, exit 2, no traceback."""

import subprocess
import sys

import pytest


def _mtagent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mtagent.cli.app", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize(("args", "says"), [
    (["run"], "Missing argument 'task'"),
    (["demo", "--window", "abc"], "Invalid value for '--window'"),
    (["nosuch"], "No such command 'nosuch'"),
    (["sessions", "show"], "Missing argument"),
])
def test_usage_errors_are_one_line_with_exit_code_2(args, says):
    proc = _mtagent(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "--help" in lines[0]
    assert "Traceback" not in proc.stderr


def test_help_and_version_still_exit_0():
    assert _mtagent("--help").returncode == 0
    version = _mtagent("--version")
    assert version.returncode == 0 and "mtagent" in version.stdout
