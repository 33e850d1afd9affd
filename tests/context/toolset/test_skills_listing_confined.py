"""Skill folders are listed through :mod:`mtagent.confine` (the rule every context file follows)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from skill_helpers import write_skill

from mtagent.config import SkillsSettings
from mtagent.context.toolset import discover
from mtagent.context.toolset.skills import skill_files



def test_a_project_opened_through_a_symlinked_path_finds_its_skills(home: Path, project: Path,
                                                                     tmp_path: Path) -> None:
    """``~/code/x -> /data/x`` (or macOS ``/tmp``): the root is resolved first, as for rules."""
    write_skill(project, "release", "Cut a release.")
    os.symlink(project, tmp_path / "via-link")
    found = discover(tmp_path / "via-link", SkillsSettings(), home=home, trusted=True)
    assert [s.name for s in found.skills] == ["release"]


def test_a_symlinked_home_finds_the_users_skills(tmp_path: Path) -> None:
    """``~/.mtagent`` kept in a dotfiles repository and linked: the user's own skills still load."""
    real = tmp_path / "dotfiles"
    write_skill(real, "pdf", "Fill PDF forms.", folder="skills")
    os.symlink(real, tmp_path / "linked-home")
    found = discover(None, SkillsSettings(), home=tmp_path / "linked-home")
    assert [s.name for s in found.skills] == ["pdf"]


@pytest.mark.parametrize("target", ["outside", "/proc/self", "/proc"])
def test_a_skill_folder_symlinked_outside_or_to_proc_is_not_read(home: Path, project: Path, tmp_path: Path,
                                                                 target: str) -> None:
    outside = tmp_path / "outside"
    write_skill(outside, "stolen", folder=".")
    (project / ".mtagent/skills").mkdir(parents=True)
    os.symlink(outside / "stolen" if target == "outside" else target, project / ".mtagent/skills/evil")
    found = discover(project, SkillsSettings(), home=home, trusted=True)
    assert found.skills == [] and not any("evil" in s for s in found.skipped)
    assert skill_files(project, (".mtagent", "skills")) == []


@pytest.mark.parametrize("which", [".mtagent", ".mtagent/skills"])
def test_a_symlinked_skills_tree_is_not_entered(home: Path, project: Path, tmp_path: Path, which: str) -> None:
    outside = tmp_path / "outside"
    write_skill(outside, "stolen", folder=".mtagent/skills")
    (project / which).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside / which, project / which)
    assert discover(project, SkillsSettings(), home=home, trusted=True).skills == []


def test_only_one_level_of_skill_folders_is_listed(project: Path) -> None:
    write_skill(project, "ok")
    (project / ".mtagent/skills/SKILL.md").write_text("---\nname: top\ndescription: d\n---\n")
    deep = project / ".mtagent/skills/ok/nested/deeper"
    deep.mkdir(parents=True)
    (deep / "SKILL.md").write_text("---\nname: deep\ndescription: d\n---\n")
    (project / ".mtagent/skills/ok/NOTSKILL.md").write_text("x")
    assert skill_files(project, (".mtagent", "skills")) == [(".mtagent", "skills", "ok", "SKILL.md")]


def test_skill_folders_past_max_skills_are_counted_not_read(home: Path, project: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A repository with thousands of skill folders costs ``max_skills`` reads and one line."""
    for i in range(30):
        write_skill(project, f"s{i:02d}")
    from mtagent.context.toolset import skills as skills_module
    reads: list[tuple[str, ...]] = []
    real = skills_module.read_skill_file
    monkeypatch.setattr(skills_module, "read_skill_file",
                        lambda b, p, *a, **k: reads.append(tuple(p)) or real(b, p, *a, **k))
    found = discover(project, SkillsSettings(max_skills=5), home=home, trusted=True)
    assert [s.name for s in found.skills] == [f"s{i:02d}" for i in range(5)]
    assert len(reads) == 5
    assert [s for s in found.skipped if "max_skills" in s] == ["25 more skills not read: over skills.max_skills (5)"]
