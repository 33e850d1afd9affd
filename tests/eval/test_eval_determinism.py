"""Evaluation is reproducible: nothing random or timed reaches a request (#29).

A recall result names the session and messages by id, and a large result's preview names the file
it was saved in (a tool-call id): random ids there made the same unit send a few tokens more or
less from run to run — enough to move a compaction by one call, and with it what the model could
still see (the process pool and Ray once disagreed on whether b02-error was solved).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from mtagent import paths
from mtagent.context.tokens import message_text
from mtagent.eval.policies import Policy, load_policies, load_policy, merge_sections
from mtagent.eval.runner import plan_units
from mtagent.eval.suite import builtin_tasks
from mtagent.eval.worker import EvalUnit, run_unit, session_id_for
from mtagent.session import schema
from mtagent.session.ids import new_boundary_id, new_message_id, sequential_ids
from mtagent.agent.context_model import ContextTestModel


def test_ids_are_counted_inside_the_block_and_random_outside() -> None:
    assert new_message_id() != new_message_id()
    with sequential_ids("eval-p0-t1"):
        assert [new_message_id(), schema.new_message_id(), new_boundary_id()] == \
            ["msg-eval-p0-t1-000001", "msg-eval-p0-t1-000002", "cb-eval-p0-t1-000003"]
        assert schema.boundary_record(summary="s", first_kept_id=None)["id"] == "cb-eval-p0-t1-000004"
        with sequential_ids("inner"):
            assert new_message_id() == "msg-inner-000001"
        assert new_message_id() == "msg-eval-p0-t1-000005"
    assert new_message_id().startswith("msg-") and len(new_message_id()) == 36  # random again


def test_an_exception_ends_the_counting_and_threads_never_share_an_id() -> None:
    with pytest.raises(RuntimeError), sequential_ids("x"):
        raise RuntimeError("boom")
    assert not new_message_id().startswith("msg-x-")
    got: list[str] = []
    with sequential_ids("t"):
        workers = [threading.Thread(target=lambda: got.extend(new_message_id() for _ in range(200))) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    assert len(set(got)) == 800


@pytest.mark.parametrize("key", ["b02-error", "../../etc/passwd", "x y\u00e9\n;rm -rf /", "-" * 300, "\u00e9\u00e9"])
def test_the_session_id_is_a_valid_fixed_name_whatever_the_task_id(key: str) -> None:
    unit = EvalUnit(load_policy("mtagent"), (), "s", slot="p0")
    sid = session_id_for(_with_key(unit, key))
    assert paths.validate_session_id(sid) == sid and "/" not in sid and sid.startswith("eval-p0-")
    assert sid == session_id_for(_with_key(unit, key))
    other = EvalUnit(load_policy("threshold"), (), "s", slot="p1")
    assert len(session_id_for(_with_key(other, key))) == len(sid)  # policies see ids of equal length


def _with_key(unit: EvalUnit, key: str) -> EvalUnit:
    class Keyed(EvalUnit):
        @property
        def key(self) -> str:
            return key
    return Keyed(unit.policy, unit.tasks, unit.scratch, slot=unit.slot)


def test_the_context_model_counts_its_tool_call_ids() -> None:
    model = ContextTestModel()
    task = "TASK t1\n1. Read `a.py`.\n2. Read `b.py`."
    first = model.invoke([HumanMessage(content=task, id="h1")])
    again = ContextTestModel().invoke([HumanMessage(content=task, id="h1")])
    assert first.tool_calls[0]["id"] == again.tool_calls[0]["id"] == "call_000001"
    assert model.invoke([HumanMessage(content=task, id="h1"), first]).tool_calls[0]["id"] == "call_000002"


def test_the_same_unit_sends_byte_identical_requests_on_every_run(tmp_path: Path) -> None:
    """b01-constant recalls a fact: its recall result lists message and session ids. (With extractive
    hand-offs: the test model's own keep the fact, and it never needs to recall.)"""
    task = builtin_tasks(tmp_path / "suite")[0]
    extractive = [Policy(p.name, merge_sections(p.overlay, {"agent": {"compact_model": "extractive"}}))
                  for p in load_policies(["mtagent"])]
    units, _ = plan_units([task], extractive, tmp_path / "scratch", model="context-test:", chain=1, done=set())
    runs = []
    for _ in range(2):
        models: list[ContextTestModel] = []
        record = run_unit(units[0], lambda _spec: models.append(ContextTestModel()) or models[-1])[0]
        assert record["recalls"] == 1 and record["solved"] and record["session_id"] == "eval-p0-b01-constant"
        runs.append([[(m.type, message_text(m)) for m in call] for call in models[0].calls])
    assert runs[0] == runs[1]
    assert any("msg-eval-p0-b01-constant-" in text for call in runs[0] for _, text in call)
