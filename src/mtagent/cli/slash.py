"""Slash commands of the REPL: parsing, dispatch, and each command's output.

Everything here runs without a terminal. A command talks to the running session only through
:class:`SlashHost` — the REPL implements it over the agent session, tests with a small fake —
and prints to the host's rich console. A command's failure is one line (``error: …``) and the
REPL goes on; an unknown command gets a "did you mean" suggestion.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from mtagent.cli import context_render as render
from mtagent.cli.context_render import WindowUsage
from mtagent.cli.session_report import SessionReport
from mtagent.context.static import memory
from mtagent.context.static.memory import Scope
from mtagent.errors import MTAgentError, UsageError
from mtagent.terminal_text import terminal_safe


log = logging.getLogger(__name__)


class SlashOutcome(str, Enum):
    CONTINUE = "continue"
    EXIT = "exit"
    NOT_A_COMMAND = "not_a_command"
    SEND = "send"  # send the host's pending message as the next turn (/skill)


@dataclass(slots=True, frozen=True)
class SlashCommand:
    name: str
    rest: str = ""

    @property
    def words(self) -> list[str]:
        """``rest`` split like a shell would, except that only double quotes group words: an
        apostrophe (``don't``) is part of its word, as facts for ``/memory add`` need."""
        lexer = shlex.shlex(self.rest, posix=True)
        lexer.whitespace_split = True
        lexer.quotes = '"'
        lexer.commenters = ""
        try:
            return list(lexer)
        except ValueError as exc:
            raise UsageError(f"/{self.name}: {exc} (close the quote)") from None


@dataclass(slots=True, frozen=True)
class CompactOutcome:
    """What a manual compaction did (before/after are the history's token estimate)."""

    pre_tokens: int
    post_tokens: int
    trigger: str = "manual"
    summary_source: str | None = None
    unchanged_reason: str | None = None  # set when nothing was compacted: the one line saying why


@dataclass(slots=True, frozen=True)
class SessionListRow:
    session_id: str
    updated: str
    messages: int
    compactions: int = 0
    model: str | None = None
    current: bool = False


class SlashHost(Protocol):
    """What slash commands need from the running session (the REPL implements it)."""

    console: Console
    cwd: Path

    @property
    def session_id(self) -> str | None: ...

    def window_usage(self) -> WindowUsage | None:
        """Tokens per bucket of the last (or next) view, against the window; None before any."""

    def session_report(self) -> SessionReport | None:
        """This session's transcript facts (persisted results, compactions); None if none yet."""

    def artifact_root(self) -> str | None: ...

    def last_plan(self) -> tuple[Mapping[str, Any] | None, str | None]:
        """The last context plan as a record dict, and the engine's own explanation if any."""

    def stats_counters(self) -> Mapping[str, int]: ...

    def effective_limit(self) -> int | None: ...

    def compact(self, instructions: str | None) -> CompactOutcome: ...

    def compact_from(self, message_id: str) -> CompactOutcome: ...

    def resume(self, session_id: str | None) -> str:
        """Switch to ``session_id`` (None: the latest other session); return the id resumed."""

    def list_sessions(self) -> list[SessionListRow]: ...

    def history_rows(self) -> list[tuple[str, str, str]]:
        """(message id, role, first line) of the history the engine plans from."""


Handler = Callable[[SlashHost, SlashCommand], SlashOutcome]


@dataclass(slots=True, frozen=True)
class CommandSpec:
    name: str
    usage: str
    summary: str
    handler: Handler
    details: tuple[str, ...] = field(default_factory=tuple)


def parse_slash(line: str) -> SlashCommand | None:
    """``"/compact keep the API notes"`` → ``SlashCommand("compact", "keep the API notes")``.

    A line that does not start with ``/`` is a message for the model. ``//text`` sends
    ``/text`` as a message (the escape for a message that starts with a slash).
    """
    text = line.strip()
    if not text.startswith("/") or text.startswith("//") or text == "/":
        return None
    head, _, rest = text[1:].partition(" ")
    head, sep, more = head.partition("\n")
    if sep:
        rest = f"{more}\n{rest}".strip() if rest else more
    return SlashCommand(head.lower(), rest.strip())


def suggest(name: str, names: list[str] | None = None) -> str | None:
    """The closest known command to a mistyped one, if any is close."""
    pool = names if names is not None else list(COMMANDS)
    prefix = [n for n in pool if n.startswith(name)] if name else []
    if len(prefix) == 1:
        return prefix[0]
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.5)
    return close[0] if close else None


