"""The README's promises: the two set-up commands, CI running the second, and the settings table in docs/."""

from __future__ import annotations

import re
from pathlib import Path

from mtagent.cli.config_cmd import reference_markdown

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


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
