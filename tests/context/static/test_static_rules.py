"""Project rules: path-scoped rules, @path includes, cycles, the size warning, touched paths."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent.config import MemorySettings
from mtagent.context.opener.system import touched_paths
from mtagent.context.static.rules import glob_match, load_rules, parse_front_matter


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _load(root: Path, **kw: int):
    return load_rules(root, MemorySettings(include_max_depth=kw.get("depth", 5),
                                           rules_max_chars=kw.get("max_chars", 40_000)))


def test_glob_semantics_double_star_and_basename() -> None:
    assert glob_match("src/**/*.py", "src/a.py")
    assert glob_match("src/**/*.py", "src/pkg/deep/b.py")
    assert not glob_match("src/**/*.py", "tests/a.py")
    assert not glob_match("src/*.py", "src/pkg/b.py")
    assert glob_match("*.md", "docs/deep/readme.md")
    assert glob_match("migrations/", "migrations/0001.sql")
    assert glob_match("./src/*.py", "src/x.py")


def test_front_matter_paths_forms() -> None:
    meta, body, problem = parse_front_matter('---\npaths: ["src/**/*.py"]\n---\nType hints.\n')
    assert meta == {"paths": ["src/**/*.py"]} and body == "Type hints.\n" and problem is None
    meta, body, problem = parse_front_matter("---\npaths:\n  - a/*.c\n  - b/*.c\n---\nx")
    assert meta["paths"] == ["a/*.c", "b/*.c"]
    _, _, problem = parse_front_matter("---\npaths: [unclosed\n---\nx")
    assert problem and "YAML" in problem


def test_path_scoped_rule_applies_only_after_matching_file_touched(tmp_path: Path) -> None:
    _write(tmp_path / "CONTEXT.md", "Project: a kernel optimizer.")
    _write(tmp_path / ".mtagent/rules/python.md", '---\npaths: ["src/**/*.py"]\n---\nUse type hints.\n')
    _write(tmp_path / ".mtagent/rules/always.md", "Run make test before committing.\n")
    rules = _load(tmp_path)
    assert [r.source for r in rules.active([])] == ["CONTEXT.md", ".mtagent/rules/always.md"]
    assert [r.source for r in rules.active(["docs/x.md"])] == ["CONTEXT.md", ".mtagent/rules/always.md"]
    active = rules.active(["src/pkg/mod.py"])
    assert ".mtagent/rules/python.md" in [r.source for r in active]
    assert any("Use type hints." in r.text for r in active)


def test_local_context_is_loaded_after_project_context(tmp_path: Path) -> None:
    _write(tmp_path / "CONTEXT.md", "shared rule")
    _write(tmp_path / "CONTEXT.local.md", "my private rule")
    assert [(r.kind, r.text) for r in _load(tmp_path).rules] == [("project", "shared rule"), ("local", "my private rule")]


def test_include_expands_nested_files_relative_to_includer(tmp_path: Path) -> None:
    _write(tmp_path / "CONTEXT.md", "Top. See @docs/style.md for style.")
    _write(tmp_path / "docs/style.md", "Style rules.\n@./naming.md")
    _write(tmp_path / "docs/naming.md", "snake_case everywhere")
    rules = _load(tmp_path)
    text = rules.rules[0].text
    assert text.index("Top.") < text.index("Style rules.") < text.index("snake_case everywhere")
    assert rules.warnings == [] and rules.cycles == []


def test_include_cycle_is_reported_not_raised(tmp_path: Path) -> None:
    _write(tmp_path / "CONTEXT.md", "root @a.md")
    _write(tmp_path / "a.md", "A @b.md")
    _write(tmp_path / "b.md", "B @a.md")
    rules = _load(tmp_path)
    assert rules.rules[0].text.count("A @b.md") == 1
    assert rules.cycles == [["CONTEXT.md", "a.md", "b.md", "a.md"]]
    assert any("include cycle CONTEXT.md -> a.md -> b.md -> a.md" in w for w in rules.warnings)


def test_include_depth_limit_is_reported(tmp_path: Path) -> None:
    _write(tmp_path / "CONTEXT.md", "@f1.md")
    for i in range(1, 5):
        _write(tmp_path / f"f{i}.md", f"level {i} @f{i + 1}.md")
    _write(tmp_path / "f5.md", "level 5")
    rules = _load(tmp_path, depth=2)
    assert "level 2" in rules.rules[0].text and "level 3" not in rules.rules[0].text
    assert any("include depth limit (2)" in w for w in rules.warnings)


def test_missing_include_and_code_block_references(tmp_path: Path) -> None:
    _write(tmp_path / "CONTEXT.md", "@missing.md\n```\n@inside_fence.md\n```\nmail me@example.com, `@code.md`")
    rules = _load(tmp_path)
    assert len(rules.warnings) == 1 and "@missing.md" in rules.warnings[0]


def test_rules_over_size_limit_warn(tmp_path: Path) -> None:
    _write(tmp_path / "CONTEXT.md", "x" * 500)
    assert any("rules_max_chars" in w for w in _load(tmp_path, max_chars=100).warnings)
    assert _load(tmp_path).warnings == []


def test_touched_paths_from_tool_calls_and_results(tmp_path: Path) -> None:
    messages = [
        HumanMessage("go", id="h"),
        AIMessage("", id="a", tool_calls=[
            {"id": "c1", "name": "read_file", "args": {"file_path": str(tmp_path / "src/a.py")}},
            {"id": "c2", "name": "grep", "args": {"pattern": "x", "path": "lib"}},
        ]),
        ToolMessage("..", tool_call_id="c1", id="t1", artifact={"file_path": "src/a.py"}),
        ToolMessage("..", tool_call_id="c2", id="t2"),
    ]
    assert touched_paths(messages, tmp_path) == ["src/a.py", "lib"]
