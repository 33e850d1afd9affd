"""The UI's guard: read-only methods, the access token off loopback, and strict response headers.

* Bound to loopback (the default) the app answers only requests whose ``Host`` is a loopback
  name, so a web page the user visits cannot reach it through DNS rebinding.
* Bound to any other address it requires the token printed at start: ``?token=…`` once (it is
  then kept in an HttpOnly, SameSite=Strict cookie and dropped from the URL), the cookie, or an
  ``Authorization: Bearer`` header. Tokens are compared in constant time.
* Every response forbids inline scripts and styles, framing, sniffing and referrers; together
  with escaping in the templates, a transcript's ``<script>`` stays text.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

TOKEN_COOKIE = "mtagent_ui_token"
TOKEN_PARAM = "token"
TOKEN_BYTES = 24
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def _host_name(value: str) -> str:
    """``127.0.0.1:8765`` → ``127.0.0.1``; ``[::1]:8765`` → ``::1``."""
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def same_site_path(path: str) -> str:
    """``path`` as a ``Location`` that stays on this server: one leading ``/`` (a browser reads
    ``//evil.example/`` and ``/\\evil.example/`` as another host), backslashes, control characters
    and anything else outside a URL path percent-encoded (so no header can be forged either)."""
    quoted = quote(path, safe="/:@!$&'()*+,;=-._~")
    return "/" + quoted.lstrip("/")


@dataclass(slots=True)
class Guard:
    """ASGI middleware enforcing the rules in the module docstring."""

    app: ASGIApp
    token: str | None
    loopback_only: bool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 405, "the explain UI is read-only", [(b"allow", b"GET, HEAD")])
            return
        if self.loopback_only and not is_loopback(_host_name(headers.get("host", ""))):
            await _plain(send, 403, "this UI answers only on a loopback address (127.0.0.1 or localhost)")
            return
        if self.token is not None:
            query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
            given = dict(query).get(TOKEN_PARAM)
            if given is not None and hmac.compare_digest(given.encode(), self.token.encode()):
                rest = urlencode([(k, v) for k, v in query if k != TOKEN_PARAM])
                location = same_site_path(scope.get("path", "/")) + (f"?{rest}" if rest else "")
                cookie = f"{TOKEN_COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                await _plain(send, 303, "signed in", [(b"location", location.encode()), (b"set-cookie", cookie.encode())])
                return
            if not self._authorized(headers):
                await _plain(send, 401, "open the address printed by `mtagent ui` (it carries the access token)")
                return

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _authorized(self, headers: dict[str, str]) -> bool:
        assert self.token is not None
        expected = self.token.encode()
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and hmac.compare_digest(auth[7:].strip().encode(), expected):
            return True
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed cookie header is simply not a token
            return False
        morsel = cookie.get(TOKEN_COOKIE)
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), expected)


async def _plain(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = f"{text}\n".encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
               *SECURITY_HEADERS, *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
