"""A plan survives every compaction: a scripted session writes a plan, works with large outputs in
a small window and is compacted at least three times; the request after each compaction carries
the plan with its statuses and the user's latest request verbatim (checked on the payload the real
langchain-openai client sent to the local stub server). The summary model is the session's own,
asked through the stub for its part only, under context.summary_output_tokens."""

from __future__ import annotations

from typing import Any

from agent_helpers import agent_settings
from mtagent.agent.models import create_chat_model
from mtagent.agent.session import AgentSession
from mtagent.context.ledger import PlanStep, WorkPlan
from mtagent.session.reader import read_records
from stub_openai import StubOpenAI, request_text

STEPS = ["read the config loader", "write the new parser", "port the callers", "update the docs", "run the suite"]
GOAL = ("TASK: migrate the config loader to the new TOML parser.\nNever edit files under tests/.\n"
        + "\n".join(f"Requirement {i}: the loader keeps behaviour {i} exactly as documented in section {i}."
                    for i in range(40)))  # > 2,000 characters: a hand-off used to keep only the first 2,000
SUMMARY_ASK = "Write your part of the hand-off now."
BUDGET = 333


def _plan(turn: int) -> WorkPlan:
    done = min(turn - 1, len(STEPS))
    return WorkPlan(tuple(PlanStep(text, "done" if i < done else "in_progress" if i == done else "pending")
                          for i, text in enumerate(STEPS)), f"turn {turn}")


def _last(body: dict[str, Any]) -> dict[str, Any]:
    return body["messages"][-1]


class Script:
    """Per turn: a plan update, two commands with large outputs, then the answer."""

    def __init__(self) -> None:
        self.turn = 0
        self.actions = 0
        self.summary_requests: list[dict[str, Any]] = []
        self.plan: WorkPlan | None = None
        self.plan_before: list[WorkPlan | None] = []  # per request: the plan the model had written
        self.user: str = ""
        self.user_before: list[str] = []  # per request: the user's latest request so far

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        last = _last(body)
        if last["role"] == "user" and SUMMARY_ASK not in str(last.get("content")):
            self.user = str(last.get("content"))
        self.plan_before.append(self.plan)
        self.user_before.append(self.user)
        if last["role"] == "user" and SUMMARY_ASK in str(last.get("content")):
            self.summary_requests.append(body)
            return {"content": f"## Current state\nTurn {self.turn} is under way.\n\n## Next step\nGo on."}
        if last["role"] == "user":
            self.turn, self.actions = self.turn + 1, 0
        self.actions += 1
        if self.actions == 1:
            self.plan = _plan(self.turn)
            return {"content": "Updating the plan.",
                    "tool_calls": [{"name": "update_plan", "args": _plan(self.turn).to_dict()}]}
        if self.actions <= 3:
            command = f"yes 'turn {self.turn} action {self.actions} output' | head -c 2800"
            return {"content": f"Running action {self.actions}.", "tool_calls": [{"name": "shell", "args": {"command": command}}]}
        return {"content": f"Turn {self.turn} done."}


def test_the_plan_and_the_latest_request_survive_three_compactions(project) -> None:
    settings = agent_settings(
        context={"token_limit": 14_000, "summary_reserved_tokens": 2_000, "autocompact_buffer_tokens": 1_000,
                 "compression_preserve_min_tokens": 1_000, "compression_preserve_max_tokens": 2_500,
                 "summary_output_tokens": BUDGET},
        tool_results={"shell_max_chars": 3_000, "preview_chars": 800},
        agent={"approval": {"shell": "allow"}},
    )
    (project / "CONTEXT.md").write_text("# House rules\nUse tabs in the parser module.\n", encoding="utf-8")
    script = Script()
    requests_of_turn: list[str] = []
    with StubOpenAI(responder=script) as stub:
        model = create_chat_model("openai:gpt-4o-mini", settings=settings, base_url=stub.base_url,
                                  environ={"OPENAI_API_KEY": "sk-test"})
        with AgentSession.create(project, model=model, settings=settings) as session:
            for turn in range(1, 11):
                request = GOAL if turn == 1 else f"Step {turn}: go on with the plan (keep the ioctl path {turn})."
                requests_of_turn.append(request)
                assert session.run_turn(request).status == "done"
            path = session.transcript_path
        bodies = list(stub.requests)

    boundaries = [r for r in read_records(path) if r["type"] == "compact_boundary"]
    assert len(boundaries) >= 3, [b["trigger"] for b in boundaries]
    assert script.summary_requests and all(f"at most {BUDGET} tokens" in str(_last(b)["content"])
                                           for b in script.summary_requests)
    checked = 0
    for boundary in boundaries:
        summary_id = f"summary-{boundary['id']}"
        # the first main request that starts from this boundary's hand-off
        index = next(i for i, b in enumerate(bodies) if SUMMARY_ASK not in str(_last(b).get("content"))
                     and f"<compact_boundary pre_tokens=\"{boundary['pre_tokens']}\"" in request_text(b))
        text = request_text(bodies[index])
        latest = script.user_before[index]
        assert latest in requests_of_turn and latest in text  # the user's latest request, verbatim
        assert GOAL in text  # the first request, whole
        rules = text.split("## Rules in force", 1)  # the rule files in force, named by the engine's ledger
        assert len(rules) == 2 and "CONTEXT.md" in rules[1].split("##", 1)[0], summary_id
        plan = script.plan_before[index]
        assert plan is not None
        for step in plan.steps:  # every step with its status, as the engine renders the plan
            assert f"{step.text} ({step.status.replace('_', ' ')})" in text, (summary_id, step)
        checked += 1
    assert checked >= 3
