"""Slash commands of the REPL: parsing, dispatch, and each command's output.

Everything here runs without a terminal. A command talks to the running session only through
:class:`SlashHost` — the REPL implements it over the agent session, tests with a small fake —
and prints to the host's rich console. A command's failure is one line (``error: …``) and the
REPL goes on; an unknown command gets a "did you mean" suggestion.
"""

from __future__ import annotations

import difflib
import logging

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mtagent.cli.slash_context import cmd_context, print_meter
from mtagent.cli.slash_host import CommandSpec, CompactOutcome, SlashCommand, SlashHost, SlashOutcome
from mtagent.context.static import memory
from mtagent.context.static.memory import Scope
from mtagent.errors import MTAgentError, UsageError
from mtagent.terminal_text import terminal_safe


log = logging.getLogger(__name__)


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


def cmd_compact(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    words = command.rest.split()
    if words and words[0] == "from":
        if len(words) != 2:
            raise UsageError("usage: /compact from <message-id> (ids are in `mtagent sessions show`)")
        _print_compaction(host.console, host.compact(None, words[1]))
        return SlashOutcome.CONTINUE
    _print_compaction(host.console, host.compact(command.rest or None))
    print_meter(host)
    return SlashOutcome.CONTINUE


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
    from mtagent.cli.memory_cmd import memory_home, print_removed, print_saved, print_scopes

    if action == "list":
        print_scopes(host.console, ["global", "project"] if scope is None else [scope], host.cwd)
        return SlashOutcome.CONTINUE
    home = memory_home(host.cwd)  # the configured tenant's memory files
    if action == "add":
        if not args:
            raise UsageError("usage: /memory add [--project] <fact>")
        chosen: Scope = scope or "global"
        print_saved(host.console, chosen, memory.save_memory(" ".join(args), chosen, host.cwd, home=home))
        return SlashOutcome.CONTINUE
    if action in ("remove", "rm"):
        if not args:
            raise UsageError("usage: /memory remove [--obsolete] [--project] <number or text> "
                             "(numbers from /memory list)")
        chosen = scope or "global"
        forget = memory.mark_memory_obsolete if obsolete else memory.remove_memory
        print_removed(host.console, chosen, forget(" ".join(args), chosen, host.cwd, home=home), obsolete)
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

    servers = host.mcp_servers()
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
    host.prepare_skill(name, request.strip())
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
