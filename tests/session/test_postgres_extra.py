"""storage.backend = postgres without the ``postgres`` extra: one line saying what to install, exit 2."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from mtagent.cli.app import app


@pytest.mark.parametrize("missing", ["psycopg", "psycopg_pool"])
def test_a_missing_postgres_extra_is_one_line_naming_the_install(missing, tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # import raises ImportError, as when not installed
    monkeypatch.setenv("MTAGENT_STORAGE__BACKEND", "postgres")
    monkeypatch.setenv("MTAGENT_STORAGE__DSN", "postgresql://bob:pw-canary-91@127.0.0.1:1/db")
    result = CliRunner().invoke(app, ["sessions", "list", "--cwd", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "pw-canary-91" not in result.output
    assert "pip install 'mtagent[postgres]'" in result.output
    assert missing.split(".")[0] in result.output