def dispatch(host: SlashHost, line: str) -> SlashOutcome:
    """Run one slash command line; a failure is printed as one line and the REPL continues."""
    command = parse_slash(line)
    if command is None:
        return SlashOutcome.NOT_A_COMMAND
    spec = COMMANDS.get(command.name)
    if spec is None:
        hint = suggest(command.name)
        tip = f"; did you mean /{hint}?" if hint else ""
        error_line(host.console, f"unknown command /{command.name}{tip} (/help lists them)")
        return SlashOutcome.CONTINUE
    if command.rest in ("--help", "-h", "help") and command.name != "help":
        print_command_help(host.console, spec)
        return SlashOutcome.CONTINUE
    try:
        return spec.handler(host, command)
    except MTAgentError as exc:
        error_line(host.console, str(exc))
    except KeyboardInterrupt:
        error_line(host.console, f"/{command.name} interrupted")
    except Exception as exc:  # an engine bug must not end the REPL; the session stays usable
        log.debug("/%s failed", command.name, exc_info=True)
        error_line(host.console, f"/{command.name} failed: {type(exc).__name__}: {exc}")
    return SlashOutcome.CONTINUE


def error_line(console: Console, message: str) -> None:
    console.print(f"[bold red]error:[/] {escape(terminal_safe(message))}", soft_wrap=not console.is_terminal)


# ── commands ───────────────────────────────────────────────────────────────────────────


def _no_args(command: SlashCommand) -> None:
    if command.rest:
        raise UsageError(f"/{command.name} takes no arguments (got {command.rest!r})")


