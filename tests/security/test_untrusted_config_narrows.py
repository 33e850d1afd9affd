"""An untrusted project's size and budget keys only narrow (#33): a repository's config can make
mtagent read, keep or send less, never more — a 20 MB CONTEXT.md with context_file_max_bytes = 50000000
made every request 21 MB — and one line says what was ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtagent import paths, trust
from mtagent.config import Settings, load_settings
from mtagent.context.static.rules import load_rules

PROJECT_FILES = {".mtagent/config.toml": """\
[memory]
context_file_max_bytes = 50000000
rules_max_chars = 100000000
[tool_results]
shell_max_chars = 1e8
self_limiting_tools = ["shell", "read_file", "grep"]
per_tool_max_chars = { shell = 100000000 }
[read_file]
max_size_bytes = 1000000000
[context]
token_limit = 100000000
[microcompact]
compactable_tools = []
"""}



def test_an_untrusted_project_cannot_widen_any_size_or_budget(project: Path, capsys) -> None:
    defaults, settings = Settings(), load_settings(project)
    assert settings.memory.context_file_max_bytes == defaults.memory.context_file_max_bytes
    assert settings.memory.rules_max_chars == defaults.memory.rules_max_chars
    assert settings.tool_results.shell_max_chars == defaults.tool_results.shell_max_chars
    assert settings.tool_results.self_limiting_tools == defaults.tool_results.self_limiting_tools
    assert settings.tool_results.per_tool_max_chars == defaults.tool_results.per_tool_max_chars
    assert settings.read_file.max_size_bytes == defaults.read_file.max_size_bytes
    assert settings.context.token_limit == defaults.context.token_limit
    assert settings.microcompact.compactable_tools == defaults.microcompact.compactable_tools
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, warnings
    for key in ("memory.context_file_max_bytes", "tool_results.shell_max_chars", "tool_results.self_limiting_tools",
                "context.token_limit", "microcompact.compactable_tools"):
        assert key in warnings[0]
    assert "only lower" in warnings[0]


def test_narrowing_applies_untrusted(project: Path) -> None:
    (project / ".mtagent" / "config.toml").write_text(
        "[memory]\ncontext_file_max_bytes = 1000\n[tool_results]\nshell_max_chars = 500\nself_limiting_tools = []\n")
    settings = load_settings(project)
    assert settings.memory.context_file_max_bytes == 1000 and settings.tool_results.shell_max_chars == 500
    assert settings.tool_results.self_limiting_tools == []


def test_the_bound_is_the_users_own_value_not_only_the_default(project: Path) -> None:
    paths.global_config_path().write_text("[memory]\ncontext_file_max_bytes = 100000000\n")
    (project / ".mtagent" / "config.toml").write_text("[memory]\ncontext_file_max_bytes = 60000000\n")
    assert load_settings(project).memory.context_file_max_bytes == 60_000_000  # below the user's: narrower


def test_a_20_mb_context_file_is_read_to_the_default_cap(project: Path) -> None:
    (project / "CONTEXT.md").write_text("x" * (20 * 1024 * 1024))
    rules = load_rules(project, load_settings(project).memory)
    assert rules.total_chars <= Settings().memory.context_file_max_bytes + 1024


def test_a_trusted_project_may_widen(project: Path) -> None:
    trust.set_trust(project, True)
    assert load_settings(project).memory.context_file_max_bytes == 50_000_000


def test_a_number_written_as_a_string_is_compared_as_the_number_it_becomes(project: Path) -> None:
    (project / ".mtagent" / "config.toml").write_text(
        '[memory]\ncontext_file_max_bytes = "50000000"\n[tool_results]\nper_tool_max_chars = { shell = "100000000" }\n')
    settings = load_settings(project)
    assert settings.memory.context_file_max_bytes == Settings().memory.context_file_max_bytes
    assert settings.tool_results.per_tool_max_chars == {}
