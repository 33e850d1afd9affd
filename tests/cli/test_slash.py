"""Slash commands: parsing, suggestions, dispatch to a fake session host, one-line errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from mtagent.cli.context_render import WindowUsage
from mtagent.cli.session_report import CompactionEntry, PersistedResult, SessionReport
from mtagent.cli.slash import (
    COMMANDS,
    SlashOutcome,
    SlashCommand,
    dispatch,
    parse_slash,
    suggest,
)
from mtagent.cli.slash_host import CompactOutcome, SessionListRow
from mtagent.errors import SessionNotFound


@dataclass
class FakeHost:
    cwd: Path
    console: Console = field(default_factory=lambda: Console(record=True, width=160))
    usage: WindowUsage | None = None
    report: SessionReport | None = None
    plan: Mapping[str, Any] | None = None
    calls: list[tuple[str, Any]] = field(default_factory=list)
    sessions: list[SessionListRow] = field(default_factory=list)
    schemas_said: tuple[str | None, str | None] | None = None

    @property
    def session_id(self) -> str | None:
        return "s-current"

    def work_plan(self) -> Any:
        return None

    def context_warnings(self) -> list[str]:
        return []

    def mcp_servers(self) -> tuple[list[Any], list[str]] | None:
        return None

    def window_usage(self) -> WindowUsage | None:
        return self.usage

    def session_report(self) -> SessionReport | None:
        return self.report

    def artifact_root(self) -> str | None:
        return "/art/s-current"

    def last_plan(self):
        return self.plan, None

    def stats_counters(self) -> Mapping[str, int]:
        return {"model_calls": 3}

    def effective_limit(self) -> int | None:
        return 20_000

    def compact(self, instructions: str | None, from_message_id: str | None = None) -> CompactOutcome:
        if from_message_id is not None:
            self.calls.append(("compact_from", from_message_id))
            if from_message_id == "nope":
                raise SessionNotFound(f"no message {from_message_id!r} in this session; "
                                      "ids are in `mtagent sessions show`")
            return CompactOutcome(9_000, 5_000, "manual")
        self.calls.append(("compact", instructions))
        if instructions == "crash":
            raise ValueError("engine bug")
        return CompactOutcome(9_000, 2_000, "manual", "llm")

    def resume(self, session_id: str | None) -> str:
        self.calls.append(("resume", session_id))
        return session_id or "s-latest"

    def list_sessions(self) -> list[SessionListRow]:
        return self.sessions

    def history_rows(self) -> list[tuple[str, str, str]]:
        return [("msg_1", "human", "fix the parser"), ("msg_2", "ai", "→ read_file")]

    def output(self) -> str:
        return self.console.export_text()


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    return FakeHost(cwd=tmp_path)


def said(host: FakeHost, command: str) -> str:
    """What the console holds once ``command`` ran (all printed so far)."""
    dispatch(host, command)
    return host.output()


def test_parse_splits_name_and_rest_and_ignores_plain_messages():
    assert parse_slash("/compact keep the API notes") == SlashCommand("compact", "keep the API notes")
    assert parse_slash("  /Context stats ") == SlashCommand("context", "stats")
    assert parse_slash("fix the bug in /src") is None
    assert parse_slash("//etc/hosts is odd") is None
    assert parse_slash("/") is None


def test_suggest_finds_prefix_and_typos():
    assert suggest("comp") == "compact"
    assert suggest("contxt") == "context"
    assert suggest("sesions") == "sessions"
    assert suggest("zzzz") is None


def test_unknown_command_prints_one_line_with_a_suggestion(host):
    assert dispatch(host, "/contxt") is SlashOutcome.CONTINUE
    out = host.output().strip().splitlines()
    assert out == ["error: unknown command /contxt; did you mean /context? (/help lists them)"]


def test_plain_text_is_not_a_command(host):
    assert dispatch(host, "hello there") is SlashOutcome.NOT_A_COMMAND


def test_exit_and_quit_end_the_repl(host):
    assert dispatch(host, "/exit") is SlashOutcome.EXIT
    assert dispatch(host, "/quit") is SlashOutcome.EXIT
    assert dispatch(host, "/exit now") is SlashOutcome.CONTINUE
    assert "takes no arguments" in host.output()


def test_help_lists_every_command_and_details_one(host):
    out = said(host, "/help")
    for name in ("compact", "context", "memory", "resume", "sessions", "help", "exit"):
        assert f"/{name}" in out
    assert "/context explain    the last context plan" in said(host, "/help context")
    assert "/compact from <message-id>" in said(host, "/compact --help")


def test_compact_passes_instructions_and_prints_before_after(host):
    dispatch(host, "/compact keep the failing test names")
    assert host.calls == [("compact", "keep the failing test names")]
    assert "9,000 → 2,000 tokens (7,000 saved)" in host.output()
    dispatch(host, "/compact")
    assert host.calls[-1] == ("compact", None)


def test_compact_from_message_id_and_its_errors(host):
    dispatch(host, "/compact from msg_42")
    assert host.calls[-1] == ("compact_from", "msg_42")
    assert "9,000 → 5,000 tokens" in host.output()
    assert "usage: /compact from <message-id>" in said(host, "/compact from")
    assert "error: no message 'nope' in this session" in said(host, "/compact from nope")


def test_context_views_before_any_message_say_so(host):
    dispatch(host, "/context")
    dispatch(host, "/context artifacts")
    out = said(host, "/context explain")
    assert "No context yet" in out and "No session yet" in out and "No context plan yet" in out


def test_context_grid_stats_artifacts_and_explain(host):
    host.usage = WindowUsage(16_000, 10_000, {"messages": 4_000, "system": 1_000})
    host.report = SessionReport(
        transcript=Path("x.jsonl"), session_id="s-current",
        persisted=[PersistedResult("call_1", "shell", "tool-results/call_1.txt", 50_000, 50_000, False, 4_000)],
        compactions=[CompactionEntry("manual", 12_000, 3_000, "llm")],
    )
    host.plan = {"turn": 2, "tokens": 5_000, "selected": ["a"], "compressed": [],
                 "dropped": [{"id": "m9", "reason": "older than the recent tail"}]}
    assert "Messages: 4,000 tokens (25.0%)" in said(host, "/context")
    out = said(host, "/context stats")
    assert "tokens left before auto compact" in out and "5,000" in out and "12,000" in out
    assert "/art/s-current/tool-results/call_1.txt" in said(host, "/context artifacts")
    assert "older than the recent tail" in said(host, "/context explain")
    assert "did you mean /context stats?" in said(host, "/context stat")


def test_memory_add_list_remove_through_slash(host):
    dispatch(host, '/memory add "tests run with uv run pytest"')
    dispatch(host, "/memory add --project the API lives in src/api")
    out = said(host, "/memory list")
    assert "remembered (global, #1): tests run with uv run pytest" in out
    assert "remembered (project, #1): the API lives in src/api" in out
    assert "1. tests run with uv run pytest" in out
    assert "removed (global): tests run with uv run pytest" in said(host, "/memory remove 1")
    assert "usage: /memory add" in said(host, "/memory add")
    assert "did you mean list?" in said(host, "/memory lst")
    assert "close the quote" in said(host, '/memory add "unclosed')


def test_memory_add_keeps_an_apostrophe_in_the_fact(host):
    assert "remembered (global, #1): don't push to main" in said(host, "/memory add don't push to main")


def test_resume_and_sessions(host):
    dispatch(host, "/resume")
    dispatch(host, "/resume s-old")
    assert host.calls == [("resume", None), ("resume", "s-old")]
    assert "resumed session s-latest" in host.output()
    assert "No saved sessions" in said(host, "/sessions")
    host.sessions = [SessionListRow("s-old", "2026-11-29 12:00", 12, 1, "scripted"),
                     SessionListRow("s-current", "2026-11-29 13:00", 4, 0, None, current=True)]
    out = said(host, "/sessions")
    assert "s-old" in out and "* " in out and "s-current" in out


def test_every_command_has_help_and_a_one_line_summary():
    for spec in COMMANDS.values():
        assert spec.usage.startswith("/") and spec.summary and "\n" not in spec.summary


def test_context_messages_lists_ids_for_compact_from(host):
    out = said(host, "/context messages")
    assert "msg_1" in out and "fix the parser" in out and "/compact from <id>" in out


def test_context_messages_shows_whole_ids_in_a_narrow_terminal(host):
    long_id = "msg-8d977058ad3d46fc9cf4ee3596478217"
    host.console = Console(record=True, width=100)
    host.history_rows = lambda: [(long_id, "human", "read a.py please " * 10)]
    out = said(host, "/context messages")
    assert long_id in out and "human" in out


def test_compact_that_grows_the_context_says_so_instead_of_a_negative_saving(host):
    host.compact = lambda instructions: CompactOutcome(2_546, 2_706, "manual", "extractive")
    out = said(host, "/compact")
    assert "2,546 → 2,706 tokens" in out and "-160" not in out and "160 more" in out


def test_an_unexpected_failure_in_a_command_is_one_line_and_the_repl_goes_on(host):
    assert dispatch(host, "/compact crash") is SlashOutcome.CONTINUE
    assert host.output().strip() == "error: /compact failed: ValueError: engine bug"


def test_memory_remove_obsolete_keeps_the_line_struck_through_and_unused(host):
    from mtagent.context.static import memory

    dispatch(host, "/memory add --project builds use make")
    dispatch(host, "/memory add --project tests use pytest")
    assert "marked obsolete (project): builds use make" in said(host, "/memory remove --obsolete --project 1")
    entries = memory.list_memories("project", host.cwd)
    assert [(e.text, e.obsolete) for e in entries] == [("builds use make", True), ("tests use pytest", False)]
    assert memory.memory_file("project", host.cwd).active() == ["tests use pytest"]
    assert "(obsolete)" in said(host, "/memory list --project")
    assert "--obsolete goes with remove" in said(host, "/memory add --obsolete something")


def test_memory_namespaces_through_slash(host):
    dispatch(host, "/memory add --team deploys go through argo")
    dispatch(host, "/memory add --namespace user I like short answers")
    out = said(host, "/memory add --namespace=project the API lives in src/api")
    assert "remembered (team, #1): deploys go through argo" in out
    assert "remembered (user, #1): I like short answers" in out
    assert "remembered (project, #1): the API lives in src/api" in out
    assert "1. I like short answers" in said(host, "/memory list --user")
    for hostile in ("../global", "..", "x" * 5_000):
        dispatch(host, f"/memory add --namespace {hostile} attacker fact")
        shown = host.output()
        assert "unknown memory namespace" in shown and len(shown) < 400


def test_commands_read_the_hosts_typed_attributes_instead_of_probing() -> None:
    """``getattr(host, "mcp_servers", lambda: None)`` hid a host that lacks what a command needs (issue 35)."""
    import re

    import mtagent.cli

    probe = re.compile(r"getattr\((getattr\()?(host|session|self\.session)\b")
    found = [f"{p.name}:{n}" for p in sorted(Path(mtagent.cli.__file__).parent.glob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if probe.search(line)]
    assert found == []
