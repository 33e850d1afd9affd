"""The built-in suite, the policies and the context-sensitive test model (#29)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.cli.scripted_model import is_scripted, load_scripted_model
from mtagent.config import Settings
from mtagent.errors import UsageError
from mtagent.eval.checks import run_command
from mtagent.eval.policies import BUILTIN_POLICIES, load_policies, load_policy
from mtagent.eval.suite import KINDS, SUITE_SIZE, build_task, builtin_tasks
from mtagent.agent.context_model import LOST_REPLY, UNKNOWN, ContextTestModel, decide

TASK = "TASK t1\nConstraint: COLOR = teal\n1. Read `a.py`.\n2. Write the value of LIMIT into `out.txt`.\n"


def test_the_suite_has_twenty_odd_tasks_each_with_a_check_that_tells_right_from_wrong(tmp_path: Path) -> None:
    tasks = builtin_tasks(tmp_path)
    assert len(tasks) == SUITE_SIZE >= 20 and len({t.id for t in tasks}) == len(tasks)
    assert {build_task(i).kind for i in range(SUITE_SIZE)} == set(KINDS) >= {"constant", "error", "constraint",
                                                                            "control", "log", "json", "yaml"}
    assert max(build_task(i).distance for i in range(SUITE_SIZE)) >= 40
    for index in (0, 1, 2):
        task, spec = tasks[index], build_task(index)
        folder = Path(str(task.batch.cwd))
        assert spec.value not in "".join(p.read_text() for p in folder.rglob("src/*.py"))  # fillers never hold it
        (folder / "answer.txt").write_text(spec.value + "\n")
        assert run_command(str(task.check), folder, 30).ok
        (folder / "answer.txt").write_text("unknown\n")
        assert not run_command(str(task.check), folder, 30).ok
    assert builtin_tasks(tmp_path / "again")[5].prompt == tasks[5].prompt  # no randomness, no clock


def test_builtin_policies_are_valid_settings_and_toml_overlays_are_checked(tmp_path: Path) -> None:
    for overlay in BUILTIN_POLICIES.values():
        Settings.model_validate(overlay)
    good = tmp_path / "tight.toml"
    good.write_text('[context]\ncompaction_trigger = "threshold"\n')
    assert load_policy(str(good)).overlay == {"context": {"compaction_trigger": "threshold"}}
    bad = tmp_path / "typo.toml"
    bad.write_text("[context]\ncompaction_triger = 1\n")
    with pytest.raises(UsageError, match="policy 'typo'.*bad setting"):
        load_policy(str(bad))
    broken = tmp_path / "broken.toml"
    broken.write_text("[context\n")
    with pytest.raises(UsageError, match="not valid TOML"):
        load_policy(str(broken))
    clash = tmp_path / "masking.toml"
    clash.write_text("")
    with pytest.raises(UsageError, match="name of the built-in policy"):
        load_policy(str(clash))
    assert [p.name for p in load_policies([])] == ["mtagent"]


def test_the_model_reads_a_fact_it_can_see() -> None:
    messages = [SystemMessage("s"), HumanMessage(TASK), AIMessage("", tool_calls=[
        {"name": "read_file", "args": {"file_path": "a.py"}, "id": "c1", "type": "tool_call"}]),
        ToolMessage("1\tLIMIT = 42\n2\tLIMIT_MAX = 9", tool_call_id="c1")]
    call = decide(messages, ["read_file", "write_file", "recall"]).tool_calls[0]
    assert call["name"] == "write_file" and call["args"] == {"file_path": "out.txt", "content": "42\n"}


def test_a_lost_fact_is_recalled_when_it_can_be_and_guessed_when_not() -> None:
    messages = [SystemMessage("s"), HumanMessage(TASK), AIMessage("", tool_calls=[
        {"name": "read_file", "args": {"file_path": "a.py"}, "id": "c1", "type": "tool_call"}]),
        ToolMessage("[cleared]", tool_call_id="c1"), AIMessage("", tool_calls=[
            {"name": "read_file", "args": {"file_path": "a.py"}, "id": "c2", "type": "tool_call"}]),
        ToolMessage("Error: file not found: a.py", tool_call_id="c2")]  # the look-up re-read found nothing
    call = decide(messages, ["read_file", "recall"]).tool_calls[0]
    assert (call["name"], call["args"]) == ("recall", {"query": "LIMIT"})
    assert decide(messages, ["read_file", "write_file"]).tool_calls[0]["args"]["content"] == UNKNOWN + "\n"
    recalled = [*messages, AIMessage("", tool_calls=[{"name": "recall", "args": {"query": "LIMIT"}, "id": "r1",
                                                        "type": "tool_call"}]),
                ToolMessage("[1] msg · LIMIT = 42", tool_call_id="r1")]
    assert decide(recalled, ["recall"]).tool_calls[0]["args"]["content"] == "42\n"


def test_without_a_visible_task_the_model_stops_and_after_the_last_step_it_is_done() -> None:
    assert decide([SystemMessage("s"), HumanMessage("hello")], []).content == LOST_REPLY
    done = [HumanMessage(TASK), AIMessage("", tool_calls=[
        {"name": "write_file", "args": {"file_path": "out.txt", "content": "1"}, "id": "w", "type": "tool_call"}]),
        ToolMessage("ok", tool_call_id="w")]
    assert decide(done, []).content == "DONE t1"


def test_the_test_model_is_reachable_through_the_cli_model_seam_and_reports_cache_reads() -> None:
    assert is_scripted("context-test:")
    model = load_scripted_model("context-test:")
    assert isinstance(model, ContextTestModel)
    first = model.invoke([SystemMessage("system prompt " * 50), HumanMessage(TASK)])
    second = model.invoke([SystemMessage("system prompt " * 50), HumanMessage(TASK), first,
                           ToolMessage("LIMIT = 3", tool_call_id=first.tool_calls[0]["id"])])
    assert first.usage_metadata["input_token_details"]["cache_read"] == 0
    assert second.usage_metadata["input_token_details"]["cache_read"] > 50


def test_command_line_settings_are_parsed_as_toml_and_validated() -> None:
    from mtagent.eval.policies import parse_settings

    assert parse_settings(["context.token_limit=2048", 'agent.approval={shell = "deny"}', "agent.tool_schemas=auto"]) \
        == {"context": {"token_limit": 2048}, "agent": {"approval": {"shell": "deny"}, "tool_schemas": "auto"}}
    with pytest.raises(UsageError, match="must look like section.key=value"):
        parse_settings(["token_limit=5"])
    with pytest.raises(UsageError, match="bad setting"):
        parse_settings(["context.token_limit=-3"])


def test_mtagent_run_drives_the_test_model_through_the_cli_model_seam(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from mtagent.cli.app import app

    (tmp_path / "a.py").write_text("LIMIT = 77\n")
    task = "TASK t1\n1. Read `a.py`.\n2. Write the value of LIMIT into `out.txt`.\n"
    result = CliRunner().invoke(app, ["run", "--json", "--model", "context-test:", "--cwd", str(tmp_path),
                                      "--approval", "auto", task])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[0])["answer"] == "DONE t1"
    assert (tmp_path / "out.txt").read_text() == "77\n"


def test_policies_are_interleaved_and_their_order_rotates_from_task_to_task(tmp_path: Path) -> None:
    from mtagent.eval.runner import plan_units

    tasks = builtin_tasks(tmp_path, count=3)
    units, skipped = plan_units(tasks, load_policies(["mtagent", "threshold"]), tmp_path / "s",
                                done={(tasks[2].id, "threshold", 1)})
    assert [(u.key, u.policy.name, u.slot) for u in units] == [
        (tasks[0].id, "mtagent", "p0"), (tasks[0].id, "threshold", "p1"), (tasks[1].id, "threshold", "p1"),
        (tasks[1].id, "mtagent", "p0"), (tasks[2].id, "mtagent", "p0")]
    assert skipped == 1


def test_every_task_of_both_suites_has_a_check_that_tells_right_from_wrong(tmp_path: Path) -> None:
    from mtagent.agent.context_model import parse_task
    from mtagent.eval.suite import suite_task

    suites = (("builtin", builtin_tasks(tmp_path / "b")), ("extra", builtin_tasks(tmp_path / "x", name="extra")))
    for name, tasks in suites:
        assert len({t.id for t in tasks}) == len(tasks) >= 20
        for index, task in enumerate(tasks):
            spec = suite_task(name, index)
            parsed = parse_task(task.prompt)
            assert parsed is not None and parsed[2][-1].kind in ("write", "plan-write"), task.id  # every step read
            if parsed[2][-1].kind == "write":
                assert len(parsed[2][-1].facts) == len(spec.value.splitlines()), task.id
            folder = Path(str(task.batch.cwd))
            (folder / "answer.txt").write_text(spec.value + "\n")
            assert run_command(str(task.check), folder, 30).ok, task.id
            (folder / "answer.txt").write_text("unknown\n" * len(spec.value.splitlines()))
            assert not run_command(str(task.check), folder, 30).ok, task.id


def test_the_later_shapes_put_the_fact_where_they_say() -> None:
    from mtagent.eval.shapes import LOG_LINES
    from mtagent.eval.suite import FIRST_SIZE, LATER_SHAPES, suite_task

    made = {}
    for i, shape in enumerate(LATER_SHAPES):
        made.setdefault(shape, build_task(FIRST_SIZE + i))
    first = made["first-of-many"]
    holders = [p for p, text in first.files.items() if f"SHARD_COUNT = {first.value}" in text]
    assert holders == ["data/table_00.py"] and all(60 <= t.count("\n") <= 115 for t in first.files.values())
    log = made["log"].files["tools/build.py"]
    at = next(i for i, line in enumerate(log.split("\\n")) if "BUILD_ID=" in line)
    assert log.count("\\n") > LOG_LINES and 300 < at < LOG_LINES - 300  # neither the preview's head nor its tail
    long = made["long-prompt"]
    assert long.prompt.index(long.value) > 2_000 and long.value not in "".join(long.files.values())
    changed = made["changed"]
    assert f"QUEUE_DEPTH = {changed.value}" not in changed.files["config/queue.py"]  # the migration makes it so
    assert f'"API_VERSION": "{made["json"].value}"' in made["json"].files["config/service.json"]
    assert f"REGION_CODE: {made['yaml'].value}" in made["yaml"].files["deploy/values.yaml"]
    assert len(made["two"].value.splitlines()) == 2 and LATER_SHAPES.count("control") >= 4
    huge = suite_task("extra", 0)
    from mtagent.context.tokens import count_text_tokens

    assert huge.kind == "huge-file" and 9_500 < count_text_tokens(huge.files["data/catalog.py"], "o200k_base") < 12_000
