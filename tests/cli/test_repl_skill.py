"""/skill NAME in the REPL: the skill's instructions go to the model as the next message; /context names
the tool catalog; an unknown skill is one line and nothing is sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from mtagent import trust
from mtagent.cli.repl import Repl, key_bindings
from mtagent.cli.run_cmd import SessionOptions
from mtagent import paths
from mtagent.session.files_store import FilesStore
from mtagent.session.reader import read_records


@pytest.fixture
def pipe() -> Iterator:
    with create_pipe_input() as inp:
        yield inp


def test_skill_command_sends_the_body_and_the_request(tmp_path: Path, pipe) -> None:
    project = tmp_path / "proj"
    skill = project / ".mtagent" / "skills" / "release" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: release\ndescription: Cut a release.\n---\n1. Bump the version in pyproject.\n")
    trust.set_trust(project, True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["Bumped."]), encoding="utf-8")
    console = Console(record=True, width=160, force_terminal=False)
    prompt = PromptSession(input=pipe, output=DummyOutput(), key_bindings=key_bindings(), multiline=True)
    repl = Repl(SessionOptions(cwd=project, model=f"scripted:{script}"), console=console, prompt_session=prompt,
                ask=lambda q: "y")
    pipe.send_text("/skill nope\r/skill release for 2.0\r/context explain\r/exit\r")
    assert repl.run() == 0
    out = console.export_text()
    assert "no skill named 'nope'" in out and "Bumped." in out
    assert "tool catalog:" in out and "1 skills" in out and "1 loaded" in out
    users = [r["content"] for r in read_records(FilesStore().session_infos(paths.project_hash(project))[0].path) if r.get("role") == "user"]
    assert len(users) == 1 and "1. Bump the version in pyproject." in users[0] and users[0].endswith("for 2.0")


def test_an_untrusted_projects_skill_is_asked_about_and_named_when_not_found(tmp_path: Path, pipe) -> None:
    """#33/#36: the trust question covers the project's skills; `/skill NAME` of an existing but untrusted
    skill says so (it said "no skills found: add one as .mtagent/skills/…")."""
    from mtagent.cli.trust_cmd import first_run_question

    project = tmp_path / "proj"
    skill = project / ".claude" / "skills" / "explaining-code" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: explaining-code\ndescription: Explain code.\n---\nUse analogies.\n")
    question = first_run_question(project)
    assert question is not None and "skill explaining-code (.claude/skills)" in question
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["ok"]), encoding="utf-8")
    console = Console(record=True, width=200, force_terminal=False)
    prompt = PromptSession(input=pipe, output=DummyOutput(), key_bindings=key_bindings(), multiline=True)
    asked: list[str] = []
    repl = Repl(SessionOptions(cwd=project, model=f"scripted:{script}"), console=console, prompt_session=prompt,
                ask=lambda q: asked.append(q) or "n")
    pipe.send_text("/skill explaining-code\r/exit\r")
    assert repl.run() == 0
    out = console.export_text()
    assert asked and "explaining-code" in asked[0]
    assert "explaining-code" in out and "not trusted" in out and "mtagent trust" in out
    assert "no skills found" not in out


def test_the_skill_tool_names_an_untrusted_skill(tmp_path: Path) -> None:
    from mtagent.config import load_settings
    from mtagent.context.toolset.skills import SkillBook, discover
    from mtagent.context.toolset.toolset import Toolset

    project = tmp_path / "proj"
    skill = project / ".mtagent" / "skills" / "release" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: release\ndescription: Cut a release.\n---\nBump.\n")
    found = discover(project, load_settings(project).skills)
    assert found.skills == [] and found.untrusted == ["release"]
    book = SkillBook(found, load_settings(project).skills)
    toolset = Toolset.__new__(Toolset)
    toolset.skills = book
    error = Toolset.run_skill(toolset, "release")
    assert error.startswith("Error: ") and "not trusted" in error and "mtagent trust" in error
