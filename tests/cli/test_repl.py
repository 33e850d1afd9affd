"""The REPL in-process: prompt-toolkit fed from a pipe, a scripted model, a recording console."""

from __future__ import annotations

import re

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from model_script import script, scripted_repl
from prompt_toolkit.input import create_pipe_input
from rich.console import Console

from mtagent.cli.repl import continue_line, message_text
from mtagent.cli.run_cmd import SessionOptions
from mtagent.cli.turn_display import TurnDisplay, describe_call, make_approver, parse_approval_answer
from mtagent.events import EventBus, EventType
from mtagent import paths
from mtagent.session.files_store import FilesStore
from mtagent.session.reader import read_records


def test_continue_line_turns_a_trailing_backslash_into_a_newline():
    assert continue_line("first \\") == "first \n"
    assert continue_line("first \\  ") == "first \n"
    assert continue_line("no continuation") is None
    assert continue_line("escaped \\\\") is None


def test_double_slash_sends_a_message_that_starts_with_a_slash():
    assert message_text("//etc is a folder") == "/etc is a folder"
    assert message_text("  plain  ") == "plain"


def user_messages(project: Path) -> list[str]:
    return [r["content"] for r in read_records(FilesStore().session_infos(paths.project_hash(project))[0].path) if r.get("role") == "user"]


def test_repl_sends_messages_runs_slash_commands_and_exits(project, tmp_path, pipe):
    repl, console, _ = scripted_repl(project, tmp_path, ["Hi there.", "Second."], pipe)
    pipe.send_text("hello\r/context stats\r/sessions\rline one\\\rline two\r/exit\r")
    assert repl.run() == 0
    out = console.export_text()
    assert "Hi there." in out and "Second." in out
    assert "tokens left before auto compact" in out and "model calls" in out and "tool executions" in out
    assert "Sessions of" in out
    assert user_messages(project) == ["hello", "line one\nline two"]


def test_repl_escape_enter_adds_a_line(project, tmp_path, pipe):
    repl, _, _ = scripted_repl(project, tmp_path, ["ok"], pipe)
    pipe.send_text("alpha\x1b\rbeta\r/exit\r")
    repl.run()
    assert user_messages(project) == ["alpha\nbeta"]


def test_repl_ctrl_d_exits(project, tmp_path, pipe):
    repl, console, _ = scripted_repl(project, tmp_path, [], pipe)
    pipe.send_text("\x04")
    assert repl.run() == 0
    assert "bye" in console.export_text()


def test_repl_approval_always_remembers_the_command(project, tmp_path, pipe):
    marker = project / "n.txt"
    command = f"echo x >> {marker}"
    steps = [{"tool": "shell", "args": {"command": command}}, "one",
             {"tool": "shell", "args": {"command": command}}, "two"]
    repl, console, _ = scripted_repl(project, tmp_path, steps, pipe, answers=["a"])
    pipe.send_text("first\rsecond\r/exit\r")
    repl.run()
    out = console.export_text()
    assert out.count("[y]es / [n]o / [a]lways") == 1  # asked once, remembered for the second run
    assert marker.read_text().count("x") == 2


def test_repl_denied_command_is_not_run_and_the_model_hears_why(project, tmp_path, pipe):
    marker = project / "never.txt"
    steps = [{"tool": "shell", "args": {"command": f"touch {marker}"}}, "understood"]
    repl, console, _ = scripted_repl(project, tmp_path, steps, pipe, answers=["maybe", "n"])
    pipe.send_text("do it\r/exit\r")
    repl.run()
    assert not marker.exists()
    assert "answer y, n or a" in console.export_text()
    tool = [r for r in read_records(FilesStore().session_infos(paths.project_hash(project))[0].path) if r.get("role") == "tool"]
    assert "Not run" in str(tool[0]["content"])


def test_resumed_context_grid_uses_this_window_s_threshold_not_the_recorded_one(project, tmp_path, pipe):
    first, _, _ = scripted_repl(project, tmp_path, ["Hi."], pipe, window=20_000)
    pipe.send_text("hello\r/exit\r")
    first.run()
    repl, console, _ = scripted_repl(project, tmp_path, [], pipe, continue_=True)
    pipe.send_text("/context\r/exit\r")
    repl.run()
    out = console.export_text()
    assert "/131.1k tokens" in out and "auto-compact at 98.1k" in out


