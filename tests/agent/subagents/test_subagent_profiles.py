"""Agent profiles from .mtagent/agents/*.md, honouring project trust."""

from __future__ import annotations

from pathlib import Path

import pytest
from subagent_helpers import open_session, report_json, task

from mtagent import trust
from mtagent.agent.subagents import profiles as P


def _write(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(text)


SEARCHER = "---\ndescription: finds symbols\ntools: [grep, glob]\nwindow: 32000\nmodel: openai:gpt-4o\n---\nFind symbols."
SHELLY = "---\ntools: [read_file, shell, write_file]\n---\nRun things."


def test_a_trusted_profile_keeps_its_tools_model_and_window(tmp_path):
    _write(tmp_path / ".mtagent/agents", "searcher", SEARCHER)
    found = P.load_profiles(tmp_path, trusted=True).get("searcher")
    assert found and found.tools == {"grep", "glob"} and found.window == 32_000 and found.model == "openai:gpt-4o"
    assert found.instructions == "Find symbols." and not found.tools & P.WRITE_TOOLS


def test_an_untrusted_project_profile_is_read_only_and_cannot_pick_a_model(tmp_path):
    _write(tmp_path / ".mtagent/agents", "shelly", SHELLY)
    _write(tmp_path / ".mtagent/agents", "searcher", SEARCHER)
    loaded = P.load_profiles(tmp_path, trusted=False)
    assert loaded.get("shelly").tools == {"read_file"}
    assert loaded.get("searcher").model is None and not loaded.get("shelly").trusted


def test_an_untrusted_project_cannot_replace_a_builtin_profile(tmp_path):
    _write(tmp_path / ".mtagent/agents", "explore", "---\ntools: '*'\n---\nDo anything.")
    loaded = P.load_profiles(tmp_path, trusted=False)
    assert loaded.get("explore") == P.BUILTIN_PROFILES["explore"]
    assert any("cannot replace the built-in 'explore'" in w for w in loaded.warnings)


def test_the_users_own_profiles_are_trusted(mtagent_home, tmp_path):
    _write(mtagent_home / "agents", "shelly", SHELLY)
    assert P.load_profiles(tmp_path, trusted=False).get("shelly").tools == {"read_file", "shell", "write_file"}


@pytest.mark.parametrize("name,text,problem", [
    ("bad-yaml", "---\ntools: [grep\n---\nx", "not valid YAML"),
    ("bad-tools", "---\ntools: 5\n---\nx", "`tools` must be"),
    ("bad-window", "---\nwindow: -3\n---\nx", "`window` must be"),
    ("empty", "---\ntools: [grep]\n---\n   ", "no instructions"),
    ("Bad Name!", "x", "name it with"),
])
def test_broken_profiles_are_skipped_with_a_warning(tmp_path, name, text, problem):
    _write(tmp_path / ".mtagent/agents", name, text)
    loaded = P.load_profiles(tmp_path, trusted=True)
    assert name.lower() not in loaded.profiles and any(problem in w for w in loaded.warnings)


def test_a_huge_or_non_file_profile_is_skipped(tmp_path):
    folder = tmp_path / ".mtagent/agents"
    _write(folder, "huge", "x" * (P.PROFILE_MAX_BYTES + 1))
    (folder / "dir.md").mkdir()
    loaded = P.load_profiles(tmp_path, trusted=True)
    assert "huge" not in loaded.profiles and "dir" not in loaded.profiles


def test_projects_are_untrusted_until_the_user_trusts_them(tmp_path):
    _write(tmp_path / ".mtagent/agents", "shelly", SHELLY)
    assert P.project_trusted(tmp_path) is False
    assert P.load_profiles(tmp_path).get("shelly").tools == {"read_file"}
    trust.set_trust(tmp_path, True)
    assert P.load_profiles(tmp_path).get("shelly").tools == {"read_file", "shell", "write_file"}


def test_a_damaged_trust_file_means_untrusted(tmp_path, mtagent_home):
    (mtagent_home / "trust.json").write_text("{not json")
    assert P.project_trusted(tmp_path) is False


def test_a_project_profile_drives_a_child(code):
    _write(code / ".mtagent/agents", "searcher", SEARCHER)
    session, children = open_session(code, [task(agent="searcher"), "done"], [[report_json("found")]])
    with session:
        session.run_turn("go")
    assert set(children[0].bound_tool_names) == {"grep", "glob"}
    assert "Find symbols." in str(children[0].calls[0][0].content)
