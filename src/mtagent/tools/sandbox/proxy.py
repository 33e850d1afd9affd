"""The network of a sandboxed command: an HTTP proxy outside the sandbox that lets allowed hosts through.

Inside the sandbox there is no network but loopback. The runner listens on a loopback port there
and relays each connection to this proxy's unix socket (bound into the sandbox), and the command's
``HTTP_PROXY``/``HTTPS_PROXY`` point at that port — how Claude Code's sandbox runtime routes
traffic. The proxy understands ``CONNECT host:port`` (HTTPS, git, pip, npm) and absolute-form
plain HTTP requests. A host not in the allow list gets ``403`` with a sentence saying how to allow
it, and is recorded so the shell tool can add the same sentence to the command's result.

A name that resolves to a loopback or link-local address (the host's own services, a cloud
metadata endpoint) is refused unless the allow pattern names that address itself: an allowed name
must not become a way back into the machine (DNS rebinding).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

from mtagent.tools.sandbox.policy import host_allowed

_HEAD_MAX = 64 * 1024
_CONNECT_TIMEOUT_S = 10.0
_CHUNK = 64 * 1024


def denied_message(host: str) -> str:
    return (f"network to {host} is not allowed: add it to `sandbox.allow_hosts` in your config "
            f'(or run the command with needs: ["network:{host}"] to ask the user)')


def _split_target(target: str, default_port: int) -> tuple[str, int]:
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = target.rpartition(":") if target.count(":") == 1 else (target, "", "")
    return host.lower().rstrip("."), int(port) if port.isdigit() and 0 < int(port) < 65536 else default_port


def _literal(address: str) -> bool:
    try:
        ipaddress.ip_address(address.strip("[]"))
        return True
    except ValueError:
        return False


def _inward(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified


class NetworkProxy:
    """One command's proxy: a unix socket in a private folder, served by daemon threads until
    :meth:`close`. ``denied`` lists the hosts it refused, in order."""

    def __init__(self, allow_hosts: tuple[str, ...]) -> None:
        self.allow_hosts = allow_hosts
        self.denied: list[str] = []
        self.folder = Path(tempfile.mkdtemp(prefix="mtagent-proxy-"))
        self.socket_path = self.folder / "proxy.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.socket_path))
        os.chmod(self.socket_path, 0o600)
        self._listener.listen(64)
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="mtagent-sandbox-proxy", daemon=True).start()

    def __enter__(self) -> NetworkProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):
                    sock.close()
            self._open.clear()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            if self._closed:
                sock.close()
                raise OSError("proxy closed")
            self._open.add(sock)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            self._track(client)
            head = _read_head(client)
            if head is None:
                return
            request_line, rest = head
            method, target, host, port, forward = _parse_request(request_line, rest)
            if host is None:
                _refuse(client, 400, "Bad Request", "mtagent's sandbox proxy understands CONNECT and http:// URLs\n")
                return
            if not host_allowed(host, port, self.allow_hosts):
                self.denied.append(host)
                _refuse(client, 403, "Forbidden", denied_message(host) + "\n")
                return
            upstream = self._connect(host, port)
            if upstream is None:
                _refuse(client, 502, "Bad Gateway", f"mtagent's sandbox proxy could not reach {host}:{port}\n")
                return
            self._track(upstream)
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                upstream.sendall(forward)
            _relay(client, upstream)
        except (OSError, ValueError):
            pass
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    with self._lock:
                        self._open.discard(sock)
                    sock.close()

    def _connect(self, host: str, port: int) -> socket.socket | None:
        """A connection to an allowed host; a name that resolves inward is refused (module docstring)."""
        try:
            infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
        except OSError:
            return None
        for family, kind, proto, _, address in infos:
            if not _literal(host) and _inward(str(address[0])):
                continue
            sock = socket.socket(family, kind, proto)
            sock.settimeout(_CONNECT_TIMEOUT_S)
            try:
                sock.connect(address)
            except OSError:
                sock.close()
                continue
            sock.settimeout(None)
            return sock
        return None


def _read_head(client: socket.socket) -> tuple[bytes, bytes] | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(_CHUNK)
        if not chunk:
            return None
        data += chunk
        if len(data) > _HEAD_MAX:
            _refuse(client, 431, "Request Header Fields Too Large", "request head too large\n")
            return None
    line, _, rest = data.partition(b"\r\n")
    return line, rest


def _parse_request(line: bytes, rest: bytes) -> tuple[str, str, str | None, int, bytes]:
    """(method, target, host, port, bytes to send upstream) of a proxy request; host None when it is
    neither ``CONNECT host:port`` nor an ``http://`` URL."""
    parts = line.decode("latin-1").split()
    if len(parts) != 3:
        return "", "", None, 0, b""
    method, target, version = parts
    if method.upper() == "CONNECT":
        host, port = _split_target(target, 443)
        return "CONNECT", target, host or None, port, b""
    if not target.lower().startswith("http://"):
        return method, target, None, 0, b""
    authority, _, path = target[7:].partition("/")
    authority = authority.rpartition("@")[2]  # user:password@ is not a host
    host, port = _split_target(authority, 80)
    headers, _, body = rest.partition(b"\r\n\r\n")
    kept = [h for h in headers.split(b"\r\n") if h and not h.lower().startswith((b"proxy-", b"connection:"))]
    forward = (f"{method} /{path} {version}\r\n".encode("latin-1")
               + b"".join(h + b"\r\n" for h in kept) + b"Connection: close\r\n\r\n" + body)
    return method, target, host or None, port, forward


def _refuse(client: socket.socket, code: int, reason: str, body: str) -> None:
    payload = body.encode()
    with contextlib.suppress(OSError):
        client.sendall(f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                       f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload)


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(_CHUNK):
            dst.sendall(chunk)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _relay(a: socket.socket, b: socket.socket) -> None:
    other = threading.Thread(target=_pipe, args=(b, a), daemon=True)
    other.start()
    _pipe(a, b)
    other.join()
