"""Depth and parallelism are bounded by the subagents settings; siblings run side by side."""

from __future__ import annotations

import json
import threading
import time

import pytest
from langchain_core.tools import ToolException
from interrupts import wait_for
from subagent_helpers import open_session, report_json, settings, task

from mtagent.agent.scripted import ScriptedChatModel, tool_calls
from mtagent.agent.session import AgentSession
from mtagent.tools.task import TaskRequest


def _many(n: int):
    return tool_calls(*[("task", {"description": f"part {i}", "prompt": f"look at part {i}"}) for i in range(n)])


class Gauge:
    """Counts children inside a model call at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def step(self, messages):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        wait_for(lambda: self.peak >= 2, "two children in a model call at once")  # not a fixed sleep
        time.sleep(0.05)  # stay inside a moment: a third child let in beside the two would raise the peak
        with self.lock:
            self.now -= 1
        return report_json("part done")


def test_children_of_one_message_run_concurrently_up_to_max_parallel(code):
    gauge = Gauge()
    session, made = open_session(code, [_many(5), "done"], lambda p, r: [gauge.step],
                                 cfg=settings(max_parallel=2))
    with session:
        result = session.run_turn("split the work")
    assert len(made) == 5 and gauge.peak == 2
    reports = [json.loads(m.content) for m in result.messages if getattr(m, "name", None) == "task"]
    assert [r["summary"] for r in reports] == ["part done"] * 5


def test_one_message_may_start_at_most_max_per_turn_children(code):
    session, made = open_session(code, [_many(3), "done"], lambda p, r: [report_json()],
                                 cfg=settings(max_per_turn=2))
    with session:
        result = session.run_turn("go")
    results = [m for m in result.messages if getattr(m, "name", None) == "task"]
    assert [m.status for m in results] == ["success", "success", "error"]
    assert "at most 2 subagents" in results[2].content and len(made) == 2


def test_depth_two_lets_a_general_child_start_one_more_level_and_no_further(code):
    grandchild_steps = [report_json("deepest")]
    child_steps = [task("go deeper", agent="general", id="deeper"), report_json("middle")]
    cfg = settings(max_depth=2)
    parent = ScriptedChatModel([task(agent="general"), "done"])
    made: list[ScriptedChatModel] = []

    def factory(profile, request):
        made.append(ScriptedChatModel(child_steps if not made else grandchild_steps))
        return made[-1], "scripted:child"

    with AgentSession.create(code, model=parent, settings=cfg, approval="auto") as session:
        session.subagents.model_factory = factory  # children pass it on to their own children
        session.run_turn("go")
    assert "task" in made[0].bound_tool_names      # depth 1 < max_depth 2
    assert "task" not in made[1].bound_tool_names  # depth 2 == max_depth
    nested = [m for m in made[0].calls[-1] if getattr(m, "tool_call_id", None) == "deeper"][0]
    assert json.loads(nested.content)["summary"] == "deepest"


def test_a_runner_at_max_depth_refuses_even_a_forged_call(code):
    session, _ = open_session(code, [task(), "done"], [], cfg=settings(max_depth=0))
    with session:
        assert "task" not in session.tools
        with pytest.raises(ToolException, match="max_depth"):
            session.subagents.launch(TaskRequest("call_x", "d", "p"))


def test_max_parallel_bounds_the_whole_tree_at_depth_two(code):
    gauge = Gauge()

    def children(profile, request):
        if request.prompt.startswith("top"):  # a general child that splits its part in two
            return [tool_calls(*[("task", {"description": f"leaf {i}", "prompt": f"leaf {request.prompt} {i}"})
                                 for i in range(2)]), report_json("middle done")]
        return [gauge.step]

    top = tool_calls(*[("task", {"description": f"top {i}", "prompt": f"top {i}", "agent": "general"})
                       for i in range(2)])
    session, made = open_session(code, [top, "done"], children, cfg=settings(max_parallel=2, max_depth=2))
    with session:
        result = session.run_turn("split the work twice")
    assert len(made) == 6 and 1 <= gauge.peak <= 2  # four leaves, never more than two at work at once
    reports = [json.loads(m.content) for m in result.messages if getattr(m, "name", None) == "task"]
    assert [r["summary"] for r in reports] == ["middle done"] * 2
    leaves = [m for model in made[:2] for m in model.calls[-1] if getattr(m, "name", None) == "task"]
    assert [json.loads(m.content)["summary"] for m in leaves] == ["part done"] * 4
