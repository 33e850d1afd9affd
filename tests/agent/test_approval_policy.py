"""Approval rules: per tool, per shell command pattern, compound commands, and modes."""

from __future__ import annotations

import pytest

from mtagent.agent.approval import ApprovalPolicy
from mtagent.errors import ConfigError

RULES = {"shell:git status*": "allow", "shell:ls*": "allow", "shell:rm *": "deny", "read_file": "allow",
         "write_file": "allow"}


def decide(command: str, rules=RULES, mode="ask") -> str:
    return ApprovalPolicy.from_rules(rules, mode).decide("shell", {"command": command}).decision


def test_mutating_tools_ask_by_default_and_readers_are_allowed():
    policy = ApprovalPolicy.from_rules({})
    assert policy.decide("shell", {"command": "ls"}).decision == "ask"
    assert policy.decide("edit_file", {}).decision == "ask"
    assert policy.decide("write_file", {}).decision == "ask"
    assert policy.decide("grep", {"pattern": "x"}).decision == "allow"


def test_tool_rule_overrides_the_default():
    assert ApprovalPolicy.from_rules(RULES).decide("write_file", {}).decision == "allow"


def test_shell_patterns_allow_and_deny_commands():
    assert decide("git status --short") == "allow"
    assert decide("rm -rf build") == "deny"
    assert decide("make test") == "ask"


def test_one_denied_part_denies_a_compound_command():
    assert decide("git status && rm -rf /tmp/x") == "deny"
    assert decide("ls; rm -f a") == "deny"


def test_a_compound_command_is_never_allowed_by_a_pattern():
    assert decide("git status | ls -la") == "ask"
    assert decide("git status && make deploy") == "ask"


def test_command_substitution_is_never_auto_allowed():
    assert decide("ls $(cat targets)") == "ask"
    assert decide("git status `whoami`") == "ask"


def test_longest_pattern_wins():
    rules = {"shell:git *": "deny", "shell:git status*": "allow"}
    assert decide("git status", rules) == "allow"
    assert decide("git push", rules) == "deny"


def test_modes_shift_only_what_would_be_asked():
    assert decide("make test", mode="auto") == "allow"
    assert decide("rm -rf x", mode="auto") == "deny"
    assert decide("make test", mode="never") == "deny"
    assert decide("git status", mode="never") == "allow"


def test_mode_verdicts_name_the_cli_flag_the_user_typed():
    allowed = ApprovalPolicy.from_rules({}, "auto").decide("shell", {"command": "make test"})
    denied = ApprovalPolicy.from_rules({}, "never").decide("shell", {"command": "make test"})
    assert "--approval allow" in allowed.rule and "--approval deny" in denied.rule


def test_bad_rules_are_config_errors():
    with pytest.raises(ConfigError, match="is not one of"):
        ApprovalPolicy.from_rules({"shell": "maybe"})
    with pytest.raises(ConfigError, match="unknown approval mode"):
        ApprovalPolicy.from_rules({}, "sometimes")
    with pytest.raises(ConfigError, match="empty command pattern"):
        ApprovalPolicy.from_rules({"shell:": "allow"})


def test_remembered_shell_command_is_allowed_exactly_and_labelled():
    policy = ApprovalPolicy.from_rules({})
    policy.remember("shell", {"command": "make test"})
    verdict = policy.decide("shell", {"command": "make test"})
    assert (verdict.decision, verdict.rule) == ("allow", "allowed by the user for this session")
    assert policy.decide("shell", {"command": "make deploy"}).decision == "ask"
