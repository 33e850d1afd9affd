"""The ``mtagent`` command: a typer app whose command groups live in sibling modules.

Every :class:`~mtagent.errors.MTAgentError` becomes one red line on stderr and its exit code;
no traceback reaches the user.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from typer.exceptions import TyperException

from mtagent import __version__
from mtagent.cli import config_cmd, tokens_cmd
from mtagent.cli import memory_cmd
from mtagent.cli import demo_cmd
from mtagent.cli import run_cmd
from mtagent.cli import sessions_cmd
from mtagent.cli import replay_cmd
from mtagent.cli.output import print_error
from mtagent.errors import MTAgentError

app = typer.Typer(
    name="mtagent",
    help="A coding agent for very long sessions, and the context engine at its heart.",
    no_args_is_help=False,
    add_completion=False,
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
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    resume: str = run_cmd.resume_option(),
    continue_: bool = run_cmd.continue_option(),
    model: str = run_cmd.model_option(),
    base_url: str = run_cmd.base_url_option(),
    cwd: Path = run_cmd.cwd_option(),
    approval: str = run_cmd.approval_option(),
    window: int = run_cmd.window_option(),
) -> None:
    """Without a command: the interactive agent (in a terminal). `mtagent COMMAND --help` for a command."""
    run_cmd.root_entry(ctx, run_cmd.SessionOptions(cwd=cwd, model=model, base_url=base_url, approval=approval,
                                                   window=window, resume=resume, continue_=continue_))


tokens_cmd.register(app)
config_cmd.register(app)
memory_cmd.register(app)
demo_cmd.register(app)
run_cmd.register(app)
sessions_cmd.register(app)
replay_cmd.register(app)


def main() -> None:
    """Run the app; every error a user can cause is one line on stderr with a meaningful exit code.

    Typer's own usage errors (a missing argument, a bad option value, an unknown command) would
    otherwise print a multi-line box, so the app runs without its standalone handling and they
    are printed here like any other error.
    """
    try:
        code = app(standalone_mode=False)
    except TyperException as exc:
        where = getattr(getattr(exc, "ctx", None), "command_path", None) or "mtagent"
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        print_error(f"{message} (see `{where} --help`)")
        sys.exit(int(getattr(exc, "exit_code", 2) or 2))
    except MTAgentError as exc:  # raised outside a command's own handling
        print_error(str(exc))
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