def test_repl_model_error_is_one_line_and_the_repl_goes_on(project, tmp_path, pipe):
    repl, console, _ = scripted_repl(project, tmp_path, [], pipe)
    pipe.send_text("hello\r/help\r/exit\r")
    repl.run()
    out = console.export_text()
    assert out.count("error:") == 1 and "Slash commands" in out


def test_repl_compact_prints_before_after_and_context_shows_the_window_now(project, tmp_path, pipe):
    steps = [f"answer {i} " + "lorem ipsum " * 300 for i in range(8)]
    repl, console, _ = scripted_repl(project, tmp_path, steps, pipe, window=24_000)
    turns = "".join(f"question {i}\r" for i in range(8))
    pipe.send_text(turns + "/compact keep the questions\r/context\r/context stats\r/context explain\r/context artifacts\r/context messages\r/exit\r")
    repl.run()
    out = console.export_text()
    assert "compacted (manual" in out and "→" in out
    pre, post = (int(x.replace(",", "")) for x in re.search(r"compacted \(manual[^)]*\): ([\d,]+) → ([\d,]+)", out).groups())
    shown = float(re.search(r"([\d.]+)k/[\d.]+k tokens", out).group(1)) * 1000
    assert post < pre and abs(shown - post) <= 0.1 * post + 100, (pre, post, shown)  # /context: the window now
    assert "Compaction history" in out
    assert "No tool result has been persisted" in out
    assert "Messages the engine plans from" in out and "question 7" in out
    records = list(read_records(FilesStore().session_infos(paths.project_hash(project))[0].path))
    assert any(r["type"] == "compact_boundary" and r["trigger"] == "manual" for r in records)


def test_repl_resume_switches_sessions(project, tmp_path, pipe):
    first, _, _ = scripted_repl(project, tmp_path, ["one"], pipe)
    pipe.send_text("remember this\r/exit\r")
    first.run()
    old = FilesStore().session_infos(paths.project_hash(project))[0].session_id
    with create_pipe_input() as pipe2:
        second, console, _ = scripted_repl(project, tmp_path, ["two"], pipe2)
        pipe2.send_text(f"/resume {old}\r/resume nope-x\r/exit\r")
        second.run()
    out = console.export_text()
    assert f"resumed session {old}" in out
    assert "error:" in out and "nope-x" in out


# ── TurnDisplay and the approver, without a session ─────────────────────────────────────

def test_turn_display_shows_compaction_tools_and_persisted_results():
    console = Console(record=True, width=120)
    display = TurnDisplay(console=console, activity=console)
    bus = EventBus()
    display.attach(bus)
    display.on_token("partial answer")
    bus.emit(EventType.COMPACT_STARTED, trigger="auto", tokens=14_000)
    bus.emit(EventType.COMPACT_BOUNDARY, id="b1", trigger="auto", pre_tokens=14_000, post_tokens=3_500,
             summary_source="llm")
    bus.emit(EventType.TOOL_STARTED, tool_call_id="c1", tool="grep")
    bus.emit(EventType.TOOL_RESULT_PERSISTED, tool="grep", tool_call_id="c1", path="tool-results/c1.txt",
             original_chars=90_000, preview_chars=2_000)
    bus.emit(EventType.MICRO_COMPACTED, trigger="time", cleared_ids=["a", "b"])
    display.detach()
    bus.emit(EventType.TOOL_STARTED, tool_call_id="c2", tool="after-detach")
    out = console.export_text()
    assert "compacting the conversation (auto, 14,000 tokens)" in out
    assert "compacted (auto, summary from llm): 14,000 → 3,500 tokens" in out
    assert "⏺ grep" in out and "90,000 chars saved to tool-results/c1.txt" in out
    assert "2 old tool result(s) cleared" in out and "after-detach" not in out


def test_turn_display_leaves_the_manual_compaction_line_to_slash_compact():
    console = Console(record=True, width=120)
    display = TurnDisplay(console=console, activity=console)
    bus = EventBus()
    display.attach(bus)
    bus.emit(EventType.COMPACT_STARTED, trigger="manual", tokens=4_644)
    bus.emit(EventType.COMPACT_BOUNDARY, id="b1", trigger="manual", pre_tokens=4_644, post_tokens=2_000,
             summary_source="extractive")
    display.detach()
    assert "compacted" not in console.export_text()


