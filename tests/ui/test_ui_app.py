"""The UI's HTTP behaviour without a browser: read-only, loopback, token, confinement, redaction."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from .conftest import CHILD_ID, HOSTILE_ID, HOSTILE_PROJECT, SECRET, DemoSession, ui_options
from starlette.testclient import TestClient

from mtagent.errors import ArtifactPathError, SessionNotFound, UsageError
from mtagent.session.artifacts import ArtifactStore
from mtagent.ui import artifacts as art
from mtagent.ui.app import create_app
from mtagent.ui.catalog import Catalog
from mtagent.ui.records import Redactor
from mtagent.ui.replay_page import resolve_source
from mtagent.ui.security import TOKEN_COOKIE
from mtagent.ui.server import access_rule, address

LOCAL = "http://127.0.0.1"


def client(demo: DemoSession, base: str = LOCAL, **extra: object) -> TestClient:
    return TestClient(create_app(ui_options(demo, **extra)), base_url=base, follow_redirects=False)


def test_only_get_is_served(demo_session: DemoSession) -> None:
    c = client(demo_session)
    assert c.get("/").status_code == 200
    for method in ("post", "put", "delete", "patch"):
        assert getattr(c, method)("/").status_code == 405


def test_loopback_binding_refuses_other_host_names(demo_session: DemoSession) -> None:
    assert client(demo_session, "http://attacker.example").get("/").status_code == 403
    assert client(demo_session, "http://localhost:8765").get("/").status_code == 200
    assert client(demo_session, "http://[::1]:8765").get("/").status_code == 200


def test_off_loopback_every_request_needs_the_token(demo_session: DemoSession) -> None:
    options = access_rule(ui_options(demo_session), "0.0.0.0")
    assert options.token and not options.loopback_only
    assert f"?token={options.token}" in address("0.0.0.0", 8765, options.token)
    c = TestClient(create_app(options), base_url="http://10.1.2.3:8765", follow_redirects=False)
    assert c.get("/").status_code == 401
    assert c.get("/?token=wrong").status_code == 401
    signed = c.get(f"/?q=demo&token={options.token}")
    assert signed.status_code == 303 and signed.headers["location"] == "/?q=demo"
    assert "HttpOnly" in signed.headers["set-cookie"] and "SameSite=Strict" in signed.headers["set-cookie"]
    fresh = TestClient(create_app(options), base_url="http://10.1.2.3:8765", follow_redirects=False)
    assert fresh.get("/", headers={"Authorization": f"Bearer {options.token}"}).status_code == 200
    fresh.cookies.set(TOKEN_COOKIE, "nope")
    assert fresh.get("/").status_code == 401
    fresh.cookies.set(TOKEN_COOKIE, options.token)
    assert fresh.get("/").status_code == 200
    assert access_rule(ui_options(demo_session), "127.0.0.1").token is None
    shared = access_rule(ui_options(demo_session), "127.0.0.1", require_token=True)
    assert shared.token and shared.loopback_only


def test_responses_forbid_inline_script_and_framing(demo_session: DemoSession) -> None:
    r = client(demo_session).get("/")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert "unsafe-inline" not in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("path", ["../../../../etc/passwd", "/etc/passwd", "tool-results/../../x", "",
                                  "tool-results/missing.txt"])
def test_artifact_paths_outside_the_session_are_refused(demo_session: DemoSession, path: str) -> None:
    c = client(demo_session)
    base = f"/p/{HOSTILE_PROJECT}/s/{HOSTILE_ID}"
    for view in ("artifact", "raw"):
        r = c.get(f"{base}/{view}", params={"path": path})
        assert r.status_code == 404 and "root:" not in r.text


def test_a_symlink_out_of_the_artifact_folder_is_refused(demo_session: DemoSession, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("private\n")
    link = demo_session.home / "history" / HOSTILE_PROJECT / "artifacts" / HOSTILE_ID / "tool-results" / "link.txt"
    link.symlink_to(outside)
    try:
        r = client(demo_session).get(f"/p/{HOSTILE_PROJECT}/s/{HOSTILE_ID}/raw", params={"path": "tool-results/link.txt"})
        assert r.status_code == 404 and "private" not in r.text
    finally:
        link.unlink()


@pytest.mark.parametrize("url", ["/p/../s/x", "/p/%2e%2e/s/x", f"/p/{HOSTILE_PROJECT}/s/..",
                                 f"/p/{HOSTILE_PROJECT}/s/..~x", f"/p/{HOSTILE_PROJECT}/s/a%2Fb",
                                 f"/p/{HOSTILE_PROJECT}/s/{HOSTILE_ID}/call/99"])
def test_bad_session_addresses_are_errors_not_files(demo_session: DemoSession, url: str) -> None:
    assert client(demo_session).get(url).status_code in (400, 404)


def test_subagent_transcripts_are_addressed_under_their_parent(demo_session: DemoSession) -> None:
    catalog = Catalog(demo_session.home)
    entry = catalog.find(HOSTILE_PROJECT, HOSTILE_ID)
    assert [c.session_id for c in entry.children] == [CHILD_ID]
    assert client(demo_session).get(f"/p/{HOSTILE_PROJECT}/s/{HOSTILE_ID}~{CHILD_ID}").status_code == 200
    with pytest.raises(SessionNotFound):
        catalog.transcript_path(HOSTILE_PROJECT, f"{HOSTILE_ID}~nochild")
    with pytest.raises(UsageError):
        catalog.transcript_path("..", HOSTILE_ID)


def test_session_figures_and_status(demo_session: DemoSession) -> None:
    catalog = Catalog(demo_session.home)
    entry = catalog.find(HOSTILE_PROJECT, HOSTILE_ID)
    assert (entry.stats.turns, entry.stats.calls, entry.stats.artifacts) == (1, 1, 1)
    assert entry.stats.cost == 1000 + 20 * 5 and entry.status == "ended"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    lock = entry.path.with_suffix(".lock")
    try:
        lock.write_text(f"{sleeper.pid}\n")
        assert catalog.find(HOSTILE_PROJECT, HOSTILE_ID).status == f"running (pid {sleeper.pid})"
    finally:
        sleeper.kill()
        sleeper.wait()
        lock.unlink()


def test_raw_artifacts_stream_whole_and_redacted(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    text = "".join(f"line {i} {SECRET if i % 7 == 0 else ''}\n" for i in range(5000))
    store.write_text("tool-results/big.txt", text)
    chunks = list(art.stream_artifact(store, "tool-results/big.txt", Redactor((SECRET,)), chunk_bytes=4096))
    assert len(chunks) > 10
    joined = b"".join(chunks).decode()
    assert joined == text.replace(SECRET, "[redacted]")
    with pytest.raises(ArtifactPathError):
        art.stream_artifact(store, "../x", Redactor(()), 4096)


def test_line_ranges_and_search_are_bounded(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    store.write_text("tool-results/a.txt", "".join(f"row {i}\n" for i in range(1, 101)) + "x" * 50 + "\n")
    page = art.read_lines(store, "tool-results/a.txt", 95, 10, Redactor(()), max_chars=20)
    assert (page.start, page.end, page.total) == (95, 101, 101)
    assert page.lines[-1] == (101, "x" * 20, True)
    found = art.search(store, ["tool-results/a.txt", "../escape"], "ROW 1", Redactor(()), max_hits=5, max_chars=100)
    assert [h.line for h in found.hits] == [1, 10, 11, 12, 13] and found.capped
    assert art.search(store, ["tool-results/a.txt"], SECRET, Redactor((SECRET,)), max_hits=5, max_chars=9).hits == []


def test_replay_sources_are_only_the_offered_files(demo_session: DemoSession, tmp_path: Path) -> None:
    catalog = Catalog(demo_session.home)
    (tmp_path / "t.jsonl").write_text("{}\n")
    roots = [tmp_path]
    assert resolve_source(catalog, roots, "dir:0:t.jsonl").path == (tmp_path / "t.jsonl").resolve()
    for ref in ("dir:0:../../etc/passwd", "dir:1:t.jsonl", "dir:x:t.jsonl", "file:/etc/passwd", "dir:0:/etc/passwd"):
        with pytest.raises(UsageError):
            resolve_source(catalog, roots, ref)
    r = client(demo_session).get("/replay", params={"source": "dir:0:../../etc/passwd"})
    assert r.status_code == 400


def test_ui_command_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from mtagent.cli import ui_cmd
    from mtagent.cli.app import app

    monkeypatch.setattr(ui_cmd, "missing_ui_modules", lambda: ["starlette"])
    result = CliRunner().invoke(app, ["ui", "--no-browser"])
    assert result.exit_code == 1
    assert "pip install 'mtagent[ui]'" in result.output and len(result.output.strip().splitlines()) == 1


def test_ui_command_serves_and_prints_its_address(demo_session: DemoSession, tmp_path: Path) -> None:
    import httpx

    proc, line = _start(demo_session, tmp_path)
    try:
        assert line.startswith("mtagent ui: http://127.0.0.1:"), line + (proc.stderr.read() if proc.poll() else "")
        url = line.split()[2]
        deadline = time.monotonic() + 10
        while True:
            try:
                r = httpx.get(url, timeout=5)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert r.status_code == 200 and demo_session.session_id in r.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_file_the_replay_cannot_read_is_an_error_page(demo_session: DemoSession, tmp_path: Path) -> None:
    (tmp_path / "broken.jsonl").write_text('{"type": "user", "message": <script>}\n')
    c = client(demo_session, replay_dirs=[tmp_path])
    r = c.get("/replay", params={"source": "dir:0:broken.jsonl", "strategy": "mtagent", "window": "4096"})
    assert r.status_code == 400 and "broken.jsonl" in r.text and "<script>" not in r.text


def test_project_memory_is_shown_escaped_redacted_and_confined(demo_session: DemoSession, tmp_path: Path) -> None:
    folder = demo_session.home / "projects" / HOSTILE_PROJECT / "memory"
    (folder / "team").mkdir(parents=True, exist_ok=True)
    (folder / "MEMORY.md").write_text(f"- run <b>uv</b> with key {SECRET}\n")
    (folder / "team" / "MEMORY.md").write_text("- team fact\n")
    (tmp_path / "outside.md").write_text("private note\n")
    (folder / "linked.md").symlink_to(tmp_path / "outside.md")
    try:
        text = client(demo_session).get(f"/p/{HOSTILE_PROJECT}/s/{HOSTILE_ID}/memory").text
        assert "run &lt;b&gt;uv&lt;/b&gt; with key [redacted]" in text and SECRET not in text
        assert "team fact" in text and "private note" not in text
    finally:
        (folder / "linked.md").unlink()


def test_a_huge_message_is_cut_on_the_call_page(demo_session: DemoSession, tmp_path: Path) -> None:
    from mtagent.config import Settings

    settings = Settings.model_validate({"ui": {"message_max_chars": 1000}})
    text = client(demo_session, settings=settings).get(f"/p/{demo_session.project}/s/{demo_session.session_id}/call/5").text
    assert "more characters" in text
    blocks = [html.unescape(b) for b in re.findall(r'<pre class="text">(.*?)</pre>', text, re.S)]
    assert blocks and max(len(b) for b in blocks) == 1000


def _start(demo: DemoSession, cwd: Path, *args: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "MTAGENT_HOME": str(demo.home)}
    proc = subprocess.Popen([sys.executable, "-m", "mtagent", "ui", "--port", "0", "--no-browser", *args],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    return proc, line


def test_ui_command_with_token_prints_it_and_requires_it(demo_session: DemoSession, tmp_path: Path) -> None:
    """The token path the CLI takes off loopback, exercised on loopback with --token (tests stay local)."""
    import httpx

    proc, line = _start(demo_session, tmp_path, "--token")
    try:
        assert "?token=" in line, line
        port = line.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
        token = line.split("?token=", 1)[1].split()[0]
        base = f"http://127.0.0.1:{port}/"
        assert httpx.get(base, timeout=10).status_code == 401
        with httpx.Client(follow_redirects=True, timeout=10) as c:
            r = c.get(base, params={"token": token})
            assert r.status_code == 200 and demo_session.session_id in r.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_ui_command_on_a_busy_port_is_one_line(tmp_path: Path, demo_session: DemoSession) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**os.environ, "MTAGENT_HOME": str(demo_session.home)}
        r = subprocess.run([sys.executable, "-m", "mtagent", "ui", "--port", str(port), "--no-browser"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "pick another --port" in r.stderr
