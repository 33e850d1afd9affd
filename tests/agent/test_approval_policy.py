"""Approval rules: per tool, per shell command pattern, compound commands, and modes."""

from __future__ import annotations

import pytest

from mtagent.agent.approval import ApprovalPolicy, Verdict, is_simple_command, shell_words, unique_call_ids
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


@pytest.mark.parametrize(("command", "expected"), [
    ("git status && rm -rf /tmp/x", "deny"), ("ls; rm -f a", "deny"),  # one denied part denies a compound command
    ("git status | ls -la", "ask"), ("git status && make deploy", "ask"),  # never allowed by a pattern
    ("ls $(cat targets)", "ask"), ("git status `whoami`", "ask"),  # command substitution is never auto-allowed
])
def test_a_compound_command_is_denied_by_any_part_and_never_allowed_by_a_pattern(command: str, expected: str):
    assert decide(command) == expected


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


# ── sharp checks: exact verdicts, rule labels and re-keyed ids a small bug would change (mutation testing, #22) ──


def verdict(policy: ApprovalPolicy, command: str) -> Verdict:
    return policy.decide("shell", {"command": command})


def test_save_memory_asks_for_global_and_user_memory_and_allows_project_and_team() -> None:
    policy = ApprovalPolicy.from_rules({})
    assert policy.decide("save_memory").decision == "ask"  # no arguments at all: global
    assert policy.decide("save_memory", {"namespace": "user"}).decision == "ask"
    assert policy.decide("save_memory", {"namespace": "project"}).decision == "allow"
    assert policy.decide("save_memory", {"namespace": "team"}).decision == "allow"
    assert policy.decide("save_memory", {"namespace": None, "scope": "project"}).decision == "allow"
    assert policy.decide("save_memory", {"scope": ""}).decision == "ask"
    assert policy.decide("save_memory", {"namespace": "global", "scope": "project"}).decision == "ask"
    asked = policy.decide("save_memory", {"namespace": "user"})
    assert asked.rule.startswith("default for save_memory")
    assert policy.decide("read_file", {"namespace": "user"}) == Verdict("allow", "default for read_file")


def test_deny_wins_a_tie_between_patterns_of_the_same_length_in_either_order() -> None:
    for rules in ({"shell:make *": "allow", "shell:* test": "deny"}, {"shell:* test": "deny", "shell:make *": "allow"}):
        got = verdict(ApprovalPolicy.from_rules(rules), "make test")
        assert got == Verdict("deny", "approval rule 'shell:* test'"), rules


def test_the_first_of_two_equally_long_non_deny_patterns_wins() -> None:
    rules = {"shell:make *": "allow", "shell:* test": "ask"}
    assert verdict(ApprovalPolicy.from_rules(rules), "make test") == Verdict("allow", "approval rule 'shell:make *'")
    rules = {"shell:* test": "ask", "shell:make *": "allow"}
    assert verdict(ApprovalPolicy.from_rules(rules), "make test") == Verdict("ask", "approval rule 'shell:* test'")


def test_the_longest_pattern_wins_whichever_comes_first() -> None:
    for rules in ({"shell:git *": "ask", "shell:git status*": "allow"}, {"shell:git status*": "allow", "shell:git *": "ask"}):
        assert verdict(ApprovalPolicy.from_rules(rules), "git status") == \
            Verdict("allow", "approval rule 'shell:git status*'")


def test_rules_are_parsed_case_insensitively_with_the_pattern_trimmed() -> None:
    policy = ApprovalPolicy.from_rules({"shell:  ls*  ": "ALLOW", "Write_File": "Deny"})
    assert policy.shell_rules == [("ls*", "allow")]
    assert policy.tool_rules == {"Write_File": "deny"}
    assert verdict(policy, "ls -la") == Verdict("allow", "approval rule 'shell:ls*'")


def test_remembering_a_tool_allows_it_and_says_the_user_did() -> None:
    policy = ApprovalPolicy.from_rules({"edit_file": "ask"})
    assert policy.decide("edit_file") == Verdict("ask", "approval rule 'edit_file'")
    policy.remember("edit_file")
    assert policy.decide("edit_file") == Verdict("allow", "allowed by the user for this session")
    assert policy.decide("write_file") == Verdict("ask", "default for write_file")
    assert policy.exact_commands == set()


def test_a_remembered_shell_command_is_matched_trimmed_and_only_for_shell() -> None:
    policy = ApprovalPolicy.from_rules({})
    policy.remember("shell", {"command": "  make test  "})
    assert policy.exact_commands == {"make test"}
    assert verdict(policy, " make test ") == Verdict("allow", "allowed by the user for this session")
    assert policy.tool_rules == {}
    assert verdict(policy, "make") == Verdict("ask", "default for shell")
    policy.remember("shell")  # no arguments: the empty command, nothing else
    assert verdict(policy, "make") == Verdict("ask", "default for shell")


def test_a_remembered_command_with_a_denied_part_stays_denied() -> None:
    policy = ApprovalPolicy.from_rules({"shell:rm *": "deny"})
    policy.remember("shell", {"command": "make && rm -rf x"})
    assert verdict(policy, "make && rm -rf x").decision == "deny"


def test_a_shell_tool_rule_applies_when_no_pattern_matches_but_deny_patterns_still_hold() -> None:
    policy = ApprovalPolicy.from_rules({"shell": "allow", "shell:rm *": "deny"})
    assert verdict(policy, "make test") == Verdict("allow", "approval rule 'shell'")
    assert verdict(policy, "rm -rf x") == Verdict("deny", "approval rule 'shell:rm *'")
    assert verdict(policy, "make && rm x").decision == "deny"