def test_turn_display_stops_the_spinner_of_a_refused_manual_compaction():
    console = Console(record=True, width=120, force_terminal=True)
    display = TurnDisplay(console=console, activity=console)
    bus = EventBus()
    display.attach(bus)
    bus.emit(EventType.COMPACT_STARTED, trigger="manual", tokens=900)
    assert display._status is not None
    bus.emit(EventType.COMPACT_FAILED, trigger="manual", error="nothing compacted: the session is short")
    assert display._status is None
    display.detach()
    assert "compaction failed" not in console.export_text()  # /compact prints the reason itself


def test_approver_parses_answers_and_denies_on_ctrl_c():
    console = Console(record=True)
    requests = [SimpleNamespace(tool_call_id="c1", tool="shell", args={"command": "rm -rf build"}),
                SimpleNamespace(tool_call_id="c2", tool="write_file", args={"file_path": "a.py"})]
    answers = iter(["y"])

    def read(question: str) -> str:
        try:
            return next(answers)
        except StopIteration:
            raise KeyboardInterrupt from None

    result = make_approver(console, read)(requests)
    assert result["c1"] == {"decision": "allow", "remember": False}
    assert result["c2"]["decision"] == "deny"
    assert parse_approval_answer(" Always ") == ("allow", True)
    assert parse_approval_answer("nope") is None
    assert describe_call("shell", {"command": "ls"}) == "shell command `ls`"
    assert describe_call("edit_file", {"file_path": "x.py"}) == "edit_file on x.py"


def test_resumed_session_waiting_for_approval_asks_first_and_never_reruns_earlier_tools(project, tmp_path, pipe):
    from mtagent.agent.session import AgentSession
    from mtagent.cli.scripted_model import load_scripted_model

    log = project / "log.txt"
    steps = [{"tool": "shell", "args": {"command": f"echo first >> {log}"}},
             {"tool": "shell", "args": {"command": f"echo second >> {log}"}}, "both ran"]
    session = AgentSession.create(project, model=load_scripted_model(script(tmp_path, steps, "paused.json")))
    sid = session.session_id
    first = session.run_turn("log twice", approver=lambda requests: "allow")
    assert first.status == "done" and log.read_text().count("first") == 1
    session.close()

    steps2 = [{"tool": "shell", "args": {"command": f"echo third >> {log}"}}, "third ran"]
    paused = AgentSession.resume(sid, project, model=load_scripted_model(script(tmp_path, steps2, "paused2.json")))
    assert paused.run_turn("once more").status == "approval_required"
    paused.close()

    repl, console, _ = scripted_repl(project, tmp_path, ["later"], pipe, answers=["y"], resume=sid)
    pipe.send_text("/exit\r")
    repl.run()
    out = console.export_text()
    assert "waited for your approval" in out and "[y]es / [n]o / [a]lways" in out
    assert log.read_text().split() == ["first", "second", "third"]


def test_repl_compact_of_a_short_session_changes_nothing_and_says_why(project, tmp_path, pipe):
    repl, console, _ = scripted_repl(project, tmp_path, ["short answer"], pipe)
    pipe.send_text("one question\r/compact\r/compact from nosuchid\r/exit\r")
    repl.run()
    out = console.export_text()
    lines = [line for line in out.splitlines() if line.startswith(("nothing", "error"))]
    assert lines and lines[0].startswith("nothing") and len(lines[0]) > 20
    records = list(read_records(FilesStore().session_infos(paths.project_hash(project))[0].path))
    assert not any(r["type"] == "compact_boundary" for r in records)


