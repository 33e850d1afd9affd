"""The README's promises: the two set-up commands, CI running the second, and the settings table in docs/;
every link of the README and docs/ stays inside the repository and points at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

from mtagent.cli.config_cmd import reference_markdown

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)|<(https?://[^>]+)>")


def _setup_commands() -> list[str]:
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return [line for block in blocks for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_has_exactly_two_setup_commands_main_job_then_tests():
    commands = _setup_commands()
    assert len(commands) == 2
    assert commands[0].endswith("mtagent demo")
    assert "pytest" in commands[1] and ".[dev]" in commands[1]


def test_ci_runs_the_readmes_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = _setup_commands()[1]
    assert "pip install -q -e '.[dev]'" in ci and "pip install -e '.[dev]'" in test_command
    assert re.search(r"^python -m pytest$", ci, flags=re.M) and test_command.endswith("python -m pytest")


def test_every_test_file_ci_names_exists():
    """The minimum-versions step names test files; one merged away would make that step fail in CI only."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    named = re.findall(r"\btests/[\w/]+\.py\b", ci)
    assert named and [n for n in named if not (ROOT / n).is_file()] == []


def test_configuration_reference_matches_config_py():
    block = CONFIGURATION.split("<!-- config-reference:start -->\n", 1)[1].split("\n<!-- config-reference:end -->", 1)[0]
    assert block == reference_markdown(), "run `mtagent config reference` and paste it into docs/configuration.md"


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code is not a link
    return [next(g for g in m.groups() if g) for m in LINK.finditer(text)]


def test_no_link_leaves_the_repository():
    outside = [(p.name, link) for p in PAGES for link in _links(p) if re.match(r"^[a-z][a-z0-9+.-]*:", link)]
    assert outside == []


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for link in _links(page):
            target = link.split("#", 1)[0]
            if target and not (page.parent / target).resolve().exists():
                broken.append((page.name, link))
    assert broken == []


def test_the_readme_indexes_every_docs_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in PAGES[1:] if f"(docs/{p.name})" not in readme]
    assert missing == []
