"""The one front matter reader (rules, agent profiles, skills) on hostile YAML."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from mtagent.agent.subagents.profiles import parse_profile
from mtagent.config import MemorySettings, SkillsSettings
from mtagent.context.static.front_matter import MAX_CHARS, parse_front_matter
from mtagent.context.static.rules import load_rules
from mtagent.context.toolset import discover
from mtagent.context.toolset.frontmatter import parse


def _bomb(levels: int, key: str = "description") -> str:
    """``levels`` of nine aliases each: 9**levels items once walked, a few hundred bytes as text."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "---\n" + "\n".join(lines) + f"\n{key}: *l{levels - 1}\nname: lol\n---\nbody\n"


def _skill(root: Path, folder: str, text: str) -> None:
    path = root / ".mtagent/skills" / folder / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(text)


def test_a_billion_laughs_skill_is_skipped_quickly_and_small(tmp_path: Path) -> None:
    _skill(tmp_path, "lol", _bomb(10))
    tracemalloc.start()
    started = time.monotonic()
    found = discover(tmp_path, SkillsSettings(), home=tmp_path / "home", trusted=True)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert time.monotonic() - started < 5 and peak < 20_000_000
    assert found.skills == [] and any("lol/SKILL.md" in s and "aliases" in s for s in found.skipped)


def test_an_agent_profile_bomb_is_refused_not_walked() -> None:
    """profiles did ``str(meta["description"])``: a walked bomb (9**5 items here; 9**10 in the wild)."""
    profile, problem = parse_profile("lol", _bomb(5), source="p", trusted=False)
    assert profile is None and problem and "aliases" in problem


def test_deep_nesting_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    """``[[[[…`` thousands deep made PyYAML's composer raise RecursionError out of load_rules."""
    rule = tmp_path / ".mtagent/rules/deep.md"
    rule.parent.mkdir(parents=True)
    rule.write_text("---\npaths: " + "[" * 5000 + "]" * 5000 + "\n---\nA rule.\n")
    rules = load_rules(tmp_path, MemorySettings(include_max_depth=3, rules_max_chars=40_000))
    assert [r.text for r in rules.rules] == ["A rule."]
    assert any("deep.md" in w and "nested more than" in w for w in rules.warnings)


@pytest.mark.parametrize("meta", ["- a\n- b", "just a sentence", "42"])
def test_a_non_mapping_skill_front_matter_is_skipped_with_a_warning(tmp_path: Path, meta: str) -> None:
    _skill(tmp_path, "odd", f"---\n{meta}\n---\nbody\n")
    found = discover(tmp_path, SkillsSettings(), home=tmp_path / "home", trusted=True)
    assert found.skills == [] and any("odd/SKILL.md" in s and "must be a mapping" in s for s in found.skipped)


def test_oversized_front_matter_is_not_parsed() -> None:
    text = "---\nname: big\ndescription: " + "x" * MAX_CHARS + "\n---\nbody"
    meta, body, problem = parse_front_matter(text)
    assert meta == {} and body == "body" and problem and "longer than" in problem


def test_a_colon_in_an_unquoted_description_says_to_quote_it(tmp_path: Path) -> None:
    """The old skills subset read ``a: b`` as text; YAML (and every other skills reader) refuses it."""
    _skill(tmp_path, "colon", "---\nname: colon\ndescription: Use when: the user asks\n---\nbody\n")
    found = discover(tmp_path, SkillsSettings(), home=tmp_path / "home", trusted=True)
    assert found.skills == []
    assert any("colon/SKILL.md" in s and "line 3" in s and "in quotes" in s for s in found.skipped)


def test_yaml_scalars_read_as_yaml_means() -> None:
    """Continuation lines, escaped quotes and numbers: what the old subset reader got wrong."""
    doc = parse('---\nname: 2fa\ndescription: Sets up\n  two-factor auth.\nlicense: "MIT \\"or\\" BSD"\n'
                "version: 2\nallowed-tools: [Read, Grep]\n---\nbody")
    assert doc.fields == {"name": "2fa", "description": "Sets up two-factor auth.", "license": 'MIT "or" BSD',
                          "version": "2"}
