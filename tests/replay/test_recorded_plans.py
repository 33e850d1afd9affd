"""The plan calls of recorded sessions (Claude Code TodoWrite, Codex update_plan, deepagents write_todos,
OpenHands task_tracker) as a replay reads them — through the engine's own reader, so the replayed
mtagent session's plan state and the work-state ledger follow them — and hostile arguments never
crash or inflate a replay."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent.context.ledger import PlanStep, WorkPlan, current_plan, ledger_from_messages, plan_from_call
from mtagent.context.ledger.workplan import MAX_STEP_CHARS, MAX_STEPS


def _call(name: str, args: object, call_id: str = "c1") -> AIMessage:
    return AIMessage(content="", tool_calls=[{"id": call_id, "name": name, "args": args, "type": "tool_call"}])


def test_claude_code_todowrite_maps_its_three_statuses() -> None:
    plan = plan_from_call("TodoWrite", {"todos": [
        {"content": "Read the parser", "status": "completed", "activeForm": "Reading the parser"},
        {"content": "Fix the off-by-one", "status": "in_progress", "activeForm": "Fixing"},
        {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
    ]})
    assert plan is not None and plan.steps == (PlanStep("Read the parser", "done"),
                                               PlanStep("Fix the off-by-one", "in_progress"),
                                               PlanStep("Run the tests", "pending"))


def test_codex_update_plan_and_deepagents_write_todos() -> None:
    codex = plan_from_call("update_plan", {"explanation": "why", "plan": [
        {"step": "Reproduce", "status": "completed"}, {"step": "Patch", "status": "in_progress"}]})
    assert codex is not None and codex.steps == (PlanStep("Reproduce", "done"), PlanStep("Patch", "in_progress"))
    todos = plan_from_call("write_todos", {"todos": [{"content": "Write docs", "status": "pending"}]})
    assert todos is not None and todos.steps == (PlanStep("Write docs", "pending"),)


def test_openhands_task_tracker_plan_sets_and_view_only_reads() -> None:
    plan = plan_from_call("task_tracker", {"command": "plan", "task_list": [
        {"id": "1", "title": "Find the bug", "status": "done", "notes": "in lexer.pony"},
        {"id": "2", "title": "Add a test", "status": "todo"}]})
    assert plan is not None and plan.steps == (PlanStep("Find the bug", "done"), PlanStep("Add a test", "pending"))
    assert plan_from_call("task_tracker", {"command": "view"}) is None


@pytest.mark.parametrize("name,args", [
    ("TodoWrite", "not an object"),
    ("TodoWrite", "{broken json"),
    ("TodoWrite", {"todos": "a string"}),
    ("TodoWrite", {"todos": {"content": "x"}}),
    ("update_plan", None),
    ("update_plan", 42),
    ("Bash", {"todos": [{"content": "not a plan tool", "status": "done"}]}),
    (None, {"todos": []}),
])
def test_malformed_or_foreign_calls_set_no_plan(name: object, args: object) -> None:
    assert plan_from_call(name, args) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("items", [
    [1, None, [], {"status": "done"}, {"content": {"deep": ["x"]}, "status": ["weird"]}],
    [{"content": "x\x00\x1b[31m\nred", "status": 5}],
])
def test_garbage_items_never_crash_and_read_as_plain_pending_lines(items: list) -> None:
    plan = plan_from_call("TodoWrite", {"todos": items})
    assert plan is not None
    for step in plan.steps:
        assert step.status in ("pending", "in_progress", "done")
        assert "\x00" not in step.text and "\n" not in step.text and "\x1b" not in step.text


def test_a_crafted_plan_is_capped_in_steps_and_characters() -> None:
    plan = plan_from_call("TodoWrite", {"todos": [{"content": "x" * 10 * MAX_STEP_CHARS, "status": "done"}] * 10_000})
    assert plan is not None and len(plan.steps) == MAX_STEPS
    assert len(plan.steps[0].text) <= MAX_STEP_CHARS


def test_the_ledger_of_a_recorded_session_holds_its_latest_plan() -> None:
    messages = [
        HumanMessage("do it"),
        _call("TodoWrite", {"todos": [{"content": "first", "status": "pending"}]}, "a"),
        ToolMessage("ok", tool_call_id="a"),
        _call("TodoWrite", {"todos": [{"content": "first", "status": "completed"}]}, "b"),
        ToolMessage("ok", tool_call_id="b"),
        _call("TodoWrite", {"todos": "garbage"}, "c"),
        ToolMessage("Error: todos must be a list", tool_call_id="c", status="error"),
    ]
    plan = ledger_from_messages(messages).plan
    assert isinstance(plan, WorkPlan) and plan.steps == (PlanStep("first", "done"),)
    assert current_plan(messages) == plan


def test_a_claude_code_session_with_malformed_todowrite_inputs_still_replays(tmp_path) -> None:
    """A string or list as a tool_use's input, or a call without an id, is read leniently: the
    session replays (it was refused whole as 'not a readable claude-code trajectory')."""
    import json

    from typer.testing import CliRunner

    from mtagent.cli.app import app

    def rec(kind: str, body: dict, uuid: str, parent: str | None) -> str:
        return json.dumps({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
                           "timestamp": "2026-02-10T21:11:52.481Z", "message": body})

    def use(i: int, tool_input: object, with_id: bool = True) -> dict:
        block = {"type": "tool_use", "name": "TodoWrite", "input": tool_input, **({"id": f"t{i}"} if with_id else {})}
        return {"id": f"m{i}", "role": "assistant", "content": [block]}

    def result(i: int) -> dict:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}]}

    lines = [rec("user", {"role": "user", "content": "Fix src/a.py. Never touch setup.py."}, "u0", None),
             rec("assistant", use(1, "not an object"), "a1", "u0"), rec("user", result(1), "u1", "a1"),
             rec("assistant", use(2, ["a", "b"]), "a2", "u1"), rec("user", result(2), "u2", "a2"),
             rec("assistant", use(3, {"todos": [{"content": "x", "status": "completed"}]}, with_id=False), "a3", "u2"),
             rec("assistant", {"id": "m4", "role": "assistant", "content": [{"type": "text", "text": "done"}]}, "a4", "a3")]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = CliRunner().invoke(app, ["replay", str(path), "-s", "mtagent", "-s", "threshold-compact", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert not data["failures"] and {r["strategy"] for r in data["results"]} == {"mtagent", "threshold-compact"}


def test_a_mini_swe_agent_session_with_malformed_plan_calls_still_replays(tmp_path) -> None:
    """Arguments that are not an object, a call that is not an object or has no function, a call
    without an id: skipped or read leniently, never a refused file or a crash."""
    import json

    from typer.testing import CliRunner

    from mtagent.cli.app import app

    calls = [{"id": "c1", "type": "function", "function": {"name": "update_plan", "arguments": "[1, 2]"}},
             "junk", {"id": "c2"}, {"function": {"name": "write_todos", "arguments": '{"todos": 5}'}}]
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "Fix it. Never touch setup.py."},
                {"role": "assistant", "content": "a", "tool_calls": calls},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}, {"role": "assistant", "content": "done"}]
    path = tmp_path / "bad.traj.json"
    path.write_text(json.dumps({"trajectory_format": "mini-swe-agent-1.1", "messages": messages}), encoding="utf-8")
    out = CliRunner().invoke(app, ["replay", str(path), "-s", "mtagent", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["results"][0]["turns"] == 2
