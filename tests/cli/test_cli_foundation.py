"""The CLI's first commands: --version, --help, tokens, config — and one-line errors (a usage error from the
command line itself: one line on stderr, exit 2, no traceback)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from mtagent import __version__
from mtagent.cli.app import app
from mtagent.context.tokens import count_text_tokens

runner = CliRunner()


def _mtagent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mtagent.cli.app", *args], capture_output=True, text=True,
                          timeout=120)


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "tokens" in result.output and "config" in result.output


def test_tokens_counts_files_exactly(tmp_path):
    f = tmp_path / "a.py"
    f.write_text("def f(x):\n    return x + 1\n", encoding="utf-8")
    result = runner.invoke(app, ["tokens", "--total", str(f)])
    assert result.exit_code == 0
    assert int(result.output.strip()) == count_text_tokens(f.read_text())


def test_tokens_reads_stdin_and_reports_both_encodings():
    result = runner.invoke(app, ["tokens", "-e", "o200k_base", "-e", "cl100k_base", "-"], input="上下文 压缩\n")
    assert result.exit_code == 0
    assert str(count_text_tokens("上下文 压缩\n", "cl100k_base")) in result.output


def test_tokens_missing_file_is_one_line_exit_2(tmp_path):
    result = runner.invoke(app, ["tokens", str(tmp_path / "nope.txt")])
    assert result.exit_code == 2
    assert "no such file" in result.output and "Traceback" not in result.output


def test_tokens_unknown_encoding_is_rejected():
    result = runner.invoke(app, ["tokens", "-e", "p50k", "-"], input="x")
    assert result.exit_code == 2 and "unknown encoding" in result.output


def test_config_show_with_bad_key_is_one_line_exit_2_without_traceback(tmp_path):
    (tmp_path / ".mtagent").mkdir()
    (tmp_path / ".mtagent" / "config.toml").write_text("[context]\nbogus = 1\n")
    proc = _mtagent("config", "show", "--cwd", str(tmp_path))
    assert proc.returncode == 2
    assert "context.bogus" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_config_show_prints_merged_values(tmp_path):
    (tmp_path / ".mtagent").mkdir()
    (tmp_path / ".mtagent" / "config.toml").write_text("[context]\ntoken_limit = 65536\n")
    result = runner.invoke(app, ["config", "show", "--json", "--cwd", str(tmp_path)])
    assert result.exit_code == 0 and '"token_limit": 65536' in result.output


def test_config_show_text_names_each_section_in_brackets(tmp_path):
    result = runner.invoke(app, ["config", "show", "--cwd", str(tmp_path)])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert "[context]" in lines and "[agent]" in lines
    assert lines[lines.index("[context]") + 1] == "token_limit = 131072"


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