def test_clear_starts_a_new_session_model_switches_and_cost_splits_cache(project, tmp_path, pipe):
    other = script(tmp_path, ["from the other model"], "other.json")
    repl, console, _ = scripted_repl(project, tmp_path, ["first answer", "second answer"], pipe)
    pipe.send_text(f"hello\r/cost\r/model {other}\rgo on\r/clear\r/cost\r/model nosuch:thing\r/exit\r")
    repl.run()
    out = console.export_text()
    sessions = FilesStore().session_infos(paths.project_hash(project))
    assert len(sessions) == 1  # /model kept the first; /clear's new one got no message, so it is not kept
    assert "from the other model" in out and "model is now" in out and "new session" in out
    assert "cache reads" in out and "cache writes" in out and "model call(s)" in out
    assert "No model call yet." in out
    first_users = [r.get("content") for r in read_records(sessions[0].path) if r.get("role") == "user"]
    assert first_users == ["hello", "go on"]
    assert out.count("error:") == 1  # the bad /model spec; the session went on as it was


def test_cost_prices_recorded_usage_with_cache_reads_and_writes_apart(project, tmp_path):
    from mtagent.cli.repl_host import ReplHost
    from mtagent.config import Settings

    host = ReplHost(console=Console(record=True), options=SessionOptions(cwd=project, model="scripted:x"))

    class Session:
        model_name = "openai:gpt-4o-mini"
        transcript_path = tmp_path / "t.jsonl"
        settings = Settings()

    usage = {"input_tokens": 1_000_000, "output_tokens": 0,
             "input_token_details": {"cache_read": 1_000_000, "cache_creation": 0}}
    Session.transcript_path.write_text(json.dumps({"type": "transcript_message", "role": "assistant",
                                                   "usage": usage}) + "\n")
    host.session = Session()  # type: ignore[assignment]
    report = host.cost()
    assert report is not None and report.usage.cache_read == 1_000_000 and report.usage.input == 0
    assert report.cost_usd == pytest.approx(0.075)


def test_repl_says_why_a_tool_call_failed(project, tmp_path, pipe):
    steps = [{"tool": "read_file", "args": {"file_path": "nope.txt"}}, "could not read it"]
    repl, console, _ = scripted_repl(project, tmp_path, steps, pipe)
    pipe.send_text("read nope.txt\r/exit\r")
    repl.run()
    out = console.export_text()
    assert "read_file failed: Error: file not found: nope.txt" in out  # the reason, not only "failed"


def test_context_says_the_tool_catalog_line_once_until_it_changes(project, tmp_path, pipe):
    repl, console, _ = scripted_repl(project, tmp_path, ["Hi."], pipe)
    pipe.send_text("hello\r/context\r/context\r/context stats\r/exit\r")
    repl.run()
    out = console.export_text()
    assert out.count("tool catalog:") == 2, out  # the first /context and /context stats; not the second grid
    assert out.count("Free space") == 2  # the grid itself is shown every time


def test_context_stats_after_a_resume_counts_the_earlier_compactions(project, tmp_path, pipe):
    steps = [f"answer {i} " + "lorem ipsum " * 300 for i in range(8)]
    first, _, _ = scripted_repl(project, tmp_path, steps, pipe, window=24_000)
    pipe.send_text("".join(f"question {i}\r" for i in range(8)) + "/compact keep the questions\r/exit\r")
    first.run()
    with create_pipe_input() as pipe2:
        repl, console, _ = scripted_repl(project, tmp_path, [], pipe2, continue_=True)
        pipe2.send_text("/context stats\r/exit\r")
        repl.run()
    out = console.export_text()
    assert re.search(r"compactions \(whole session\)\s+1\b", out), out
    assert "since this session was opened here" in out


def test_the_config_is_read_once_at_start_and_afresh_for_a_later_session(project, tmp_path, pipe, monkeypatch):
    reads: list[Path] = []
    settings = SessionOptions.settings
    monkeypatch.setattr(SessionOptions, "settings", lambda self: (reads.append(self.root), settings(self))[1])
    repl, console, _ = scripted_repl(project, tmp_path, ["One.", "Two."], pipe)
    pipe.send_text("hello\r")
    pipe.send_text("/clear\rhello again\r/exit\r")
    assert repl.run() == 0
    assert "One." in console.export_text() and len(reads) == 2  # the start (and first session), then /clear's


