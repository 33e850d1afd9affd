"""The ``mtagent`` command: a typer app whose command groups live in sibling modules.

Every :class:`~mtagent.errors.MTAgentError` becomes one red line on stderr and its exit code;
no traceback reaches the user.

Startup matters (``mtagent --version`` should feel instant), so command modules load lazily: the
root knows each command's name and one-line help (:data:`LAZY_COMMANDS`) and imports its module
only when that command runs, is completed or asks for its own ``--help``. A test keeps those
one-liners equal to the modules' own help. ``module.register(app)`` still works for a command
that should load eagerly.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.exceptions import TyperException

from mtagent import __version__
from mtagent.cli import session_options as opts
from mtagent.errors import MTAgentError

# name → (module with ``register(app)``, the command's one-line help as its module declares it)
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "tokens": ("mtagent.cli.tokens_cmd", "Count tokens exactly (offline) in files or stdin, per encoding."),
    "demo": ("mtagent.cli.demo_cmd", "Run the agent on a real code base with a scripted policy in place of a "
             "model (no key needed)."),
    "run": ("mtagent.cli.run_cmd", "Run one task to the end and exit (0 done, 1 failed, 2 usage error, "
            "130 interrupted)."),
    "replay": ("mtagent.cli.replay_cmd", "Replay sessions open-loop: what each strategy would have sent at "
               "every model call."),
    "batch": ("mtagent.cli.batch_cmd", "Run the agent on every task of a JSONL file, in parallel, each in its "
              "own session (resumable)."),
    "eval": ("mtagent.cli.eval_cmd", "Evaluate context policies closed-loop: every task under every policy, "
             "with checks (resumable)."),
    "config": ("mtagent.cli.config_cmd", "Show the merged configuration and where it is read from."),
    "memory": ("mtagent.cli.memory_cmd", "List, add and remove long-term memories (global or per project)."),
    "sessions": ("mtagent.cli.sessions_cmd", "List, show and export this project's sessions."),
    "recall": ("mtagent.cli.recall_cmd", "Search this project's sessions, saved tool results and memory "
               "(what compaction removed)."),
    "audit": ("mtagent.cli.audit_cmd", "List the audit trail: approvals, denials, memory writes, compactions, "
              "exports (--json)."),
    "trust": ("mtagent.cli.trust_cmd", "Trust a project so its .mtagent/config.toml may set approvals, "
              "workspace roots, shell settings and the model endpoint, and its MCP servers and skills may "
              "run (shown whole and asked first)."),
    "mcp": ("mtagent.cli.mcp_cmd", "List, add, show and remove MCP servers: what a session here would start."),
    "tools": ("mtagent.cli.tools_cmd", "List the tools a session here would have (built-in, MCP, skills; loaded or deferred) and search them."),
    "ui": ("mtagent.cli.ui_cmd", "Open the explain UI: a local, read-only web app over every "
           "session's transcript."),
    "doctor": ("mtagent.cli.doctor_cmd", "Check this machine: which sandbox mode shell commands run in "
               "(bubblewrap), and why."),
}


def load_command(name: str) -> Any:
    """The real click command for a lazy entry: its module registers it on a scratch app."""
    module = importlib.import_module(LAZY_COMMANDS[name][0])
    scratch = typer.Typer(rich_markup_mode=None)  # plain help, like the root: flags without a "<bool>" value
    scratch.callback()(lambda: None)  # a callback keeps typer from collapsing a one-command app
    module.register(scratch)
    return typer.main.get_command(scratch).get_command(None, name)  # type: ignore[attr-defined, arg-type]


class LazyGroup(TyperGroup):
    """The root group: lists every lazy command, imports one only when it is really needed."""

    _describing = False

    def list_commands(self, ctx: Any) -> list[str]:
        eager = super().list_commands(ctx)
        return eager + [name for name in LAZY_COMMANDS if name not in eager]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in LAZY_COMMANDS:
            return command
        if self._describing:  # the root's --help needs only the name and the one-liner
            short = LAZY_COMMANDS[cmd_name][1]
            return TyperCommand(cmd_name, help=short, short_help=short)
        command = load_command(cmd_name)
        self.commands[cmd_name] = command
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._describing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._describing = False


app = typer.Typer(
    name="mtagent",
    cls=LazyGroup,
    help="A coding agent for very long sessions, and the context engine at its heart.",
    no_args_is_help=False,
    rich_markup_mode=None,  # plain help: `mtagent --help` then loads no rich (a third of its start-up)
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mtagent {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."),
    resume: str = opts.resume_option(),
    continue_: bool = opts.continue_option(),
    model: str = opts.model_option(),
    base_url: str = opts.base_url_option(),
    cwd: Path = opts.cwd_option(),
    approval: str = opts.approval_option(),
    window: int = opts.window_option(),
    ascii_: bool = typer.Option(False, "--ascii", help="Draw the context grid and tool marks in plain ASCII "
                                "(# used, . free, x buffer); automatic when the terminal is not UTF-8."),
) -> None:
    """Without a command: the interactive agent (in a terminal). `mtagent COMMAND --help` for a command."""
    if ascii_:
        from mtagent.cli.glyphs import use_ascii

        use_ascii()
    options = opts.SessionOptions(cwd=cwd, model=model, base_url=base_url, approval=approval,
                                  window=window, resume=resume, continue_=continue_)
    if opts.root_entry(ctx, options):
        from mtagent.cli.repl import launch

        raise typer.Exit(launch(options))


def _print_error(message: str) -> None:
    from mtagent.cli.output import print_error  # only on an error: `--help` loads no rich console

    print_error(message)


def main() -> None:
    """Run the app; every error a user can cause is one line on stderr with a meaningful exit code.

    Typer's own usage errors (a missing argument, a bad option value, an unknown command) would
    otherwise print a multi-line box, so the app runs without its standalone handling and they
    are printed here like any other error. A group called without a subcommand prints its help
    and exits 0: asking what a group does is not an error.
    """
    from mtagent.cli.ctrl_c import restore_ctrl_c

    restore_ctrl_c()
    try:
        code = app(standalone_mode=False)
    except TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            typer.echo(exc.format_message())
            sys.exit(0)
        where = getattr(getattr(exc, "ctx", None), "command_path", None) or "mtagent"
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        _print_error(f"{message} (see `{where} --help`)")
        sys.exit(int(getattr(exc, "exit_code", 2) or 2))
    except MTAgentError as exc:  # raised outside a command's own handling
        _print_error(str(exc))
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
