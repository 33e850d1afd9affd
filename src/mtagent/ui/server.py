"""Serving the explain UI: bind, pick the access rule, print the address, open a browser.

On loopback no token is needed (the Host check in :mod:`mtagent.ui.security` keeps other sites
out); on any other address a fresh token is made and printed in the address, and every request
must carry it. :class:`BackgroundServer` runs the same app in a thread (tests, screenshots).
"""

from __future__ import annotations

import socket
import threading
import time
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mtagent.errors import UsageError
from mtagent.ui.app import UiOptions, create_app
from mtagent.ui.security import TOKEN_PARAM, is_loopback, new_token

STARTUP_TIMEOUT_SECONDS = 15.0


def access_rule(options: UiOptions, host: str) -> UiOptions:
    """``options`` with the token and loopback rule that ``host`` calls for."""
    if is_loopback(host):
        options.loopback_only, options.token = True, None
    else:
        options.loopback_only = False
        options.token = options.token or new_token()
    return options


def address(host: str, port: int, token: str | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = socket.gethostname()
    return f"http://{shown}:{port}/" + (f"?{TOKEN_PARAM}={token}" if token else "")


def _bound_port(server: Any) -> int:
    for s in getattr(server, "servers", []) or []:
        for sock in getattr(s, "sockets", []) or []:
            return int(sock.getsockname()[1])
    raise UsageError("the UI server did not bind a socket")


def _uvicorn_server(options: UiOptions, host: str, port: int) -> Any:
    import uvicorn

    config = uvicorn.Config(create_app(options), host=host, port=port, log_level="warning", access_log=False,
                            lifespan="off", server_header=False)
    return uvicorn.Server(config)


def serve(options: UiOptions, host: str, port: int, *, open_browser: bool,
          announce: Callable[[str], None] = print) -> None:
    """Run until interrupted; prints the address (with the token off loopback) once bound."""
    options = access_rule(options, host)
    server = _uvicorn_server(options, host, port)
    started = threading.Event()

    def watch() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if server.started:
            url = address(host, _bound_port(server), options.token)
            announce(f"mtagent ui: {url}  (read-only; Ctrl-C stops it)")
            if options.token:
                announce("bound off loopback: the address carries the access token; share it only with whom "
                         "may read these sessions")
            if open_browser:
                _open(url)
        started.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        server.run()
    except OSError as exc:
        raise UsageError(f"cannot serve on {host}:{port}: {exc.strerror or exc}; pick another --port") from exc
    if not server.started:
        raise UsageError(f"cannot serve on {host}:{port}; is the port in use? pick another --port")


def _open(url: str) -> None:
    try:
        webbrowser.open(url, new=2)
    except webbrowser.Error:
        pass


@dataclass(slots=True)
class BackgroundServer:
    """The UI in a daemon thread on a free loopback port (``with BackgroundServer(options) as url``)."""

    options: UiOptions
    host: str = "127.0.0.1"
    port: int = 0
    url: str = ""
    _server: Any = None
    _thread: threading.Thread | None = field(default=None, repr=False)

    def __enter__(self) -> str:
        self.options = access_rule(self.options, self.host)
        self._server = _uvicorn_server(self.options, self.host, self.port)
        self._server.install_signal_handlers = lambda: None  # uvicorn < 0.29 calls this from run()
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise UsageError(f"the UI server did not start on {self.host}")
            time.sleep(0.02)
        self.url = address(self.host, _bound_port(self._server), None).rstrip("/")
        return self.url

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