def test_a_repl_opened_and_left_without_a_message_leaves_no_session(project, tmp_path, pipe):
    """A session is kept from its first message (issue 36): the empty one never becomes `latest`."""
    earlier, _, _ = scripted_repl(project, tmp_path, ["Kept."], pipe)
    pipe.send_text("a real question\r/exit\r")
    earlier.run()
    [kept] = FilesStore().sessions(paths.project_hash(project))
    with create_pipe_input() as pipe2:
        repl, _, _ = scripted_repl(project, tmp_path, [], pipe2)
        pipe2.send_text("/context\r/clear\r/context\r/exit\r")  # opens a session, then a second one
        repl.run()
    assert FilesStore().sessions(paths.project_hash(project)) == [kept]
    assert not list((paths.history_dir(project) / "artifacts").glob("*")) or \
        [p.name for p in (paths.history_dir(project) / "artifacts").iterdir()] == [kept]


def test_cost_s_title_is_one_line_at_60_columns():
    from types import SimpleNamespace

    from mtagent.cli.slash_session import CostReport, cmd_cost
    from mtagent.pricing import Usage

    console = Console(record=True, width=60, force_terminal=False)
    report = CostReport("openai:gpt-4o-mini", Usage(input=1200, output=80, calls=3), 0.0012)
    host = SimpleNamespace(console=console, cost=lambda: report)
    cmd_cost(host, SimpleNamespace(rest=""))
    lines = console.export_text().splitlines()
    assert lines[0] == "Session cost · openai:gpt-4o-mini · 3 model call(s)"  # not cut to the table's width


# ── /skill ────────────────────────────────────────────────────────────────────────────────

def test_skill_command_sends_the_body_and_the_request(project: Path, tmp_path: Path, pipe) -> None:
    """/skill NAME: the skill's instructions go to the model as the next message; /context names the catalog."""
    from mtagent import trust

    skill = project / ".mtagent" / "skills" / "release" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: release\ndescription: Cut a release.\n---\n1. Bump the version in pyproject.\n")
    trust.set_trust(project, True)
    repl, console, _ = scripted_repl(project, tmp_path, ["Bumped."], pipe)
    pipe.send_text("/skill nope\r/skill release for 2.0\r/context explain\r/exit\r")
    assert repl.run() == 0
    out = console.export_text()
    assert "no skill named 'nope'" in out and "Bumped." in out
    assert "tool catalog:" in out and "1 skills" in out and "1 loaded" in out
    users = user_messages(project)
    assert len(users) == 1 and "1. Bump the version in pyproject." in users[0] and users[0].endswith("for 2.0")


def test_an_untrusted_projects_skill_is_asked_about_and_named_when_not_found(tmp_path: Path, pipe) -> None:
    """#33/#36: the trust question covers the project's skills; `/skill NAME` of an existing but untrusted
    skill says so (it said "no skills found: add one as .mtagent/skills/…")."""
    from mtagent.cli.trust_cmd import first_run_question

    project = tmp_path / "proj"
    skill = project / ".claude" / "skills" / "explaining-code" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: explaining-code\ndescription: Explain code.\n---\nUse analogies.\n")
    question = first_run_question(project)
    assert question is not None and "skill explaining-code (.claude/skills)" in question
    repl, console, asked = scripted_repl(project, tmp_path, ["ok"], pipe, ["n"], width=200, echo=False)
    pipe.send_text("/skill explaining-code\r/exit\r")
    assert repl.run() == 0
    out = console.export_text()
    assert asked and "explaining-code" in asked[0]
    assert "explaining-code" in out and "not trusted" in out and "mtagent trust" in out
    assert "no skills found" not in out


def test_the_skill_tool_names_an_untrusted_skill(tmp_path: Path) -> None:
    from mtagent.config import load_settings
    from mtagent.context.toolset.skills import SkillBook, discover
    from mtagent.context.toolset.toolset import Toolset

    project = tmp_path / "proj"
    skill = project / ".mtagent" / "skills" / "release" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: release\ndescription: Cut a release.\n---\nBump.\n")
    found = discover(project, load_settings(project).skills)
    assert found.skills == [] and found.untrusted == ["release"]
    book = SkillBook(found, load_settings(project).skills)
    toolset = Toolset.__new__(Toolset)
    toolset.skills = book
    error = Toolset.run_skill(toolset, "release")
    assert error.startswith("Error: ") and "not trusted" in error and "mtagent trust" in error
