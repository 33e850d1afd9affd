"""Commands in the sandbox (issue 37), with the real bubblewrap: secrets unreadable, writes outside the
workspace refused, no network but the allowed hosts through mtagent's proxy, the process tree still
killed. Each test fails on the code before the sandbox (commands ran with the user's full rights).

Servers are loopback only: the "allowed" one listens on 127.0.0.2, the "denied" one on 127.0.0.3
(inside the sandbox 127.0.0.1 is the sandbox's own loopback, reached directly).
"""

from __future__ import annotations

import http.server
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interrupts import wait_for

from mtagent.config import Settings
from mtagent.tools import sandbox
from mtagent.tools.sandbox import bwrap as bwrap_mod

from .conftest import Kit

REASON = sandbox.probe()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"sandbox cannot run here: {REASON}")
FAKE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nFAKEKEY" + "x" * 20 + "\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mtagent_home: Path) -> Path:
    """A throwaway HOME holding planted secrets (and a secret in the test's own MTAGENT_HOME)."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(FAKE_KEY)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = FAKEKEYaws\n")
    (home / ".netrc").write_text("machine example.com login me password FAKEKEYnetrc\n")
    (home / "notes-secret.txt").write_text("FAKEKEYnotes\n")
    (home / ".bash_history").write_text("export TOKEN=FAKEKEYhistory\n")
    (mtagent_home / "config.toml").write_text("# FAKEKEYmtagent\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def _kit(tmp_path: Path, settings: dict[str, Any] | None = None, name: str = "ws") -> Kit:
    root = tmp_path / name
    root.mkdir()
    return Kit(root, Settings.model_validate({"sandbox": {"mode": "on"}, **(settings or {})}))


def _run(kit: Kit, command: str, **args: Any) -> tuple[str, dict[str, Any]]:
    msg = kit.call("shell", command=command, **args)
    assert isinstance(msg.artifact, dict), msg.content
    return str(msg.content), msg.artifact


# ── secrets ──────────────────────────────────────────────────────────────────────────────────


def test_a_planted_key_in_home_is_unreadable(home: Path, tmp_path: Path) -> None:
    kit = _kit(tmp_path)
    (kit.root / "key-link").symlink_to(home / ".ssh" / "id_ed25519")
    out, meta = _run(kit, "cat ~/.ssh/id_ed25519; cat $HOME/.aws/credentials; cat ~/.netrc; cat key-link; "
                          "cat $MTAGENT_HOME/config.toml; cat ~/.bash_history; ls -a ~/.ssh; grep -r FAKEKEY ~ 2>/dev/null; "
                          "echo done")
    assert meta["sandboxed"] is True
    assert "FAKEKEY" not in out and "done" in out


def test_the_user_can_hide_more_and_a_workspace_that_is_home_still_hides_secrets(home: Path) -> None:
    kit = Kit(home, Settings.model_validate({"sandbox": {"mode": "on", "hide_paths": ["~/notes-secret.txt"]}}))
    out, meta = _run(kit, "cat notes-secret.txt; cat .ssh/id_ed25519; echo written > in-home.txt; echo done")
    assert "FAKEKEY" not in out and "done" in out and meta["sandboxed"]
    assert (home / "in-home.txt").read_text() == "written\n"  # the workspace stays writable
    assert FAKE_KEY == (home / ".ssh" / "id_ed25519").read_text()  # hidden, not touched


def test_the_environment_policy_is_the_shell_tools(home: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBOX_TEST_API_KEY", "FAKEKEYenv" + secrets.token_hex(8))
    monkeypatch.setenv("SANDBOX_TEST_PLAIN", "visible-value")
    out, _ = _run(_kit(tmp_path), "env")
    assert "FAKEKEYenv" not in out and "SANDBOX_TEST_PLAIN=visible-value" in out


# ── writes ───────────────────────────────────────────────────────────────────────────────────


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def _write_attempts(kit: Kit, outside: Path, home: Path, real_tmp: Path) -> str:
    (kit.root / "out-link").symlink_to(outside)
    return (f"echo x > ../escaped.txt; echo x > {home}/escaped.txt; echo x > ~/.bashrc; "
            f"echo x > {real_tmp}; echo x > out-link/escaped.txt; echo x > {outside}/direct.txt; "
            f"echo x > $MTAGENT_HOME/escaped.txt; "
            f"(setsid sh -c 'echo x > {outside}/grandchild.txt; echo x > ../gc.txt' &); sleep 0.3; "
            "echo inside > kept.txt; echo tmp > /tmp/private.txt; cat /tmp/private.txt")


def _nothing_escaped(kit: Kit, outside: Path, home: Path, real_tmp: Path) -> None:
    assert list(outside.iterdir()) == []
    assert not (kit.root.parent / "escaped.txt").exists() and not (kit.root.parent / "gc.txt").exists()
    assert not (home / "escaped.txt").exists() and not (home / ".bashrc").exists()
    assert not real_tmp.exists()
    assert not (Path(os.environ["MTAGENT_HOME"]) / "escaped.txt").exists()
    assert (kit.root / "kept.txt").read_text() == "inside\n"


def test_writes_outside_the_workspace_fail(home: Path, tmp_path: Path, outside: Path) -> None:
    kit = _kit(tmp_path)
    real_tmp = Path("/tmp") / f"mtagent-sandbox-test-{secrets.token_hex(6)}"
    out, meta = _run(kit, _write_attempts(kit, outside, home, real_tmp))
    assert meta["sandboxed"] and "tmp" in out  # /tmp inside is the private one, and it works
    _nothing_escaped(kit, outside, home, real_tmp)


def test_writes_fail_from_a_workspace_outside_tmp_too(home: Path, tmp_path: Path, outside: Path) -> None:
    """A workspace under /tmp has its parents made in the private /tmp; one elsewhere (/var/tmp
    here, a home folder usually) meets a read-only file system at ``..``."""
    base = Path("/var/tmp")
    if not os.access(base, os.W_OK):
        pytest.skip("/var/tmp is not writable here")
    parent = Path(tempfile_dir := os.path.join(base, f"mtagent-sbx-{secrets.token_hex(6)}"))
    parent.mkdir()
    try:
        root = parent / "ws"
        root.mkdir()
        kit = Kit(root, Settings.model_validate({"sandbox": {"mode": "on"}}))
        real_tmp = Path("/tmp") / f"mtagent-sandbox-test-{secrets.token_hex(6)}"
        out, _ = _run(kit, _write_attempts(kit, outside, home, real_tmp))
        assert "Read-only file system" in out
        _nothing_escaped(kit, outside, home, real_tmp)
    finally:
        shutil.rmtree(tempfile_dir, ignore_errors=True)


def test_git_hooks_and_the_project_config_stay_read_only(home: Path, tmp_path: Path) -> None:
    kit = _kit(tmp_path)
    (kit.root / ".git" / "hooks").mkdir(parents=True)
    (kit.root / ".mtagent").mkdir()
    (kit.root / ".mtagent" / "config.toml").write_text("")
    out, _ = _run(kit, "echo evil > .git/hooks/pre-commit; echo '[sandbox]' >> .mtagent/config.toml; "
                       "echo fine > .git/HEAD; echo done")
    assert not (kit.root / ".git" / "hooks" / "pre-commit").exists()
    assert (kit.root / ".mtagent" / "config.toml").read_text() == ""
    assert (kit.root / ".git" / "HEAD").read_text() == "fine\n" and "done" in out


# ── network ──────────────────────────────────────────────────────────────────────────────────


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = f"hello from {self.server.server_address[0]}".encode()  # type: ignore[index]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[dict[str, int]]:
    """HTTP servers on 127.0.0.1, 127.0.0.2 and 127.0.0.3, outside the sandbox: address → port."""
    started = {}
    for address in ("127.0.0.1", "127.0.0.2", "127.0.0.3"):
        server = http.server.ThreadingHTTPServer((address, 0), _Hello)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started[address] = server
    yield {a: s.server_address[1] for a, s in started.items()}
    for server in started.values():
        server.shutdown()
        server.server_close()


def _fetch(url: str) -> str:
    return (f"{sys.executable} -I -c \"import urllib.request,sys\n"
            f"try: print(urllib.request.urlopen('{url}', timeout=10).read().decode())\n"
            f"except Exception as e: print('FAILED', e); print(getattr(e, 'read', lambda: b'')().decode())\"")


def _direct(address: str, port: int) -> str:
    return (f"{sys.executable} -I -c \"import socket\n"
            f"try: socket.create_connection(('{address}', {port}), timeout=5); print('CONNECTED')\n"
            f"except OSError as e: print('REFUSED', e)\"")


def test_a_loopback_server_outside_is_unreachable_without_the_proxy(home: Path, tmp_path: Path,
                                                                      servers: dict[str, int]) -> None:
    kit = _kit(tmp_path, {"sandbox": {"mode": "on", "allow_hosts": ["127.0.0.2"]}})
    started = time.monotonic()
    out, _ = _run(kit, "; ".join(_direct(a, p) for a, p in servers.items()) + f"; {_fetch('http://127.0.0.1:%d/' % servers['127.0.0.1'])}")
    assert "CONNECTED" not in out and out.count("REFUSED") == 3
    assert "hello from" not in out
    assert time.monotonic() - started < 20  # fails fast, no hang


def test_an_allowed_host_is_reached_through_the_proxy_and_another_gets_the_message(
        home: Path, tmp_path: Path, servers: dict[str, int]) -> None:
    kit = _kit(tmp_path, {"sandbox": {"mode": "on", "allow_hosts": ["127.0.0.2"]}})
    out, meta = _run(kit, _fetch(f"http://127.0.0.2:{servers['127.0.0.2']}/") + "; "
                     + _fetch(f"http://127.0.0.3:{servers['127.0.0.3']}/"))
    assert "hello from 127.0.0.2" in out and "hello from 127.0.0.3" not in out
    message = "network to 127.0.0.3 is not allowed: add it to `sandbox.allow_hosts` in your config"
    assert message in out and meta["sandbox_denied_hosts"] == ["127.0.0.3"]


def test_connect_tunnels_reach_allowed_hosts_only(home: Path, tmp_path: Path, servers: dict[str, int]) -> None:
    kit = _kit(tmp_path, {"sandbox": {"mode": "on", "allow_hosts": ["127.0.0.2"]}})
    script = kit.root / "tunnel.py"
    script.write_text(
        "import os, socket, sys\n"
        "proxy = os.environ['HTTPS_PROXY'].rsplit(':', 1)\n"
        "for target in sys.argv[1:]:\n"
        "    s = socket.create_connection((proxy[0][7:], int(proxy[1])), timeout=10)\n"
        "    s.sendall(f'CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n'.encode())\n"
        "    head = s.recv(4096).decode()\n"
        "    print(target, head.split()[1])\n"
        "    if head.split()[1] == '200':\n"
        "        s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')\n"
        "        print(b''.join(iter(lambda: s.recv(4096), b'')).decode().split('\\r\\n\\r\\n')[-1])\n")
    out, _ = _run(kit, f"{sys.executable} -I tunnel.py 127.0.0.2:{servers['127.0.0.2']} "
                       f"127.0.0.3:{servers['127.0.0.3']}")
    assert f"127.0.0.2:{servers['127.0.0.2']} 200" in out and "hello from 127.0.0.2" in out
    assert f"127.0.0.3:{servers['127.0.0.3']} 403" in out and "hello from 127.0.0.3" not in out


def test_a_command_that_needs_the_network_gets_the_readable_message(home: Path, tmp_path: Path) -> None:
    kit = _kit(tmp_path)
    out, meta = _run(kit, _fetch("http://registry.example.invalid/simple/"))
    assert "network to registry.example.invalid is not allowed: add it to `sandbox.allow_hosts` in your config" in out
    assert meta["sandbox_denied_hosts"] == ["registry.example.invalid"]


def test_an_approved_network_need_opens_that_host_for_that_call_only(home: Path, tmp_path: Path,
                                                                   servers: dict[str, int]) -> None:
    kit = _kit(tmp_path)
    url = f"http://127.0.0.3:{servers['127.0.0.3']}/"
    out, meta = _run(kit, _fetch(url), needs=["network:127.0.0.3"])
    assert "hello from 127.0.0.3" in out and meta["needs"] == ["network:127.0.0.3"]
    out, _ = _run(kit, _fetch(url))
    assert "hello from 127.0.0.3" not in out and "not allowed" in out


def test_an_allowed_name_that_resolves_to_loopback_is_refused(home: Path, tmp_path: Path,
                                                              servers: dict[str, int]) -> None:
    """DNS rebinding: allowing a name must not reach the host's own services."""
    kit = _kit(tmp_path, {"sandbox": {"mode": "on", "allow_hosts": ["localhost"]}})
    out, _ = _run(kit, f"{sys.executable} -I -c \"import urllib.request as u\n"
                       f"h = u.ProxyHandler({{'http': __import__('os').environ['HTTP_PROXY']}})\n"
                       f"try: print(u.build_opener(h).open('http://localhost:{servers['127.0.0.1']}/', timeout=10).read())\n"
                       f"except Exception as e: print('FAILED', e)\"")
    assert "hello from" not in out and "FAILED" in out


