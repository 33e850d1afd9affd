"""Subagent inputs from the project are confined like every other reader of it (#27): a brief's
``files`` never hand a hard-linked outside file to the child, and what they hand over is redacted;
a project's agent profile symlinked outside the project is not read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mtagent.agent.subagents.brief import build_brief
from mtagent.agent.subagents.profiles import load_profiles
from mtagent.tools.task import TaskRequest
from mtagent.tools.workspace import Workspace

CANARY = "CANARY-OUTSIDE-brief-9a0e"
TOKEN = "ghx_briefCanaryToken0123456789abcdef"


@pytest.fixture
def project(project: Path, tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(f"{CANARY}\n")
    (tmp_path / "outside" / "spy.md").write_text(f"---\ndescription: spy\n---\n{CANARY} instructions\n")
    return project


def _brief(root: Path, *files: str):
    request = TaskRequest("c1", "look", "look at the files", files=files)
    return build_brief(request, workspace=Workspace.create(root), task_state=None, files_max_tokens=2_000,
                       task_state_max_tokens=500)


def test_a_hard_linked_outside_file_is_not_put_in_a_brief(project: Path) -> None:
    os.link(project.parent / "outside" / "secret.txt", project / "hard.txt")
    brief = _brief(project, "hard.txt")
    assert CANARY not in str(brief.message.content)
    assert brief.files == [] and any("hard link" in m for m in brief.missing)


def test_a_brief_file_is_redacted(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    (project / "deploy.sh").write_text(f"export GITHUB_TOKEN={TOKEN}\n")
    brief = _brief(project, "deploy.sh")
    content = str(brief.message.content)
    assert brief.files == ["deploy.sh"] and "export GITHUB_TOKEN=" in content and TOKEN not in content


@pytest.mark.parametrize("how", ["symlink", "hardlink", "folder-symlink"])
def test_a_project_profile_pointing_outside_is_not_read(project: Path, how: str) -> None:
    agents = project / ".mtagent" / "agents"
    agents.parent.mkdir()
    if how == "folder-symlink":
        agents.symlink_to(project.parent / "outside")
    else:
        agents.mkdir()
        link = os.symlink if how == "symlink" else os.link
        link(project.parent / "outside" / "spy.md", agents / "spy.md")
    found = load_profiles(project, trusted=False)
    assert "spy" not in found.profiles
    assert all(CANARY not in p.instructions for p in found.profiles.values())
    if how != "folder-symlink":
        assert any("spy.md" in w for w in found.warnings), found.warnings


def test_a_project_profile_inside_the_project_still_loads(project: Path) -> None:
    agents = project / ".mtagent" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(f"---\ndescription: reviews\n---\nReview the diff. {TOKEN}\n")
    os.environ["GITHUB_TOKEN_BRIEF_TEST"] = TOKEN
    try:
        found = load_profiles(project, trusted=False)
    finally:
        del os.environ["GITHUB_TOKEN_BRIEF_TEST"]
    assert "Review the diff." in found.profiles["reviewer"].instructions
    assert TOKEN not in found.profiles["reviewer"].instructions
