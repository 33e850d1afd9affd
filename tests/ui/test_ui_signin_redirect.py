"""The sign-in redirect (``?token=…`` → 303 to the same page without it) stays on this server (#33):
a path of ``//evil.example/`` or ``/\\evil.example/`` was sent back as the ``Location`` — a browser
reads both as another host, so a link to the UI carrying the token signed the user in and sent them
to the attacker's page."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import pytest

from mtagent.ui.security import Guard

TOKEN = "t" * 32


async def _app(scope: Any, receive: Any, send: Any) -> None:  # pragma: no cover - never reached here
    raise AssertionError("the guard answers a sign-in itself")


def _location(path: str, query: str = "") -> str:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "headers": [(b"host", b"10.0.0.2:8765")],
             "query_string": (f"token={TOKEN}" + (f"&{query}" if query else "")).encode()}
    asyncio.run(Guard(_app, TOKEN, loopback_only=False)(scope, receive, send))
    start = sent[0]
    assert start["status"] == 303
    return dict(start["headers"])[b"location"].decode("latin-1")


@pytest.mark.parametrize("path", ["//evil.example/", "/\\evil.example/", "///evil.example", "/\\/evil.example",
                                  "/\t/evil.example", "//evil.example/%2e%2e", "/%5Cevil.example",
                                  "/x\r\nset-cookie: a=b", "\\\\evil.example"])
def test_the_sign_in_redirect_never_leaves_this_server(path: str) -> None:
    location = _location(path)
    parts = urlsplit(location)
    assert not parts.scheme and not parts.netloc, location
    assert location.startswith("/") and location[1:2] not in ("/", "\\"), location
    assert not any(c in location for c in "\r\n\t\\"), location


def test_an_ordinary_page_keeps_its_path_and_query() -> None:
    assert _location("/sessions/abc/calls/3", "q=demo") == "/sessions/abc/calls/3?q=demo"
    assert _location("/") == "/"
