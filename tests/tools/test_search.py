"""grep, glob, ls: formats, ignored folders, both grep engines agree, large results are budgeted."""

from __future__ import annotations

import os

import pytest

from mtagent.tools import search
from mtagent.tools.search import glob_to_regex, ripgrep_path

from .conftest import Kit


@pytest.fixture
def tree(kit: Kit) -> Kit:
    files = {
        "src/app.py": "import os\n\ndef main():\n    return os.getcwd()\n",
        "src/util.py": "def helper():\n    return 'main'\n",
        "src/deep/x.ts": "export const main = 1;\n",
        "README.md": "# Main project\n",
        ".hidden/conf.py": "main = True\n",
        "node_modules/lib/index.js": "main();\n",
        ".git/config": "main\n",
        "pkg/__pycache__/a.pyc": "main\n",
        "venv2/pyvenv.cfg": "home=/usr\n",
        "venv2/lib/site.py": "main\n",
    }
    for rel, text in files.items():
        path = kit.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (kit.root / "src" / "blob.bin").write_bytes(b"main\x00\x01")
    return kit


def use_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "ripgrep_path", lambda: None)


def test_grep_prints_path_line_text_sorted_and_skips_ignored(tree: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    use_python(monkeypatch)
    msg = tree.call("grep", pattern="main")
    assert msg.content.splitlines() == [
        ".hidden/conf.py:1:main = True",
        "src/app.py:3:def main():",
        "src/deep/x.ts:1:export const main = 1;",
        "src/util.py:2:    return 'main'",
    ]
    assert msg.artifact["num_matches"] == 4 and msg.artifact["num_files"] == 4
    assert msg.artifact["engine"] == "python"


def test_grep_options_glob_case_and_context(tree: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    use_python(monkeypatch)
    assert tree.call("grep", pattern="main", glob="*.py", path="src").content.splitlines() == [
        "src/app.py:3:def main():", "src/util.py:2:    return 'main'"]
    assert tree.call("grep", pattern="MAIN", glob="*.md", case_insensitive=True).content == "README.md:1:# Main project"
    ctx = tree.call("grep", pattern="def", path="src", glob="*.py", context=1).content.splitlines()
    assert ctx == ["src/app.py-2-", "src/app.py:3:def main():", "src/app.py-4-    return os.getcwd()", "--",
                   "src/util.py:1:def helper():", "src/util.py-2-    return 'main'"]


def test_grep_stops_at_max_results_and_says_so(tree: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    use_python(monkeypatch)
    msg = tree.call("grep", pattern="main", max_results=2)
    assert msg.content.splitlines()[:2] == [".hidden/conf.py:1:main = True", "src/app.py:3:def main():"]
    assert "[Stopped after 2 matches; there may be more." in msg.content
    exact = tree.call("grep", pattern="main", max_results=4)
    assert "Stopped" not in exact.content


def test_grep_no_match_and_bad_regex(tree: Kit) -> None:
    assert tree.call("grep", pattern="zzz_nothing").content == "No matches for 'zzz_nothing' (searched: .)."
    bad = tree.call("grep", pattern="foo(")
    assert bad.status == "error" and "invalid regular expression" in bad.content


@pytest.mark.skipif(ripgrep_path() is None, reason="ripgrep is not installed")
@pytest.mark.parametrize("args", [
    {"pattern": "main"},
    {"pattern": "main", "glob": "*.py"},
    {"pattern": "def", "path": "src", "context": 1},
    {"pattern": "MAIN", "case_insensitive": True, "max_results": 3},
    {"pattern": "return", "path": "src/app.py"},
])
def test_ripgrep_and_python_engines_print_the_same(tree: Kit, monkeypatch: pytest.MonkeyPatch, args: dict) -> None:
    with_rg = tree.call("grep", **args)
    assert with_rg.artifact["engine"] == "ripgrep"
    use_python(monkeypatch)
    with_py = tree.call("grep", **args)
    assert with_rg.content == with_py.content
    assert with_rg.artifact["num_matches"] == with_py.artifact["num_matches"]


def test_large_grep_result_is_persisted_with_a_grep_preview(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    use_python(monkeypatch)
    for i in range(30):
        (kit.root / f"m{i:02d}.py").write_text("".join(f"token_{j} = 'needle {j}'\n" for j in range(100)))
    msg = kit.call("grep", pattern="needle", max_results=5000)
    assert msg.content.startswith('<persisted-output tool="grep" path="tool-results/')
    assert "Found 3000 matches. Showing first" in msg.content
    full = kit.artifacts.read_text(msg.artifact["artifact"])
    assert len(full.splitlines()) == 3000 and msg.artifact["num_matches"] == 3000
    page = kit.call("read_tool_result", path=msg.artifact["artifact"], offset=2999, limit=5)
    assert page.content.splitlines()[:2] == ["  2999\tm29.py:99:token_98 = 'needle 98'",
                                            "  3000\tm29.py:100:token_99 = 'needle 99'"]


def test_glob_matches_names_at_any_depth_and_paths(tree: Kit) -> None:
    assert tree.call("glob", pattern="*.py").content.splitlines() == [
        ".hidden/conf.py", "src/app.py", "src/util.py"]
    assert tree.call("glob", pattern="src/**/*.ts").content == "src/deep/x.ts"
    assert tree.call("glob", pattern="*.{md,ts}").content.splitlines() == ["README.md", "src/deep/x.ts"]
    assert tree.call("glob", pattern="*.rs").content == "No files match '*.rs' (searched: .)."
    assert tree.call("glob", pattern="../*").status == "error"


def test_glob_to_regex_semantics() -> None:
    assert glob_to_regex("**/*.py").match("a/b/c.py") and glob_to_regex("**/*.py").match("c.py")
    assert not glob_to_regex("src/*.py").match("src/a/b.py")
    assert glob_to_regex("src/[ab].py").match("src/a.py") and not glob_to_regex("src/[!ab].py").match("src/a.py")


def test_ls_lists_dirs_first_with_sizes_and_skips_ignored(tree: Kit) -> None:
    lines = tree.call("ls").content.splitlines()
    assert lines[0] == "./"
    assert lines[1:5] == ["  .hidden/", "  pkg/", "  src/", "  README.md (15 bytes)"]
    assert "  (skipped: .git, node_modules, venv2)" in lines
    assert tree.call("ls", path="src/app.py").status == "error"


def test_python_engine_skips_and_reports_files_too_big_to_load(tree: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    use_python(monkeypatch)
    monkeypatch.setattr(search, "PY_GREP_MAX_FILE_BYTES", 60)
    (tree.root / "src" / "huge.py").write_text("main = 1\n" * 10)
    msg = tree.call("grep", pattern="main", path="src")
    assert "src/huge.py" not in msg.content.split("[Skipped")[0]
    assert "[Skipped 1 file(s) over 60 bytes (e.g. src/huge.py)" in msg.content
    assert msg.artifact["skipped_large_files"] == ["src/huge.py"]


def test_grep_answers_patterns_ripgrep_refuses_instead_of_reporting_no_matches(kit: Kit) -> None:
    (kit.root / "a.txt").write_text("aa\nfoobar\nab\n")
    assert "a.txt:1:aa" in kit.call("grep", pattern=r"(a)\1").content
    assert "a.txt:2:foobar" in kit.call("grep", pattern=r"(?<=foo)bar").content


def test_grep_refuses_a_named_pipe_instead_of_blocking(kit: Kit) -> None:
    os.mkfifo(kit.root / "pipe")
    msg = kit.call("grep", pattern="x", path="pipe")
    assert msg.status == "error" and "not a regular file" in msg.content


def test_python_grep_stops_a_catastrophic_regex_with_a_clear_error(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "ripgrep_path", lambda: None)
    monkeypatch.setattr(search, "PY_GREP_TIMEOUT_SECONDS", 0.5)
    (kit.root / "evil.txt").write_text("a" * 40 + "b\n")
    msg = kit.call("grep", pattern="(a|aa)+$", path="evil.txt")
    assert msg.status == "error" and "catastrophic backtracking" in msg.content