def cmd_help(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    if command.rest:
        name = command.rest.lstrip("/").split()[0].lower()
        spec = COMMANDS.get(name)
        if spec is None:
            hint = suggest(name)
            raise UsageError(f"no command /{name}" + (f"; did you mean /{hint}?" if hint else ""))
        print_command_help(host.console, spec)
        return SlashOutcome.CONTINUE
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for spec in COMMANDS.values():
        table.add_row(escape(spec.usage), spec.summary)
    host.console.print("[bold]Slash commands[/] (type a message without '/' to talk to the agent)")
    host.console.print(table)
    host.console.print("[dim]Enter sends; Esc+Enter or a trailing \\ adds a line; Ctrl-C stops the "
                       "running turn; Ctrl-D exits. `/help <command>` for details.[/]")
    return SlashOutcome.CONTINUE


def print_command_help(console: Console, spec: CommandSpec) -> None:
    console.print(f"[bold cyan]{escape(spec.usage)}[/]  {spec.summary}")
    for line in spec.details:
        console.print(f"  {escape(line)}", soft_wrap=True)


def cmd_exit(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    _no_args(command)
    return SlashOutcome.EXIT


def _print_compaction(console: Console, outcome: CompactOutcome) -> None:
    if outcome.unchanged_reason:
        console.print(escape(outcome.unchanged_reason), soft_wrap=True)
        return
    saved = outcome.pre_tokens - outcome.post_tokens
    source = f", summary from {outcome.summary_source}" if outcome.summary_source else ""
    effect = f"{saved:,} saved" if saved >= 0 else f"{-saved:,} more: the summary outweighs the little it replaced"
    console.print(f"compacted ({outcome.trigger}{source}): {outcome.pre_tokens:,} → "
                  f"{outcome.post_tokens:,} tokens ({effect})")


def _print_meter(host: SlashHost) -> None:
    """The window's current size as ``/context stats`` shows it, with the moment it measures."""
    usage = host.window_usage()
    if usage is not None and usage.basis:
        host.console.print(f"window: {usage.used:,} / {usage.token_limit:,} tokens ({usage.basis})")


def cmd_compact(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    words = command.rest.split()
    if words and words[0] == "from":
        if len(words) != 2:
            raise UsageError("usage: /compact from <message-id> (ids are in `mtagent sessions show`)")
        _print_compaction(host.console, host.compact_from(words[1]))
        return SlashOutcome.CONTINUE
    _print_compaction(host.console, host.compact(command.rest or None))
    _print_meter(host)
    return SlashOutcome.CONTINUE


_CONTEXT_SUBCOMMANDS = ("stats", "artifacts", "explain", "messages")


def cmd_context(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    sub = command.rest.split()[0].lower() if command.rest else ""
    if sub and sub not in _CONTEXT_SUBCOMMANDS:
        close = difflib.get_close_matches(sub, _CONTEXT_SUBCOMMANDS, n=1)
        hint = f"; did you mean /context {close[0]}?" if close else ""
        raise UsageError(f"unknown /context view {sub!r}{hint} (use stats, artifacts, explain or messages)")
    if sub == "messages":
        rows = host.history_rows()
        if not rows:
            host.console.print("[dim]No messages yet.[/]")
            return SlashOutcome.CONTINUE
        table = Table(title=f"Messages the engine plans from ({len(rows)})", title_justify="left")
        table.add_column("id", no_wrap=True, min_width=max(len(row[0]) for row in rows))
        table.add_column("role", no_wrap=True, min_width=max(len(row[1]) for row in rows))
        table.add_column("text", max_width=80)
        for message_id, role, text in rows:
            table.add_row(terminal_safe(message_id), terminal_safe(role),
                          Text(terminal_safe(text), no_wrap=True, overflow="ellipsis"))
        host.console.print(table)
        host.console.print("[dim]/compact from <id> summarises everything before that message.[/]")
        return SlashOutcome.CONTINUE
    if sub == "artifacts":
        report = host.session_report()
        if report is None:
            host.console.print("[dim]No session yet: send a message first.[/]")
        else:
            host.console.print(render.render_artifacts(report, host.artifact_root()))
        return SlashOutcome.CONTINUE
    if sub == "explain":
        plan, explanation = host.last_plan()
        _print_meter(host)
        for line in render.setup_lines(host.window_usage()):  # the window's source, the tool-schema mode
            host.console.print(line)
        host.console.print(render.render_plan_explain(plan, explanation))
        return SlashOutcome.CONTINUE
    usage = host.window_usage()
    if usage is None:
        host.console.print("[dim]No context yet: send a message first.[/]")
        return SlashOutcome.CONTINUE
    if sub == "stats":
        host.console.print(render.render_context_stats(
            usage, host.session_report(), effective_limit=host.effective_limit(),
            counters=host.stats_counters()))
    else:
        said = (getattr(host, "session_id", None), usage.schemas)
        if said == getattr(host, "schemas_said", None):  # the plain grid says the tool line once, until it changes
            usage = replace(usage, schemas=None)         # (stats and explain always show it)
        else:
            with contextlib.suppress(AttributeError):
                host.schemas_said = said  # type: ignore[attr-defined]
        host.console.print(render.render_context_grid(usage, report=host.session_report()))
        for line in render.plan_lines(getattr(host, "work_plan", lambda: None)()):  # the engine's plan
            host.console.print(terminal_safe(line), markup=False)
    _print_mcp_trouble(host)
    _print_context_warnings(host)
    return SlashOutcome.CONTINUE


def _print_context_warnings(host: SlashHost) -> None:
    for warning in getattr(host, "context_warnings", lambda: [])():  # a refused @include, a cut rule file
        host.console.print(f"context: {terminal_safe(warning)}", markup=False, style="dim")


def _print_mcp_trouble(host: SlashHost) -> None:
    """One line per MCP server that is not serving tools (failed and why, untrusted, invalid)."""
    servers = getattr(host, "mcp_servers", lambda: None)()
    for status in (servers or ([], []))[0]:
        if status.state in ("failed", "untrusted", "invalid"):
            host.console.print(f"MCP server {terminal_safe(status.name)}: {status.state} — "
                               f"{terminal_safe(status.note)} (/mcp lists every server)", markup=False, style="dim")


def _memory_scope(words: list[str]) -> tuple[Scope | None, bool, list[str]]:
    """(scope, ``--obsolete`` given, the other words) — the flags of ``mtagent memory``."""
    scope: Scope | None = None
    obsolete = False
    rest: list[str] = []
    pending = iter(words)
    for word in pending:
        if word in ("--project", "--global", "--user", "--team"):
            scope = memory.parse_namespace(word[2:])
        elif word == "--namespace":
            scope = memory.parse_namespace(next(pending, ""))
        elif word.startswith("--namespace="):
            scope = memory.parse_namespace(word.split("=", 1)[1])
        elif word == "--obsolete":
            obsolete = True
        else:
            rest.append(word)
    return scope, obsolete, rest


def cmd_memory(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    words = command.words
    action = words[0].lower() if words else "list"
    scope, obsolete, args = _memory_scope(words[1:])
    if obsolete and action not in ("remove", "rm"):
        raise UsageError("--obsolete goes with remove: /memory remove --obsolete [--project] <number or text>")
    console = host.console
    from mtagent.config import load_settings
    from mtagent.session.local import local_home

    home = local_home(load_settings(host.cwd))  # the configured tenant's memory files
    if action == "list":
        for i, each in enumerate(["global", "project"] if scope is None else [scope]):
            if i:
                console.print()
            entries = memory.list_memories(each, host.cwd, home=home)
            where = memory.memory_path(each, host.cwd, home=home)
            console.print(f"[bold]{each} memory[/] [dim]({escape(str(where))})[/]")
            if not entries:
                console.print("  (none)")
            for e in entries:
                fact = escape(terminal_safe(e.text))
                text = f"[strike dim]{fact}[/] [dim](obsolete)[/]" if e.obsolete else fact
                console.print(f"  {e.number}. {text}", soft_wrap=True)
        return SlashOutcome.CONTINUE
    if action == "add":
        if not args:
            raise UsageError("usage: /memory add [--project] <fact>")
        chosen: Scope = scope or "global"
        result = memory.save_memory(" ".join(args), chosen, host.cwd, home=home)
        verb = "remembered" if result.added else ("no longer obsolete" if result.reactivated
                                                  else "already remembered")
        console.print(f"{verb} ({chosen}, #{result.entry.number}): {escape(terminal_safe(result.entry.text))}", soft_wrap=True)
        return SlashOutcome.CONTINUE
    if action in ("remove", "rm"):
        if not args:
            raise UsageError("usage: /memory remove [--obsolete] [--project] <number or text> "
                             "(numbers from /memory list)")
        chosen = scope or "global"
        if obsolete:
            entry = memory.mark_memory_obsolete(" ".join(args), chosen, host.cwd, home=home)
            console.print(f"marked obsolete ({chosen}): {escape(terminal_safe(entry.text))}", soft_wrap=True)
        else:
            entry = memory.remove_memory(" ".join(args), chosen, host.cwd, home=home)
            console.print(f"removed ({chosen}): {escape(terminal_safe(entry.text))}", soft_wrap=True)
        return SlashOutcome.CONTINUE
    hint = suggest(action, ["list", "add", "remove"])
    raise UsageError(f"unknown /memory action {action!r}" + (f"; did you mean {hint}?" if hint else "")
                     + " (use list, add or remove)")


def cmd_recall(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    from mtagent.cli.recall_cmd import print_recall

    print_recall(host.console, host.cwd, command.rest)
    return SlashOutcome.CONTINUE


def cmd_resume(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    words = command.words
    if len(words) > 1:
        raise UsageError("usage: /resume [session-id] (ids from /sessions)")
    resumed = host.resume(words[0] if words else None)
    host.console.print(f"resumed session {escape(resumed)}")
    return SlashOutcome.CONTINUE


def cmd_sessions(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    _no_args(command)
    rows = host.list_sessions()
    if not rows:
        host.console.print("[dim]No saved sessions for this project yet.[/]")
        return SlashOutcome.CONTINUE
    table = Table(title=f"Sessions of {escape(str(host.cwd))}", title_justify="left")
    table.add_column("")
    table.add_column("id", no_wrap=True)
    table.add_column("updated")
    table.add_column("messages", justify="right")
    table.add_column("compactions", justify="right")
    table.add_column("model")
    for row in rows:
        table.add_row("*" if row.current else "", row.session_id, row.updated, str(row.messages),
                      str(row.compactions), escape(row.model or "-"))
    host.console.print(table)
    host.console.print("[dim]/resume <id> switches to one; * is this session.[/]")
    return SlashOutcome.CONTINUE


def cmd_mcp(host: SlashHost, cmd: SlashCommand) -> SlashOutcome:
    """The session's MCP servers: source, trusted, state (and why), tools — ``mtagent mcp list``'s table."""
    from mtagent.cli.mcp_cmd import print_servers

    servers = getattr(host, "mcp_servers", lambda: None)()
    if servers is None:
        host.console.print("[dim]This session has no MCP client (it was given its own tools).[/]")
        return SlashOutcome.CONTINUE
    print_servers(host.console, *servers)
    return SlashOutcome.CONTINUE


def cmd_skill(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    """Load an Agent Skill's instructions and send them, with the rest of the line, as the next message."""
    name, _, request = command.rest.partition(" ")
    if not name:
        raise UsageError("usage: /skill NAME [what to do] (skills: `mtagent tools list`)")
    prepare = getattr(host, "prepare_skill", None)
    if prepare is None:
        raise UsageError("this session has no skills")
    prepare(name, request.strip())
    return SlashOutcome.SEND


COMMANDS: dict[str, CommandSpec] = {spec.name: spec for spec in (
    CommandSpec("compact", "/compact [instructions]",
                "Compact the conversation now (instructions steer the summary).", cmd_compact,
                ("Without instructions the session memory is used when it can be (no model call);",
                 "with instructions a full summary is written following them.",
                 "/compact from <message-id>: summarise up to that message, keep it and what follows.")),
    CommandSpec("context", "/context [stats|artifacts|explain|messages]",
                "Show the window as a grid by bucket, or its stats, artifacts, or last plan.", cmd_context,
                ("/context            grid of the window by bucket, with a legend",
                 "/context stats      tokens per bucket, threshold, tokens left, compaction history",
                 "/context artifacts  this session's persisted tool results (id, tool, size, path)",
                 "/context explain    the last context plan: selected, compressed, dropped and why",
                 "/context messages   the messages in the window, with the ids /compact from takes")),
    CommandSpec("memory", "/memory list|add|remove", "Long-term memory (--project for this project's; "
                "--user, --team or --namespace N for the others).",
                cmd_memory, ("/memory list [--project|--global|--user|--team]", "/memory add [--project] <fact>",
                             "/memory remove [--project] <number or text>",
                             "/memory remove --obsolete [--project] <number or text>   keep it struck through, unused")),
    CommandSpec("mcp", "/mcp", "This session's MCP servers: source, trusted, state, tools.", cmd_mcp),
    CommandSpec("recall", "/recall QUERY", "Search earlier sessions, saved tool results and memory of this project.",
                cmd_recall, ("/recall TypeError user.id   ranked hits with refs (what compaction removed, too)",
                             "/recall --ref <ref>         one recalled item in full")),
    CommandSpec("resume", "/resume [ID]", "Switch to a saved session (default: the latest other one).",
                cmd_resume),
    CommandSpec("sessions", "/sessions", "List this project's saved sessions.", cmd_sessions),
    CommandSpec("skill", "/skill NAME [request]", "Load a skill's instructions and send them with your request.",
                cmd_skill),
    CommandSpec("help", "/help [command]", "This list, or one command's details.", cmd_help),
    CommandSpec("exit", "/exit", "Leave (Ctrl-D does too). The session is saved as you go.", cmd_exit),
)}
COMMANDS["quit"] = CommandSpec("quit", "/quit", "Same as /exit.", cmd_exit)