def test_a_simple_command_without_a_matching_pattern_falls_back_to_the_default() -> None:
    policy = ApprovalPolicy.from_rules({"shell:git *": "allow"})
    assert verdict(policy, "make test") == Verdict("ask", "default for shell")
    assert verdict(policy, "git log") == Verdict("allow", "approval rule 'shell:git *'")


def test_a_deny_pattern_sees_commands_inside_parentheses_and_substitutions() -> None:
    policy = ApprovalPolicy.from_rules({"shell:rm *": "deny", "shell:echo *": "allow"}, "auto")
    for command in ("(rm -rf x)", "echo $(rm -rf x)", "echo ok>(rm -rf x)", "{ rm -rf x; }"):
        assert verdict(policy, command).decision == "deny", command


def test_modes_change_only_ask_verdicts_and_keep_the_rule() -> None:
    rules = {"shell:make *": "ask", "shell:ls*": "allow", "shell:rm *": "deny"}
    auto = ApprovalPolicy.from_rules(rules, "auto")
    never = ApprovalPolicy.from_rules(rules, "never")
    ask = ApprovalPolicy.from_rules(rules, "ask")
    assert verdict(auto, "make x") == Verdict("allow", "approval rule 'shell:make *'; --approval allow")
    assert verdict(never, "make x") == Verdict("deny", "approval rule 'shell:make *'; --approval deny (no one to ask)")
    assert verdict(ask, "make x") == Verdict("ask", "approval rule 'shell:make *'")
    assert verdict(never, "ls") == Verdict("allow", "approval rule 'shell:ls*'")
    assert verdict(auto, "rm x") == Verdict("deny", "approval rule 'shell:rm *'")
    assert never.decide("grep") == Verdict("allow", "default for grep")


def test_shell_words_lex_quotes_operators_and_keep_hashes() -> None:
    assert shell_words("echo 'a b' c") == ["echo", "a b", "c"]
    assert shell_words("ls # not a comment") == ["ls", "#", "not", "a", "comment"]
    assert shell_words("a&&b") == ["a", "&&", "b"]
    assert shell_words("echo 'x") is None
    assert shell_words("cp a,b c:d x@y") == ["cp", "a,b", "c:d", "x@y"]  # words split on whitespace only


def test_simple_commands() -> None:
    assert is_simple_command("echo 'a b' c")
    assert is_simple_command("ls -la")
    assert is_simple_command("") is False  # a bool, not just falsy
    assert is_simple_command("   ") is False
    assert is_simple_command("echo 'x") is False
    assert not is_simple_command("echo (x")
    assert not is_simple_command("echo x)")


def test_a_hash_is_not_a_comment_for_an_allow_pattern() -> None:
    # "ls #" lexes to two words; it is simple, and matches "ls *"
    policy = ApprovalPolicy.from_rules({"shell:ls *": "allow"})
    assert verdict(policy, "ls #x").decision == "allow"
    deny = ApprovalPolicy.from_rules({"shell:* # *": "deny"}, "auto")
    assert verdict(deny, "ls # x").decision == "deny"


def test_unique_call_ids_rekeys_duplicates_missing_ids_and_avoids_taken_names() -> None:
    calls = [{"id": "a", "name": "x"}, {"id": "a", "name": "y"}, {"id": "a_dup1", "name": "z"},
             {"name": "w"}, {"id": None, "name": "v"}, {"id": "a", "name": "u"}]
    out, content = unique_call_ids(calls, "plain text")
    assert [c["id"] for c in out] == ["a", "a_dup1_", "a_dup1", "call_dup3", "call_dup1", "a_dup2"]
    assert content == "plain text"
    assert out[0] is calls[0] and calls[1]["id"] == "a"  # the input is not changed


def test_unique_call_ids_rekeys_tool_use_blocks_in_order_and_leaves_others() -> None:
    calls = [{"id": "t", "name": "x"}, {"id": "t", "name": "y"}, {"id": "t", "name": "z"}]
    content = [{"type": "text", "text": "hi", "id": "t"}, {"type": "tool_use", "id": "t"}, "raw",
               {"type": "tool_use", "id": "t"}, {"type": "tool_use", "id": "t"}]
    out, blocks = unique_call_ids(calls, content)
    assert [c["id"] for c in out] == ["t", "t_dup1", "t_dup2"]
    assert blocks == [{"type": "text", "text": "hi", "id": "t"}, {"type": "tool_use", "id": "t"}, "raw",
                      {"type": "tool_use", "id": "t_dup1"}, {"type": "tool_use", "id": "t_dup2"}]
    same, untouched = unique_call_ids([{"id": "p"}, {"id": "q"}], content)
    assert [c["id"] for c in same] == ["p", "q"] and untouched is content


def test_a_deny_pattern_sees_a_command_after_a_reserved_word() -> None:
    policy = ApprovalPolicy.from_rules({"shell:rm *": "deny"}, "auto")
    for command in ("if true; then rm -rf x; fi", "while true; do rm -rf x; done", "! rm -rf x", "time rm -rf x"):
        assert verdict(policy, command).decision == "deny", command
    assert verdict(policy, "make then").decision == "allow"  # a reserved word as an argument is an argument


def test_two_calls_without_ids_never_get_the_same_new_id() -> None:
    out, _ = unique_call_ids([{"id": "a", "name": "x"}, {"name": "w"}, {"name": "v"}])
    assert [c["id"] for c in out] == ["a", "call_dup1", "call_dup1_"]
