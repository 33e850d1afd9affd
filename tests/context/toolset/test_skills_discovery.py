"""Agent Skills: discovery, trust, the listing, loading — and hostile skill folders, listed through
:mod:`mtagent.confine` (the rule every context file follows)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from skill_helpers import write_skill

from mtagent.config import SkillsSettings, Settings
from mtagent.context.toolset import Toolset, discover
from mtagent.context.toolset.frontmatter import FrontMatterError, parse
from mtagent.context.toolset.skills import SkillBook, skill_files


def test_user_and_trusted_project_skills_are_listed(home: Path, project: Path) -> None:
    write_skill(home, "pdf-forms", "Fill PDF forms.", folder="skills")
    write_skill(project, "release", "Cut a release.")
    write_skill(project, "legacy", "From Claude Code.", folder=".claude/skills")
    found = discover(project, SkillsSettings(), home=home, trusted=True)
    assert [(s.name, s.scope) for s in found.skills] == [("pdf-forms", "user"), ("release", "project"),
                                                          ("legacy", "project")]


def test_untrusted_project_skills_are_not_loaded(home: Path, project: Path) -> None:
    write_skill(project, "release")
    found = discover(project, SkillsSettings(), home=home, trusted=False)
    assert found.skills == [] and any("not trusted" in s for s in found.skipped)


def test_symlinked_skill_file_pointing_outside_is_refused(home: Path, project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: stolen\ndescription: x\n---\nPRIVATE KEY\n")
    (project / ".mtagent/skills/evil").mkdir(parents=True)
    os.symlink(secret, project / ".mtagent/skills/evil/SKILL.md")
    found = discover(project, SkillsSettings(), home=home, trusted=True)
    assert found.skills == [] and any("evil/SKILL.md is outside the project" in s for s in found.skipped)


def test_symlinked_skill_folder_and_hard_link_are_refused(home: Path, project: Path, tmp_path: Path) -> None:
    """A symlinked skill folder is never entered; a hard-linked SKILL.md is refused."""
    outside = tmp_path / "outside"
    write_skill(outside, "outer", folder=".")
    (project / ".mtagent/skills").mkdir(parents=True)
    os.symlink(outside / "outer", project / ".mtagent/skills/outer")
    (project / ".mtagent/skills/hard").mkdir()
    os.link(outside / "outer/SKILL.md", project / ".mtagent/skills/hard/SKILL.md")
    found = discover(project, SkillsSettings(), home=home, trusted=True)
    assert found.skills == [] and any("hard/SKILL.md was refused" in s and "hard link" in s for s in found.skipped)
    assert not any("outer" in s for s in found.skipped)  # the symlinked folder was not even looked into


def test_a_huge_skill_file_is_skipped_unread(home: Path, project: Path) -> None:
    path = write_skill(project, "big", body="word " * 100_000)  # 500 KB of text
    found = discover(project, SkillsSettings(max_file_bytes=64 * 1024), home=home, trusted=True)
    assert found.skills == [] and any("larger than 65,536 bytes" in s for s in found.skipped)


def test_a_fifo_skill_file_does_not_hang(home: Path, project: Path) -> None:
    """A FIFO is not listed (confine lists regular files and symlinks); one linked to is refused."""
    (project / ".mtagent/skills/pipe").mkdir(parents=True)
    os.mkfifo(project / ".mtagent/skills/pipe/SKILL.md")
    (project / ".mtagent/skills/linked").mkdir(parents=True)
    os.symlink(project / ".mtagent/skills/pipe/SKILL.md", project / ".mtagent/skills/linked/SKILL.md")
    found = discover(project, SkillsSettings(), home=home, trusted=True)
    assert found.skills == [] and any("linked/SKILL.md is not a regular file" in s for s in found.skipped)
    assert not any("pipe/" in s for s in found.skipped)


@pytest.mark.parametrize("name", ["../../etc", "a/b", "UPPER", "x" * 80, "-lead", "ok\x1b[2J"])
def test_bad_skill_names_are_skipped(home: Path, project: Path, name: str) -> None:
    path = project / ".mtagent/skills/s/SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nname: \"{name}\"\ndescription: d\n---\nbody\n")
    found = discover(project, SkillsSettings(), home=home, trusted=True)
    assert found.skills == [] and found.skipped


def test_front_matter_bomb_and_control_characters_stay_inert() -> None:
    """The shared YAML reader refuses aliases and repeated keys; escaped control characters are removed."""
    bomb = "\n".join(["---", "a: &a [x, x, x, x, x, x, x, x, x]", "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
                      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]", "name: ok", "description: d", "---", "body"])
    with pytest.raises(FrontMatterError, match="aliases"):
        parse(bomb)
    with pytest.raises(FrontMatterError, match="'name' appears twice"):
        parse("---\nname: ok\ndescription: d\nname: second-wins-not\n---\nbody")
    doc = parse("---\nname: ok\ndescription: \"hi\\x1b]0;pwn\\x07 there\"\nmetadata:\n  nested: ignored\n---\nbody")
    assert doc.fields == {"name": "ok", "description": "hi ]0;pwn there"} and doc.body == "body"
    with pytest.raises(FrontMatterError):
        parse("no front matter")
    with pytest.raises(FrontMatterError):
        parse("---\nname: x\n" + "k: v\n" * 500)


def test_block_scalar_description() -> None:
    doc = parse("---\nname: x\ndescription: >\n  Folded\n  text.\nlicense: MIT\n---\n")
    assert doc.fields["description"] == "Folded text." and doc.fields["license"] == "MIT"


def test_skill_body_is_loaded_pinned_and_reattachable_after_compaction(home: Path, project: Path) -> None:
    write_skill(project, "release", "Cut a release.", body="1. Bump the version.")
    toolset = Toolset.open([], Settings(), project_root=project, home=home, trusted=True, window=100_000)
    assert [b["function"]["name"] for b in toolset.bound()] == ["skill"]
    listing = [m for m in toolset.messages() if m.response_metadata["mtagent"]["bucket"] == "skills"]
    assert "release: Cut a release." in listing[0].content and "Bump" not in listing[0].content
    body = toolset.run_skill("release")
    assert "1. Bump the version." in body and toolset.skills.state("release") == "loaded"
    toolset.compacted()
    assert toolset.skills.state("release") == "deferred"
    delta = [m for m in toolset.messages() if m.response_metadata["mtagent"]["kind"] == "tools_delta"]
    assert "release" in delta[0].content
    assert toolset.run_skill("../../etc/passwd").startswith("Error: no skill named")


def test_skill_swapped_for_a_symlink_after_discovery_is_not_loaded(home: Path, project: Path,
                                                                   tmp_path: Path) -> None:
    path = write_skill(project, "release")
    book = SkillBook(discover(project, SkillsSettings(), home=home, trusted=True), SkillsSettings())
    (tmp_path / "secret").write_text("---\nname: release\ndescription: d\n---\nSECRET\n")
    path.unlink()
    os.symlink(tmp_path / "secret", path)
    with pytest.raises(OSError, match="outside the project"):
        book.load("release")


def test_skill_text_is_redacted(home: Path, project: Path) -> None:
    write_skill(project, "deploy", body="use key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")
    toolset = Toolset.open([], Settings(), project_root=project, home=home, trusted=True, window=100_000)
    assert "abcdefghijklmnopqrstuvwxyz0123456789" not in toolset.run_skill("deploy")


def test_bundled_files_are_read_inside_the_skill_folder_only(home: Path, project: Path, tmp_path: Path) -> None:
    write_skill(home, "pdf", "Fill PDF forms.", body="See forms.md.", folder="skills")
    (home / "skills" / "pdf" / "forms.md").write_text("Field names: name, date.\n")
    (home / "skills" / "secret.txt").write_text("outside the skill\n")
    os.symlink(tmp_path / "secret.md", home / "skills" / "pdf" / "link.md")
    (tmp_path / "secret.md").write_text("PRIVATE\n")
    toolset = Toolset.open([], Settings(), project_root=project, home=home, trusted=False, window=100_000)
    assert "Field names: name, date." in toolset.run_skill("pdf", "forms.md")
    for hostile in ("../secret.txt", "/etc/passwd", "link.md", "../../../../proc/self/environ"):
        answer = toolset.run_skill("pdf", hostile)
        assert answer.startswith("Error:") and "PRIVATE" not in answer and "outside the skill" not in answer
    assert toolset.run_skill("nope", "forms.md").startswith("Error: no skill named")


def test_the_langchain_skill_tool_matches_the_catalog_schema_and_runs(home: Path, project: Path) -> None:
    from mtagent.context.toolset import skill_schema
    from mtagent.tools.skill_tool import make_skill_tool

    write_skill(home, "pdf", "Fill PDF forms.", body="Step one.", folder="skills")
    (home / "skills" / "pdf" / "forms.md").write_text("Fields.\n")
    toolset = Toolset.open([], Settings(), project_root=project, home=home, trusted=False, window=100_000)
    tool = make_skill_tool(lambda: toolset)
    assert set(tool.args) == set(skill_schema()["function"]["parameters"]["properties"])
    assert "Step one." in tool.invoke({"name": "pdf"}) and "Fields." in tool.invoke({"name": "pdf", "file": "forms.md"})


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
