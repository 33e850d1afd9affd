"""Approval bypasses (issue #13): shell allow patterns vs operators, duplicate tool-call ids,
and save_memory to global memory under --approval deny."""

from __future__ import annotations

import pytest

from mtagent.agent.approval import ApprovalPolicy, is_simple_command, unique_call_ids

ECHO = {"shell:echo *": "allow", "shell:git status*": "allow"}

SMUGGLED = [
    "echo hi & touch x", "echo hi && touch x", "echo hi; touch x", "echo hi || touch x", "echo hi | sh",
    "echo > ../x", "echo hi >> ~/.bashrc", "echo < /etc/passwd", "echo $(touch x)", "echo `touch x`",
    "echo ${IFS}x", "echo $HOME", "echo hi\ntouch x", "echo hi\rtouch x", "echo <(touch x)", "echo >(touch x)",
    "echo hi &", "echo 'unclosed", 'echo "unclosed', "echo hi 2>&1", "echo hi >|x", "echo (x)",
    "git status; rm -rf /", "git status\nrm -rf /", "git status &>/dev/null", "echo hi\\\ntouch x",
    "echo a\x00b",
]


@pytest.mark.parametrize("command", SMUGGLED)
def test_an_allow_pattern_never_matches_a_command_with_operators(command: str) -> None:
    for mode in ("ask", "never"):
        verdict = ApprovalPolicy.from_rules(ECHO, mode).decide("shell", {"command": command})
        assert verdict.decision != "allow", (command, verdict)
    assert not is_simple_command(command)


def test_plain_commands_still_match_their_pattern() -> None:
    policy = ApprovalPolicy.from_rules(ECHO, "never")
    assert policy.decide("shell", {"command": "echo hi there"}).decision == "allow"
    assert policy.decide("shell", {"command": "git status --short"}).decision == "allow"


def test_a_deny_pattern_still_sees_every_part() -> None:
    policy = ApprovalPolicy.from_rules({"shell:rm *": "deny", "shell:echo *": "allow"}, "auto")
    for command in ("echo hi && rm -rf x", "echo hi;rm -rf x", "echo hi&rm -rf x", "echo hi\nrm -rf x"):
        assert policy.decide("shell", {"command": command}).decision == "deny", command


def test_a_remembered_command_matches_only_exactly() -> None:
    policy = ApprovalPolicy.from_rules({})
    policy.remember("shell", {"command": "make a && make b"})
    assert policy.decide("shell", {"command": "make a && make b"}).decision == "allow"
    assert policy.decide("shell", {"command": "make a && make b; rm x"}).decision == "ask"


def test_save_memory_to_global_memory_needs_approval_and_deny_denies_it() -> None:
    assert ApprovalPolicy.from_rules({}).decide("save_memory", {"fact": "x"}).decision == "ask"
    assert ApprovalPolicy.from_rules({}, "never").decide("save_memory", {"fact": "x", "scope": "global"}).decision \
        == "deny"
    assert ApprovalPolicy.from_rules({}, "never").decide("save_memory", {"fact": "x", "scope": "project"}).decision \
        == "allow"
    assert ApprovalPolicy.from_rules({"save_memory": "deny"}, "auto").decide("save_memory", {"fact": "x"}).decision \
        == "deny"


def test_duplicate_tool_call_ids_are_rekeyed_in_calls_and_content() -> None:
    calls = [{"id": "c1", "name": "read_file", "args": {}}, {"id": "c1", "name": "shell", "args": {}},
             {"id": "", "name": "ls", "args": {}}, {"id": "c1", "name": "grep", "args": {}}]
    content = [{"type": "text", "text": "x"}, {"type": "tool_use", "id": "c1"}, {"type": "tool_use", "id": "c1"}]
    fixed, blocks = unique_call_ids(calls, content)
    ids = [c["id"] for c in fixed]
    assert ids[0] == "c1" and len(set(ids)) == 4 and all(ids)
    assert [c["name"] for c in fixed] == ["read_file", "shell", "ls", "grep"]
    assert blocks[1]["id"] == "c1" and blocks[2]["id"] == ids[1]


def test_a_shell_call_sharing_an_id_with_an_allowed_call_does_not_run_under_deny(project) -> None:
    from langchain_core.messages import AIMessage

    from mtagent.agent.scripted import ScriptedChatModel
    from mtagent.agent.session import AgentSession
    from mtagent.config import Settings

    settings = Settings.model_validate({"agent": {"retry_base_seconds": 0.0}, "session_memory": {"enabled": False}})
    victim = project / "victim.txt"
    victim.write_text("keep me\n")
    twin = AIMessage(content="", tool_calls=[
        {"name": "ls", "args": {"path": "."}, "id": "dup", "type": "tool_call"},
        {"name": "shell", "args": {"command": f"rm -f {victim}"}, "id": "dup", "type": "tool_call"},
    ])
    model = ScriptedChatModel([twin, "done"])
    with AgentSession.create(project, model=model, settings=settings, approval="never") as session:
        result = session.run_turn("go")
    assert victim.exists(), "the shell call ran under --approval deny"
    answered = [m for m in model.calls[1] if m.type == "tool"]
    assert len(answered) == 2 and len({m.tool_call_id for m in answered}) == 2
    assert result.tool_executions == 1
