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


def access_rule(options: UiOptions, host: str, require_token: bool = False) -> UiOptions:
    """``options`` with the token and loopback rule that ``host`` calls for (``require_token``: a
    token on loopback too, for a machine shared with other users)."""
    if is_loopback(host):
        options.loopback_only = True
        options.token = (options.token or new_token()) if require_token else None
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


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, or a one-line :class:`UsageError` saying what to change."""
    try:
        family, kind, proto, _, address_ = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise UsageError(f"cannot use --host {host}: {exc.strerror}; give an address of this machine") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address_)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot serve on {host}:{port}: {exc.strerror}; pick another --port") from None
    return sock


def serve(options: UiOptions, host: str, port: int, *, open_browser: bool, require_token: bool = False,
          announce: Callable[[str], None] = print) -> None:
    """Run until interrupted; prints the address (with the token off loopback) once bound."""
    options = access_rule(options, host, require_token)
    sock = bind(host, port)
    server = _uvicorn_server(options, host, sock.getsockname()[1])

    def watch() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if server.started:
            url = address(host, _bound_port(server), options.token)
            announce(f"mtagent ui: {url}  (read-only; Ctrl-C stops it)")
            if options.token:
                announce("the address carries the access token; share it only with whom may read these sessions")
            if open_browser:
                _open(url)

    threading.Thread(target=watch, daemon=True).start()
    with sock:
        server.run(sockets=[sock])


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
