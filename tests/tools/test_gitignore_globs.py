"""grep and glob honour .gitignore (nested, with ! re-includes) unless include_ignored; one glob dialect."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtagent.context.static.rules import glob_match as rule_glob_match
from mtagent.globs import expand_braces, glob_match
from mtagent.tools.search import glob_to_regex


@pytest.mark.parametrize("pattern,path,expected", [
    ("*.py", "a/b/c.py", True), ("src/**/*.ts", "src/x/y/z.ts", True), ("src/**/*.ts", "lib/src/z.ts", False),
    ("/top.md", "top.md", True), ("/top.md", "d/top.md", False), ("docs/", "docs/a/b.md", True),
    ("*.{py,md}", "x/y.md", True), ("file[!0-9].txt", "filea.txt", True), ("file[!0-9].txt", "file1.txt", False),
])
def test_one_dialect_for_tool_globs_and_rule_paths(pattern, path, expected):
    assert glob_match(pattern, path) is expected
    assert glob_to_regex(pattern).match(path) is expected
    assert rule_glob_match(pattern, path) is expected


def test_brace_bombs_are_refused_not_expanded():
    with pytest.raises(ValueError, match="more than"):
        expand_braces("{a,b,c,d}" * 6)
    assert rule_glob_match("{a,b,c,d}" * 6, "a") is False


def _project(root: Path) -> None:
    (root / ".gitignore").write_text("*.log\nbuild/\n!keep.log\n")
    (root / "sub").mkdir()
    (root / "sub" / ".gitignore").write_text("secret.txt\n")
    for rel in ("app.py", "debug.log", "keep.log", "build/out.py", "sub/secret.txt", "sub/open.txt"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("needle\n")


def _tools(root: Path):
    from mtagent.tools import default_tools

    return {t.name: t for t in default_tools(root)}


@pytest.mark.parametrize("ripgrep", [True, False])
def test_grep_and_glob_skip_ignored_files_by_default(tmp_path, monkeypatch, ripgrep):
    _project(tmp_path)
    if not ripgrep:
        monkeypatch.setattr("mtagent.tools.search.ripgrep_path", lambda: None)
    tools = _tools(tmp_path)
    grep = tools["grep"].invoke({"pattern": "needle"})
    text = grep if isinstance(grep, str) else str(grep)
    assert "app.py" in text and "keep.log" in text and "sub/open.txt" in text
    assert "debug.log" not in text and "build/out.py" not in text and "secret.txt" not in text
    everything = str(tools["grep"].invoke({"pattern": "needle", "include_ignored": True}))
    assert "debug.log" in everything and "build/out.py" in everything and "sub/secret.txt" in everything
    listed = str(tools["glob"].invoke({"pattern": "*"}))
    assert "debug.log" not in listed and "keep.log" in listed and "sub/secret.txt" not in listed
    assert "debug.log" in str(tools["glob"].invoke({"pattern": "*", "include_ignored": True}))
