"""Fewer questions, not fewer guards (issue 37): with the sandbox on a shell command that stays inside
it runs without asking; one whose ``needs`` leave it asks and says why; deny rules and --approval deny
still hold; "always" never lets a command out of the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from mtagent.agent.approval import ApprovalPolicy
from mtagent.tools import sandbox


def _policy(mode: str = "ask", rules: dict[str, str] | None = None, sandboxed: bool = True) -> ApprovalPolicy:
    return ApprovalPolicy.from_rules(rules or {}, mode, sandboxed=sandboxed)


def test_a_sandboxed_command_runs_without_asking_and_one_leaving_it_asks_why() -> None:
    policy = _policy()
    assert policy.decide("shell", {"command": "pytest -q && rm -rf build"}).decision == "allow"
    verdict = policy.decide("shell", {"command": "pip install x", "needs": ["network:pypi.org"]})
    assert verdict.decision == "ask" and "network:pypi.org" in verdict.rule and "leave the sandbox" in verdict.rule


def test_without_the_sandbox_shell_asks_as_before() -> None:
    assert _policy(sandboxed=False).decide("shell", {"command": "ls"}).decision == "ask"


def test_leaving_the_sandbox_asks_in_auto_mode_too_and_deny_mode_runs_nothing() -> None:
    assert _policy("auto").decide("shell", {"command": "x", "needs": ["unsandboxed"]}).decision == "ask"
    assert _policy("auto").decide("shell", {"command": "x"}).decision == "allow"
    assert _policy("never").decide("shell", {"command": "ls"}).decision == "deny"
    assert _policy("never").decide("shell", {"command": "x", "needs": ["unsandboxed"]}).decision == "deny"


def test_rules_still_hold_inside_the_sandbox() -> None:
    policy = _policy(rules={"shell:rm *": "deny", "shell:git push*": "ask"})
    assert policy.decide("shell", {"command": "echo a; rm -rf x"}).decision == "deny"
    assert policy.decide("shell", {"command": "git push origin main"}).decision == "ask"


def test_always_for_a_sandboxed_command_does_not_let_it_out() -> None:
    policy = _policy()
    policy.remember("shell", {"command": "make"})
    assert policy.decide("shell", {"command": "make", "needs": ["unsandboxed"]}).decision == "ask"
    policy.remember("shell", {"command": "make", "needs": ["network:example.org"]})
    assert policy.decide("shell", {"command": "make", "needs": ["network:example.org"]}).decision == "allow"
    assert policy.decide("shell", {"command": "make", "needs": ["network:example.org", "unsandboxed"]}).decision == "ask"


@pytest.mark.skipif(sandbox.probe() is not None, reason=f"sandbox cannot run here: {sandbox.probe()}")
def test_a_session_in_ask_mode_runs_a_sandboxed_command_without_a_question(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from mtagent.agent.scripted import ScriptedChatModel
    from mtagent.agent.session import AgentSession
    from mtagent.config import Settings

    monkeypatch.setenv("MTAGENT_SANDBOX__MODE", "on")
    project = tmp_path / "project"
    project.mkdir()
    settings = Settings.model_validate({"agent": {"retry_base_seconds": 0.0}, "session_memory": {"enabled": False},
                                        "sandbox": {"mode": "on"}})
    inside = AIMessage(content="", tool_calls=[
        {"name": "shell", "args": {"command": "echo in > inside.txt"}, "id": "a", "type": "tool_call"}])
    leaving = AIMessage(content="", tool_calls=[
        {"name": "shell", "args": {"command": "echo out > ../outside.txt", "needs": ["unsandboxed"]},
         "id": "b", "type": "tool_call"}])
    model = ScriptedChatModel([inside, "done", leaving, "done"])
    with AgentSession.create(project, model=model, settings=settings, approval="ask") as session:
        assert session.run_turn("go").status == "done"  # no question
        assert (project / "inside.txt").read_text() == "in\n"
        assert session.run_turn("and now outside").status == "approval_required"  # it asks; nobody said yes yet
    assert not (tmp_path / "outside.txt").exists()