# ── the process tree ─────────────────────────────────────────────────────────────────────────


def _running(token: str) -> list[int]:
    """Host pids whose command line carries ``token`` (pids inside the sandbox are its own)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if token.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    stat = Path(f"/proc/{name}/stat").read_text()
                    if stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                        found.append(int(name))
            except OSError:
                continue
    return found


def _tokens() -> tuple[str, str]:
    n = secrets.randbelow(10_000)
    return f"30.{n:04d}1", f"30.{n:04d}2"


def test_a_timeout_kills_children_and_setsid_grandchildren(home: Path, tmp_path: Path) -> None:
    kit = _kit(tmp_path)
    child, grandchild = _tokens()
    started = time.monotonic()
    out, meta = _run(kit, f"sleep {child} & setsid sleep {grandchild} & echo started; sleep 30", timeout=1)
    assert meta["timed_out"] and meta["sandboxed"] and time.monotonic() - started < 8
    wait_for(lambda: not _running(child) and not _running(grandchild), "the sandboxed tree to be gone", timeout=5)


def test_background_children_left_behind_are_killed_and_do_not_hold_the_call(home: Path, tmp_path: Path) -> None:
    kit = _kit(tmp_path)
    child, grandchild = _tokens()
    started = time.monotonic()
    out, _ = _run(kit, f"(setsid sleep {grandchild} > /dev/null 2>&1 &); sleep {child} > /dev/null 2>&1 & echo quick")
    assert out.startswith("quick") and time.monotonic() - started < 5
    wait_for(lambda: not _running(child) and not _running(grandchild), "the left-behind children to be gone", timeout=5)


def test_ctrl_c_kills_the_sandboxed_tree(home: Path, tmp_path: Path, sigint_delivered: None) -> None:
    kit = _kit(tmp_path)
    child, grandchild = _tokens()
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        kit.call("shell", command=f"setsid sleep {grandchild} & sleep {child} & sleep 30")
    timer.cancel()
    assert time.monotonic() - started < 10
    wait_for(lambda: not _running(child) and not _running(grandchild), "the tree to be gone after Ctrl-C", timeout=5)


# ── modes ────────────────────────────────────────────────────────────────────────────────────


def test_without_bubblewrap_one_line_says_so_and_commands_run_as_before(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bwrap_mod, "bwrap_path", lambda: None)
    monkeypatch.setattr(sandbox.runtime, "bwrap_path", lambda: None)
    monkeypatch.setattr(sandbox.runtime, "_noticed", set())
    kit = Kit(tmp_path, Settings())
    for _ in range(3):
        out, meta = _run(kit, "echo ran")
        assert out.startswith("ran") and meta["sandboxed"] is False
    err = capsys.readouterr().err
    assert err.count("sandbox: unavailable") == 1 and "bubblewrap (bwrap) is not installed" in err


def test_mode_on_refuses_a_command_it_cannot_sandbox(home: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.runtime, "bwrap_path", lambda: None)
    kit = _kit(tmp_path)
    msg = kit.call("shell", command="touch ran")
    assert "sandbox.mode is \"on\"" in str(msg.content) and not (kit.root / "ran").exists()


def test_a_bad_need_is_refused_before_anything_runs(home: Path, tmp_path: Path) -> None:
    kit = _kit(tmp_path)
    msg = kit.call("shell", command="touch ran", needs=["root"])
    assert "'network:HOST', 'write:PATH', 'unsandboxed'" in str(msg.content) and not (kit.root / "ran").exists()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to try bubblewrap as an unprivileged user")
def test_bubblewrap_works_as_a_normal_user_too() -> None:
    """CI runs as root; a user runs mtagent as themself (bwrap then needs user namespaces): the same
    command line, run as nobody, confines the same way."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="mtagent-sbx-nobody-", dir="/tmp"))
    try:
        ws, private, outside = base / "ws", base / "private", base / "outside"
        for folder in (base, ws, private, outside):
            folder.mkdir(exist_ok=True)
            folder.chmod(0o777)
        policy = sandbox.SandboxPolicy(writable=(ws,))
        argv = sandbox.bwrap_argv(policy, private, ["/bin/sh", "-c", f"echo in > {ws}/in; echo out > {outside}/out; "
                                                     "echo tmp > /tmp/t; id -u"], bwrap=shutil.which("bwrap") or "bwrap")
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", *argv],
                              capture_output=True, text=True, timeout=60, cwd="/")
        if done.returncode != 0 and "namespace" in done.stderr.lower():
            pytest.skip(f"as nobody: {done.stderr.strip()}")
        assert (ws / "in").read_text() == "in\n" and not (outside / "out").exists()
        assert (private / "t").read_text() == "tmp\n" and done.stdout.strip().endswith("65534")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_each_call_has_its_own_proxy_gone_when_the_call_ends(home: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Two calls never share a proxy: a host one call was granted is not open to the next."""
    made: list[sandbox.NetworkProxy] = []
    real = sandbox.runtime.NetworkProxy

    def recording(hosts: tuple[str, ...]) -> sandbox.NetworkProxy:
        made.append(real(hosts))
        return made[-1]

    monkeypatch.setattr(sandbox.runtime, "NetworkProxy", recording)
    kit = _kit(tmp_path)
    for _ in range(2):
        out, _ = _run(kit, "ls -la /run/mtagent/; echo $HTTP_PROXY")
        assert "proxy.sock" in out and "http://127.0.0.1:" in out
    assert len(made) == 2 and made[0].socket_path != made[1].socket_path
    assert not any(p.folder.exists() for p in made)


def test_a_socket_under_run_is_not_reachable(home: Path, tmp_path: Path) -> None:
    """``/run`` (docker, D-Bus, the user's agents) is an empty tmpfs in the sandbox."""
    if not Path("/run").is_dir() or not os.access("/run", os.W_OK):
        pytest.skip("/run is not writable here")
    path = Path("/run") / f"mtagent-test-{secrets.token_hex(4)}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    try:
        out, _ = _run(_kit(tmp_path), _direct_unix(str(path)))
        assert "REFUSED" in out and "CONNECTED" not in out
    finally:
        server.close()
        path.unlink()


def _direct_unix(path: str) -> str:
    return (f"{sys.executable} -I -c \"import socket\n"
            f"s = socket.socket(socket.AF_UNIX)\n"
            f"try: s.connect('{path}'); print('CONNECTED')\n"
            f"except OSError as e: print('REFUSED', e)\"")


def test_a_workspace_inside_a_hidden_folder_is_writable_and_the_rest_stays_hidden(home: Path) -> None:
    """An eval space or an MCP server's folder under $MTAGENT_HOME: the folder is bound, the home around it
    stays hidden and read-only."""
    mtagent_home = Path(os.environ["MTAGENT_HOME"])
    root = mtagent_home / "spaces" / "ws"
    root.mkdir(parents=True)
    kit = Kit(root, Settings.model_validate({"sandbox": {"mode": "on"}}))
    out, _ = _run(kit, f"echo in > mine.txt; cat {mtagent_home}/config.toml; echo x > {mtagent_home}/escaped.txt; "
                       f"echo y > ../sibling.txt; echo done")
    assert (root / "mine.txt").read_text() == "in\n" and "FAKEKEY" not in out and "done" in out
    assert not (mtagent_home / "escaped.txt").exists() and not (root.parent / "sibling.txt").exists()


def test_a_command_ignoring_the_proxy_fails_fast_and_is_told_how_to_get_network(home: Path, tmp_path: Path) -> None:
    kit = _kit(tmp_path)
    started = time.monotonic()
    out, meta = _run(kit, f"{sys.executable} -I -c \"import socket; socket.create_connection(('pypi.org', 443), timeout=5)\"")
    assert time.monotonic() - started < 15 and meta["exit_code"] != 0
    assert "[sandbox: this command has no network of its own" in out and "sandbox.allow_hosts" in out


def test_an_approved_write_need_opens_that_folder_for_that_call_only(home: Path, tmp_path: Path, outside: Path) -> None:
    kit = _kit(tmp_path)
    out, _ = _run(kit, f"echo granted > {outside}/a.txt", needs=[f"write:{outside}"])
    assert (outside / "a.txt").read_text() == "granted\n", out
    _run(kit, f"echo again > {outside}/b.txt")
    assert not (outside / "b.txt").exists()


def test_the_interpreter_is_bound_as_folders_so_a_checkout_under_tmp_still_starts() -> None:
    """bubblewrap cannot bind a file whose parent folders the private /tmp lacks: a clone and its
    virtualenv under /tmp (as CI may make them) made every sandbox fail to start."""
    import sys

    from mtagent.tools.sandbox.bwrap import _interpreter_paths

    paths = _interpreter_paths()
    assert paths and all(p.is_dir() for p in paths)
    assert Path(sys.prefix) in paths and any((p / "tools" / "shell_runner.py").is_file() for p in paths)
