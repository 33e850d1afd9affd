"""The context-test model behaves like a capable model, kind to no policy (#38).

It re-reads a file still on disk, greps, pages a saved output with read_tool_result, reads facts
written as ``NAME = v``, ``NAME: v``, ``NAME=v`` and ``"NAME": "v"``, never loops on a path the task
reads twice, keeps its place and its look-ups across a hand-off, and — asked for a hand-off or
session notes — writes them itself, keeping the facts the task names (a summarizer told the task).
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.agent.context_model import UNKNOWN, ContextTestModel, decide, fact_value
from mtagent.agent.context_sheets import summary_reply
from mtagent.agent.summary_model import is_scripted, summary_model
from mtagent.context.compaction.cache_align import aligned_request
from mtagent.context.compaction.summarize import LLMSummarizer
from mtagent.context.session_memory.notes import Notes, build_update_request
from mtagent.context.session_memory.updater import aligned_update_request

TOOLS = ["read_file", "write_file", "grep", "shell", "read_tool_result", "recall"]
TASK = ("TASK t1\n1. Read `config/a.py`.\n2. Read the files `src/mod_{00..02}.py`, one by one.\n"
        "3. Write the value of LIMIT into `out.txt`.\n")


def _call(name: str, args: dict, cid: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": cid, "type": "tool_call"}])


def _done_reads(first_result: str = "[cleared]") -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("s"), HumanMessage(TASK),
                              _call("read_file", {"file_path": "config/a.py"}, "c0"),
                              ToolMessage(first_result, tool_call_id="c0")]
    for k in range(3):
        out += [_call("read_file", {"file_path": f"src/mod_{k:02d}.py"}, f"m{k}"),
                ToolMessage("x = 1\n" * 80, tool_call_id=f"m{k}")]
    return out


def _next(messages: list[BaseMessage], tools: list[str] = TOOLS) -> tuple[str, dict]:
    call = decide(messages, tools).tool_calls[0]
    return call["name"], call["args"]


@pytest.mark.parametrize("text", ['LIMIT = 42', "LIMIT: 42", "LIMIT=42", '"LIMIT": "42"', "  \"LIMIT\": 42,",
                                  "LIMIT = '42'", "(by the way: LIMIT = 42.)"])
def test_facts_are_read_in_every_usual_notation(text: str) -> None:
    assert fact_value("LIMIT", [HumanMessage(f"{{\n{text}\n}}")]) == "42"
    assert fact_value("LIMIT", [HumanMessage("LIMIT_MAX = 9\nMY_LIMIT = 8")]) is None


def test_a_lost_fact_in_a_file_still_on_disk_is_read_again_then_grepped_then_recalled() -> None:
    messages = _done_reads()
    assert _next(messages) == ("read_file", {"file_path": "config/a.py"})  # re-read the file the task named
    messages += [_call("read_file", {"file_path": "config/a.py"}, "r1"),
                 ToolMessage("Error: file not found: config/a.py", tool_call_id="r1")]
    assert _next(messages) == ("grep", {"pattern": "LIMIT", "path": "."})
    messages += [_call("grep", {"pattern": "LIMIT", "path": "."}, "g1"), ToolMessage("No matches", tool_call_id="g1")]
    assert _next(messages) == ("recall", {"query": "LIMIT"})
    messages += [_call("recall", {"query": "LIMIT"}, "q1"), ToolMessage("no results", tool_call_id="q1")]
    assert _next(messages)[1]["content"] == UNKNOWN + "\n"  # every way tried once: no loop
    assert _next(messages, ["read_file", "write_file"])[0] == "write_file"  # re-read tried; nothing else offered
    found = _done_reads() + [_call("read_file", {"file_path": "config/a.py"}, "r1"),
                             ToolMessage("1\tLIMIT = 77\n", tool_call_id="r1")]
    assert _next(found) == ("write_file", {"file_path": "out.txt", "content": "77\n"})


def test_a_file_whose_content_is_in_view_is_not_read_again() -> None:
    messages = _done_reads(first_result="1\tOTHER = 1\n" + "2\tpass\n" * 60)  # shown, and LIMIT is not in it
    assert _next(messages)[0] == "grep"


def test_a_saved_output_is_paged_until_the_fact_shows() -> None:
    task = "TASK t2\n1. Run `python3 build.py`.\n2. Write the value of BUILD_ID into `out.txt`.\n"
    preview = ('<persisted-output tool="shell" path="tool-results/call_1.txt" original_chars="60000">\n[0000] step\n'
               '[Full output saved to tool-results/call_1.txt. Page through it with '
               'read_tool_result(path="tool-results/call_1.txt", offset=<line>, limit=<lines>)]\n</persisted-output>')
    messages: list[BaseMessage] = [HumanMessage(task), _call("shell", {"command": "python3 build.py"}, "s1"),
                                   ToolMessage(preview, tool_call_id="s1"),
                                   _call("grep", {"pattern": "BUILD_ID", "path": "."}, "g1"),
                                   ToolMessage("No matches", tool_call_id="g1")]
    name, args = _next(messages)
    assert name == "read_tool_result" and args["path"] == "tool-results/call_1.txt" and args["offset"] == 1
    messages += [_call(name, args, "p1"),
                 ToolMessage("Error: that page is 29,272 tokens; use limit=90", tool_call_id="p1")]
    assert _next(messages)[1] == {"path": "tool-results/call_1.txt", "offset": 1, "limit": 90}  # follows the advice
    messages += [_call(name, {**args, "limit": 90}, "p2"),
                 ToolMessage("1\t[0000] step\n[Showing lines 1-90 of 900. Continue with offset=91.]",
                             tool_call_id="p2")]
    assert _next(messages)[1]["offset"] == 91
    messages += [_call(name, {**args, "offset": 91}, "p3"),
                 ToolMessage("431\t[0430] build: resolved BUILD_ID=b77x1 for the release\n"
                             "[Showing lines 91-180 of 900. Continue with offset=181.]", tool_call_id="p3")]
    assert _next(messages) == ("write_file", {"file_path": "out.txt", "content": "b77x1\n"})
    ended = messages[:-2] + [_call(name, {**args, "offset": 91}, "p3"),
                             ToolMessage("9\tx\n[Lines 91-900 of 900 (end).]", tool_call_id="p3")]
    assert _next(ended) == ("recall", {"query": "BUILD_ID"})  # read to the end: on to the next way


def test_a_path_the_task_reads_twice_is_two_steps_not_a_loop() -> None:
    task = "TASK t3\n1. Read `a.py`.\n2. Read `b.py`.\n3. Read `a.py`.\n4. Write the value of X into `o.txt`.\n"
    messages: list[BaseMessage] = [HumanMessage(task)]
    for i, path in enumerate(("a.py", "b.py", "a.py")):
        messages += [_call("read_file", {"file_path": path}, f"c{i}"),
                     ToolMessage("X = 5" if i else "y", tool_call_id=f"c{i}")]
    assert _next(messages) == ("write_file", {"file_path": "o.txt", "content": "5\n"})
    assert _next(messages[:5])[1] == {"file_path": "a.py"}  # after a, b: the second read of a


def test_two_facts_are_written_one_a_line_and_a_missing_one_is_looked_up() -> None:
    task = "TASK t4\n1. Read `a.py`.\n2. Write the values of A and B into `o.txt`.\n"
    messages: list[BaseMessage] = [HumanMessage(task), _call("read_file", {"file_path": "a.py"}, "c"),
                                   ToolMessage("A = 1\nB: two", tool_call_id="c")]
    assert _next(messages) == ("write_file", {"file_path": "o.txt", "content": "1\ntwo\n"})
    messages[-1] = ToolMessage("A = 1\n" + "pass\n" * 80, tool_call_id="c")  # the file is in view: no re-read
    assert _next(messages) == ("grep", {"pattern": "B", "path": "."})


def _conversation() -> list[BaseMessage]:
    return _done_reads(first_result="1\tLIMIT = 42\n")[1:]


def test_a_hand_off_keeps_the_task_its_place_and_the_facts_it_names() -> None:
    summarizer = LLMSummarizer(ContextTestModel())
    sheet = summarizer.summarize(_conversation())
    assert "LIMIT = 42" in sheet and "Progress: 4 of 5 steps done (TASK t1)." in sheet
    aligned = summary_reply(aligned_request([SystemMessage("system"), *_conversation()], delta=False))
    assert aligned is not None and "LIMIT = 42" in aligned and "Progress: 4 of 5" in aligned
    after = [SystemMessage("s"), HumanMessage(f"<summary>\n## User goal\n{TASK}\n{sheet}</summary>")]
    assert _next(after) == ("write_file", {"file_path": "out.txt", "content": "42\n"})  # place and fact kept


def test_the_model_resumes_at_the_hand_off_s_place_and_does_not_repeat_its_look_ups() -> None:
    held = HumanMessage(f"{TASK}\nProgress: 4 of 5 steps done (TASK t1).\n"
                        f'Looked up at step 4 (TASK t1): [{json.dumps(["grep", {"path": ".", "pattern": "LIMIT"}])}, '
                        f'{json.dumps(["read_file", {"file_path": "config/a.py"}])}]')
    assert _next([SystemMessage("s"), held]) == ("recall", {"query": "LIMIT"})
    assert _next([SystemMessage("s"), HumanMessage(f"{TASK}\nProgress: 2 of 5 steps done (TASK t1).")]) == \
        ("read_file", {"file_path": "src/mod_01.py"})
    other = HumanMessage(f"{TASK}\nProgress: 4 of 5 steps done (TASK t9).")  # another task's progress: not ours
    assert _next([SystemMessage("s"), other]) == ("read_file", {"file_path": "config/a.py"})


def test_session_notes_keep_the_task_and_the_newest_value_in_both_request_forms() -> None:
    changed = [*_conversation(), _call("shell", {"command": "python3 migrate.py"}, "mg"),
               ToolMessage("migrated: LIMIT = 50 (it was 42)", tool_call_id="mg")]
    old = Notes.empty()
    old.bodies["Key results"] = "- LIMIT = 42"
    plain = summary_reply(build_update_request(old, changed, section_max_tokens=500, tool_result_chars=4000))
    aligned = summary_reply(aligned_update_request([SystemMessage("s"), *changed], old, 4, section_max_tokens=500))
    for notes in (plain, aligned):
        assert notes is not None and "# Task specification" in notes and "TASK t1" in notes
        assert "LIMIT = 50" in notes and "LIMIT = 42" not in notes  # the notes were older than the conversation
        assert "# Worklog" in notes and "_Step by step" in notes  # headings and italic lines kept


def test_the_test_model_writes_its_own_hand_offs_so_they_are_priced() -> None:
    model = ContextTestModel()
    assert not is_scripted(model) and summary_model(model, None, None) is model
    from mtagent.agent.scripted import ScriptedChatModel

    assert summary_model(ScriptedChatModel(["x"]), None, None) is None  # a replaying fake still cannot summarize


PLAN_TASK = ("TASK t5\n1. Plan the stages `audit a`, `check b` and `sign c`.\n2. Read `x.py`.\n"
             "3. Mark the stage `audit a` done.\n4. Read `y.py`.\n5. Mark the stage `sign c` done.\n"
             "6. Write the stages' statuses into `o.txt`.\n")


def _planned(*statuses: str) -> dict:
    return {"steps": [{"step": s, "status": st} for s, st in zip(("audit a", "check b", "sign c"), statuses)]}


def test_a_plan_is_written_marked_and_reported_from_what_the_view_shows() -> None:
    messages: list[BaseMessage] = [HumanMessage(PLAN_TASK)]
    assert _next(messages) == ("update_plan", _planned("pending", "pending", "pending"))
    messages += [_call("update_plan", _planned("pending", "pending", "pending"), "p1"),
                 ToolMessage("ok", tool_call_id="p1"),
                 _call("read_file", {"file_path": "x.py"}, "r1"), ToolMessage("x", tool_call_id="r1")]
    assert _next(messages) == ("update_plan", _planned("done", "pending", "pending"))
    messages += [_call("update_plan", _planned("done", "pending", "pending"), "p2"),
                 ToolMessage("ok", tool_call_id="p2"),
                 _call("read_file", {"file_path": "y.py"}, "r2"), ToolMessage("y", tool_call_id="r2")]
    assert _next(messages) == ("update_plan", _planned("done", "pending", "done"))
    messages += [_call("update_plan", _planned("done", "pending", "done"), "p3"), ToolMessage("ok", tool_call_id="p3")]
    content = "audit a: done\ncheck b: pending\nsign c: done\n"
    assert _next(messages) == ("write_file", {"file_path": "o.txt", "content": content})


def test_a_plan_carried_by_a_hand_off_is_kept_and_a_lost_one_is_planned_again() -> None:
    carried = HumanMessage(f"{PLAN_TASK}\nProgress: 4 of 6 steps done (TASK t5).\n## Plan\n- [x] audit a (done)\n"
                           "- [ ] check b (pending)\n- [ ] sign c (pending)\n")
    assert _next([carried]) == ("update_plan", _planned("done", "pending", "done"))
    lost = HumanMessage(f"{PLAN_TASK}\nProgress: 4 of 6 steps done (TASK t5).")
    assert _next([lost]) == ("update_plan", _planned("pending", "pending", "done"))  # "audit a" forgotten
