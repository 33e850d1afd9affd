"""``mtagent ui``: the explain UI — sessions, model calls and context plans in the browser.

The web stack (Starlette, uvicorn, Jinja2) is the optional ``[ui]`` extra, imported only when
the command runs; without it the command says in one line how to install it.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from mtagent.cli.output import user_errors
from mtagent.config import load_settings
from mtagent.errors import MTAgentError, UsageError

UI_MODULES = ("starlette", "uvicorn", "jinja2")
INSTALL_HINT = "mtagent ui needs the ui extra: pip install 'mtagent[ui]' (Starlette, uvicorn, Jinja2)"


def missing_ui_modules() -> list[str]:
    return [name for name in UI_MODULES if importlib.util.find_spec(name) is None]


def ui(
    port: int = typer.Option(None, "--port", "-p", show_default=False,
                             help="Port to serve on (default: the ui.port setting, 8765; 0 picks a free one)."),
    host: str = typer.Option(None, "--host", show_default=False,
                             help="Address to bind (default 127.0.0.1). Any other needs the token printed at start."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser."),
    token: bool = typer.Option(False, "--token", help="Require the printed access token on loopback too "
                               "(a machine shared with other users); always required off loopback."),
    cwd: Path = typer.Option(None, "--cwd", help="Project whose sessions are listed first (default: here)."),
    replay_dir: list[Path] = typer.Option([], "--replay-dir",
                                          help="Folder (or file) of recorded trajectories to offer on the replay page; repeat."),
) -> None:
    """Open the explain UI: a local, read-only web app over every session's transcript."""
    run_ui(port, host, no_browser, cwd, replay_dir, token)


@user_errors
def run_ui(port: int | None, host: str | None, no_browser: bool, cwd: Path | None, replay_dirs: list[Path],
           token: bool = False) -> None:
    if missing_ui_modules():
        raise MTAgentError(INSTALL_HINT)
    root = (cwd or Path.cwd()).expanduser().resolve()
    settings = load_settings(root)
    for folder in replay_dirs:
        if not folder.exists():
            raise UsageError(f"--replay-dir {folder} does not exist")
    port = settings.ui.port if port is None else port
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a port number (0-65535)")
    from mtagent.ui.app import UiOptions
    from mtagent.ui.server import serve

    options = UiOptions(cwd=root, replay_dirs=[p.expanduser().resolve() for p in replay_dirs], settings=settings)
    with _shared_sessions(settings, options):
        serve(options, host or settings.ui.host, port, open_browser=not no_browser, require_token=token,
              announce=lambda line: typer.echo(line))


@contextlib.contextmanager
def _shared_sessions(settings: Any, options: Any) -> Iterator[None]:
    """The UI reads the tenant's sessions from the store's home in the files layout (a shared store's
    is a local mirror, refreshed per listing)."""
    from mtagent.session.store import open_store

    with contextlib.closing(open_store(settings)) as store:
        options.home = store.tenant_folder()
        options.refresh = store.tenant_folder
        yield


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)
