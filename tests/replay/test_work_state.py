"""Work-state probes: the ledger of the recording before each compaction, checked against the next view;
``mtagent replay`` reports it per result (``--json``, the table), with the session's cost floors and
summary calls priced at ``--summary-price``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent.replay.formats import load_trajectory
from mtagent.replay.report import overall_rows, replay_session, rows
from mtagent.replay.simulate import simulate
from mtagent.replay.work_state import WorkStateCount, WorkStateProbe, lost_kinds

runner = CliRunner()
TASK = "Fix the tokenizer so that `parse_header()` accepts tabs.\nNever edit setup.py.\nThe fix goes in src/tok.py."
# A small window and tight reserves, so a few dozen calls compact several times.
TIGHT_ENV = {"MTAGENT_CONTEXT__SUMMARY_RESERVED_TOKENS": "500", "MTAGENT_CONTEXT__AUTOCOMPACT_BUFFER_TOKENS": "500",
             "MTAGENT_CONTEXT__COMPRESSION_PRESERVE_MIN_TOKENS": "500",
             "MTAGENT_CONTEXT__COMPRESSION_PRESERVE_MAX_TOKENS": "1500"}


def _todos(*steps: tuple[str, str]) -> str:
    return json.dumps({"todos": [{"content": text, "status": status, "activeForm": text} for text, status in steps]})


def write_session(path: Path, *, calls: int = 40, bad_plans: bool = False) -> Path:
    """A mini-swe-agent v2 recording: a task with a rule, a TodoWrite plan that advances, many large
    shell outputs (so a small window compacts), a pytest run and a later user request."""
    messages: list[dict] = [{"role": "system", "content": "You are a careful engineer."},
                            {"role": "user", "content": TASK}]

    def assistant(i: int, name: str, arguments: str) -> None:
        messages.append({"role": "assistant", "content": f"step {i}",
                         "tool_calls": [{"id": f"c{i}", "type": "function",
                                         "function": {"name": name, "arguments": arguments}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"output {i}\n" + f"line {i} " * 120})

    assistant(0, "TodoWrite", _todos(("Read src/tok.py", "in_progress"), ("Patch parse_header", "pending")))
    for i in range(1, calls):
        if i == calls // 2:
            assistant(i, "TodoWrite", _todos(("Read src/tok.py", "completed"), ("Patch parse_header", "in_progress")))
        elif bad_plans and i % 5 == 0:
            for j, args in enumerate(('{"todos": "nope"}', "{broken json", '{"todos": [1, null, {"status": 5}]}',
                                      '{"plan": [{"step": {"deep": 1}}]}')):
                assistant(1000 * i + j, ("TodoWrite", "update_plan", "write_todos", "task_tracker")[j], args)
        else:
            assistant(i, "bash", json.dumps({"command": f"grep -n tab src/tok.py # {i}"}))
    assistant(calls, "bash", json.dumps({"command": "python -m pytest tests/test_tok.py -q"}))
    messages[-1]["content"] = "....F\nFAILED tests/test_tok.py::test_tabs - AssertionError: tab\n1 failed, 4 passed"
    messages.append({"role": "user", "content": "Also keep the old behaviour for spaces."})
    messages.append({"role": "assistant", "content": "ok"})
    path.write_text(json.dumps({"trajectory_format": "mini-swe-agent-1.1", "messages": messages}), encoding="utf-8")
    return path


def test_the_probe_checks_the_recordings_ledger_before_the_call_against_the_view() -> None:
    messages = [
        HumanMessage(TASK),
        AIMessage("", tool_calls=[{"id": "1", "name": "TodoWrite", "type": "tool_call", "args": {"todos": [
            {"content": "Read src/tok.py", "status": "completed"}, {"content": "Patch", "status": "in_progress"}]}}]),
        ToolMessage("ok", tool_call_id="1"),
        HumanMessage("Now also handle CRLF."),
        AIMessage("working on it"),
    ]
    probe = WorkStateProbe(messages)
    checked, lost = probe.check(4, messages[:4])  # the whole transcript before the call: nothing lost
    assert checked >= 5 and lost == {}
    # a view that kept only the first message lost the request and both plan steps, counted by kind
    checked_again, lost = probe.check(4, [SystemMessage("sys"), messages[0]])
    assert checked_again == checked
    assert lost == {"last request": 1, "plan step": 2}
    # the ledger is the one *before* the call: the request at index 3 is not in the ledger at 3
    assert probe.check(3, [messages[0]])[1] == {"plan step": 2}


def test_lost_kinds_counts_missing_lines_by_kind() -> None:
    assert lost_kinds(["plan step: a (done)", "plan step: b: c (pending)", "goal: x"]) == {"plan step": 2, "goal": 1}
    assert WorkStateCount.from_dict("junk").as_dict() == {"checked": 0, "lost": 0, "lost_by_kind": {}}
    count = WorkStateCount.from_dict({"checked": 3, "lost": 1, "lost_by_kind": {"goal": 1}})
    count.merge(WorkStateCount(2, 2, {"goal": 1, "constraint": 1}))
    assert count.as_dict() == {"checked": 5, "lost": 3, "lost_by_kind": {"constraint": 1, "goal": 2}}


def test_probes_run_at_compactions_only_and_count_lost_plan_steps(tmp_path: Path) -> None:
    traj = load_trajectory(write_session(tmp_path / "s.traj.json"))
    raw = simulate(traj, "raw", window=8192)
    assert raw.work_state.checked == 0  # never compacts: nothing to check
    cli = simulate(traj, "threshold-compact", window=8192)
    assert cli.compactions >= 2
    state = cli.work_state
    assert state.checked >= cli.compactions * 4  # goal, rule, two plan steps at least
    # the extractive summary renders no plan: a step whose latest call was summarized away is lost
    assert state.lost_by_kind.get("plan step", 0) >= 1
    assert state.lost == sum(state.lost_by_kind.values())
    lost_turns = [t for t in cli.turns if t.work_lost]
    assert lost_turns and all(t.compacted for t in lost_turns)


def test_malformed_plan_calls_in_a_recording_do_not_crash_replay(tmp_path: Path) -> None:
    path = write_session(tmp_path / "bad.traj.json", calls=30, bad_plans=True)
    result = runner.invoke(app, ["replay", str(path), "-w", "8192", "-s", "threshold-compact", "-s", "masking",
                                 "--json"], env=TIGHT_ENV)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert not data["failures"]
    cli = next(r for r in data["results"] if r["strategy"] == "threshold-compact")
    assert cli["work_state"]["checked"] > 0


def test_json_reports_work_state_bounds_and_summary_output_per_result(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.traj.json")
    result = runner.invoke(app, ["replay", str(path), "-w", "8192", "-s", "raw", "-s", "mtagent",
                                 "-s", "threshold-compact", "--json"], env=TIGHT_ENV)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    by_name = {r["strategy"]: r for r in data["results"]}
    for r in data["results"]:
        assert set(r["work_state"]) == {"checked", "lost", "lost_by_kind"}
        assert set(r["bounds"]) == {"anthropic", "openai"}
        b1, b2 = r["bounds"]["anthropic"]
        assert 0 < b1 < b2 <= r["cached_cost"]["anthropic"] + 1e-6 or r["strategy"] != "raw"
        assert r["bounds"] == by_name["raw"]["bounds"]  # the session's floors, whatever the strategy
    assert by_name["threshold-compact"]["work_state"]["checked"] > 0
    assert by_name["threshold-compact"]["summary_output_tokens"] > 0 and by_name["raw"]["summary_output_tokens"] == 0
    overall = {r["strategy"]: r for r in data["overall"]}
    assert overall["threshold-compact"]["work_state"]["checked"] == by_name["threshold-compact"]["work_state"]["checked"]
    assert overall["raw"]["bounds"] == by_name["raw"]["bounds"]


def test_summary_price_scales_only_the_summary_calls(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.traj.json")
    traj = load_trajectory(path)
    full = replay_session(traj, "s", ["threshold-compact"], window=8192)
    cheap = replay_session(traj, "s", ["threshold-compact"], window=8192, summary_price=0.25)
    a, b = full.results["threshold-compact"], cheap.results["threshold-compact"]
    assert a.summary_calls > 0
    for model in ("anthropic", "openai"):
        assert b.summary_cost[model] == pytest.approx(0.25 * a.summary_cost[model])
        assert b.cached_cost[model] == pytest.approx(a.cached_cost[model] - 0.75 * a.summary_cost[model])
    assert cheap.raw.cached_cost == full.raw.cached_cost
    rows_ = rows([cheap], ["raw", "threshold-compact"])
    assert overall_rows(rows_, ["raw", "threshold-compact"])[1]["cached_cost"] == rows_[1]["cached_cost"]


def test_cli_summary_price_flag_and_its_bounds(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.traj.json")
    costs = {}
    for price in ("1", "0.25"):
        result = runner.invoke(app, ["replay", str(path), "-w", "8192", "-s", "threshold-compact", "--json",
                                     "--summary-price", price], env=TIGHT_ENV)
        assert result.exit_code == 0, result.output
        costs[price] = json.loads(result.output)["results"][0]["cached_cost"]["anthropic"]
    assert costs["0.25"] < costs["1"]
    bad = runner.invoke(app, ["replay", str(path), "--summary-price", "-1"])
    assert bad.exit_code == 2 and "summary-price" in bad.output


def test_table_shows_lost_over_checked(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.traj.json")
    result = runner.invoke(app, ["replay", str(path), "-w", "8192", "-s", "threshold-compact"],
                           env={**TIGHT_ENV, "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "strategy" in line)
    assert header.rstrip().endswith("work")
    row = next(line for line in result.output.splitlines() if line.strip().startswith("threshold-compact"))
    lost, checked = row.split()[-1].split("/")
    assert int(checked) > 0 and 0 <= int(lost) <= int(checked)
    assert "work-state items lost / checked" in result.output


def test_html_report_shows_work_state_per_strategy(tmp_path: Path) -> None:
    from mtagent.replay.report_html import render_report

    traj = load_trajectory(write_session(tmp_path / "s.traj.json"))
    session = replay_session(traj, "s", ["raw", "threshold-compact"], window=8192)
    html = render_report([session], ["raw", "threshold-compact"])
    state = session.results["threshold-compact"].work_state
    assert "work state lost / checked" in html
    assert f"{state.lost} / {state.checked}" in html
    assert 'title="lost: ' in html and "plan step" in html


def test_a_multi_line_command_kept_in_the_view_is_not_lost() -> None:
    command = "cat > check.py << 'EOF'\nimport sys\nprint(sys.argv)\nEOF\npython -m pytest -q check.py"
    messages = [
        HumanMessage("Write a check script and run the tests."),
        AIMessage("", tool_calls=[{"id": "1", "name": "bash", "type": "tool_call", "args": {"command": command}}]),
        ToolMessage("1 passed", tool_call_id="1"),
        AIMessage("done"),
    ]
    # the view is the transcript itself: the call's arguments hold the command with its line breaks
    assert WorkStateProbe(messages).check(3, messages[:3])[1] == {}
