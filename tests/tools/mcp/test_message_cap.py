"""MCP messages are capped and read in linear time and bounded memory (#33): a 50 MB result took
minutes (the SDK rebuilt the line from 64 KiB pieces) and peaked at 836 MB; a message past the cap
is dropped as it is read and the call gets an error naming the cap."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tools.mcp.mcp_helpers import call, fixture_server, mcp_settings, tools_of

from mtagent.tools import sandbox
from mtagent.tools.mcp import McpManager
from mtagent.tools.mcp import transport
from mtagent.tools.mcp.transport import MESSAGE_TOO_BIG, LineReader

REPO = Path(__file__).resolve().parents[3]


def _response(msg_id: int, text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {"content": [{"type": "text", "text": text}]}}).encode()


def test_lines_split_across_chunks_and_a_line_over_the_cap_is_an_error_for_its_request() -> None:
    reader = LineReader(cap=300)
    stream = _response(1, "a" * 50) + b"\n" + _response(2, "b" * 1000) + b"\n" + _response(3, "c") + b"\n"
    out = []
    for i in range(0, len(stream), 7):  # chunks that cut lines anywhere
        out += reader.feed(stream[i:i + 7])
    assert len(out) == 3
    first, big, last = (m.message for m in out)  # type: ignore[union-attr]
    assert first.result["content"][0]["text"] == "a" * 50 and last.id == 3
    assert big.id == 2 and big.error.code == MESSAGE_TOO_BIG and "over the cap" in big.error.message
    assert reader.line == bytearray() and reader.size == 0
    notification = LineReader(cap=10).feed(b'{"jsonrpc": "2.0", "method": "x/y", "params": {"p": "long"}}\n')
    assert len(notification) == 1 and isinstance(notification[0], ValueError)


@pytest.mark.parametrize("sandboxed", [False, pytest.param(True, marks=pytest.mark.skipif(
    sandbox.probe() is not None, reason=f"sandbox cannot run here: {sandbox.probe()}"))])
def test_a_result_over_the_cap_is_an_error_the_model_reads_and_the_server_stays_usable(
        project: Path, monkeypatch, sandboxed: bool) -> None:
    monkeypatch.setattr(transport, "MAX_MESSAGE_BYTES", 200_000)
    settings = mcp_settings({"fx": fixture_server()})
    settings = settings.model_copy(update={"sandbox": settings.sandbox.model_copy(update={"mcp_servers": sandboxed})})
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        big = call(tools["mcp__fx__big"], size=1_000_000)
        assert big.status == "error" and "over the cap" in big.content
        assert call(tools["mcp__fx__echo"], text="still up").content == "still up"
        assert len(call(tools["mcp__fx__big"], size=50_000).content) == 50_000


MEASURE = textwrap.dedent("""
    import json, resource, sys, time
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from tools.mcp.mcp_helpers import call, fixture_server, mcp_settings, tools_of
    from mtagent.tools.mcp import McpManager
    size = int(sys.argv[3])
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}, call_timeout_seconds=600), Path(sys.argv[2])) as m:
        tools = tools_of(m)
        call(tools["mcp__fx__echo"], text="warm")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.monotonic()
        out = call(tools["mcp__fx__big"], size=size)
        seconds = time.monotonic() - started
        ok = out.status != "error" and len(out.content) == size
    print(json.dumps({"ok": ok, "before_mb": before / 1024, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "seconds": seconds}))
""")


def test_a_20_mb_result_arrives_whole_in_bounded_memory_measured_in_a_subprocess(project: Path, tmp_path: Path) -> None:
    """Measured in a fresh process (its own peak RSS): the result's text comes twice in the message
    (content and structuredContent), so 20 MB of text is a 40 MB line; the old transport held the
    line several times over (16x the text at 50 MB), this one about 6x."""
    size = 20_000_000
    script = tmp_path / "measure.py"
    script.write_text(MEASURE)
    done = subprocess.run([sys.executable, str(script), str(REPO / "tests"), str(project), str(size)],
                          capture_output=True, text=True, timeout=900, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["ok"], figures
    grown = figures["peak_mb"] - figures["before_mb"]
    assert grown < 9 * size / 1e6, figures  # the old transport: about 16x


def _twice(text: str, other: str | None = None, **dump: object) -> bytes:
    """A tool result as the SDK's servers send it: the text in content and in structuredContent."""
    result = {"content": [{"type": "text", "text": text}], "structuredContent": {"result": text if other is None else other}}
    return json.dumps({"jsonrpc": "2.0", "id": 9, "result": result}, **dump).encode("utf-8", "surrogatepass") + b"\n"


def _read(line: bytes, step: int, cap: int = 50_000_000) -> list:
    reader = LineReader(cap=cap)
    out = []
    for i in range(0, len(line), step):
        out += reader.feed(line[i:i + step])
    return out


def test_a_long_text_sent_twice_is_decoded_whole_however_the_chunks_cut_its_escapes_and_kept_once() -> None:
    rng = random.Random(33)
    # quotes, backslashes, newlines, a 2-byte and a 4-byte character (a surrogate pair when escaped), U+2028, NUL
    text = "".join(rng.choice(['a', 'b', '"', '\\', '\n', 'é', '\U0001F600', '\u2028', '\x00']) for _ in range(1_500_000))
    for ensure_ascii in (True, False):
        line = _twice(text, ensure_ascii=ensure_ascii)
        for step in (4093, 65536, len(line)):
            [got] = _read(line, step)
            result = got.message.result
            assert result["content"][0]["text"] == text, (ensure_ascii, step)
            assert result["structuredContent"]["result"] is result["content"][0]["text"]  # one str, not two
    for other in (text[:-1], text + "z", text[:700_000] + "Q" + text[700_001:], "short"):
        [got] = _read(_twice(text, other), 65536)
        result = got.message.result
        assert result["content"][0]["text"] == text and result["structuredContent"]["result"] == other


def test_a_lone_surrogate_and_a_server_string_that_looks_like_a_placeholder_come_through_as_sent() -> None:
    text = "x\ud800y" * 400_000  # json accepts a lone surrogate (orjson does not)
    [got] = _read(_twice(text), 65536)
    assert got.message.result["content"][0]["text"] == text
    fake = "\x00mtagent-long-" + "0" * 24 + "-0"  # the mark is random per message: a server cannot name a value
    [got] = _read(_twice("z" * 2_000_000, fake), 65536)
    assert got.message.result["structuredContent"]["result"] == fake


def test_the_cap_counts_a_text_sent_twice_once_but_two_different_texts_twice() -> None:
    same = _twice("q" * 3_000_000)
    [ok] = _read(same, 65536, cap=4_000_000)  # a 6 MB line, 3 MB held
    assert len(ok.message.result["content"][0]["text"]) == 3_000_000
    [refused] = _read(_twice("q" * 3_000_000, "r" * 3_000_000), 65536, cap=4_000_000)
    assert refused.message.id == 9 and refused.message.error.code == MESSAGE_TOO_BIG
    [refused] = _read(same, 65536, cap=1_900_000)  # the line may be 3x the cap, no more
    assert refused.message.error.code == MESSAGE_TOO_BIG


SESSION = textwrap.dedent("""
    import json, os, resource, sys, time
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from tools.mcp.mcp_helpers import fixture_server, mcp_settings
    from mtagent.agent.scripted import ScriptedChatModel, tool_call
    from mtagent.agent.session import AgentSession
    from mtagent.tools import default_tools
    from mtagent.tools.mcp import McpManager
    project, size, with_secret = Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "secret"
    secret = "\\nsk-proj-" + "Zq7" * 16 if with_secret else ""  # a key shape the redactor knows, at the very end
    settings = mcp_settings({"fx": fixture_server()}, agent={"approval": {"mcp__fx__*": "allow"}}, call_timeout_seconds=600)
    # the warm-up result's lines are in the view: the big one repeats them (the engine folds repeated runs)
    model = ScriptedChatModel([tool_call("mcp__fx__big", {"size": 20_000}, id="w1"), "warm",
                               tool_call("mcp__fx__big", {"size": size, "tail": secret}, id="b1"), "done"])
    tools = lambda c: [*default_tools(c.workspace.root, context=c), *manager.tools()]
    with McpManager.for_project(settings, project) as manager, \\
            AgentSession.create(project, model=model, settings=settings, tools=tools) as session:
        session.run_turn("warm")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        session.run_turn("a big one")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        sent = model.calls[3][-1]
        artifact = session.artifacts.root / sent.artifact["artifact"]
    line = ("0123456789abcdef" * 4 + "\\n").encode()
    expected_end = b"\\n[redacted]" if with_secret else b""
    with open(artifact, "rb") as fh:  # compared in pieces: this check must not be the peak
        body_ok = all(fh.read(len(line)) == line for _ in range((size - len(secret)) // len(line)))
        rest = fh.read()
    ok = body_ok and rest.endswith(expected_end) and b"Zq7Zq7" not in rest and "Zq7Zq7" not in sent.content
    ok = ok and (not with_secret or "[redacted]" in sent.content)  # the preview's tail, redacted
    print(json.dumps({"ok": ok, "before_mb": before / 1024, "peak_mb": peak / 1024, "preview": len(sent.content)}))
""")


@pytest.mark.parametrize("secret", ["secret", "plain"])
def test_a_50_mb_result_in_a_session_is_stored_whole_and_redacted_in_bounded_memory(
        project: Path, tmp_path: Path, secret: str) -> None:
    """End to end in a session, measured in a fresh process: the MCP message (101 MB: the text twice),
    the ToolMessage, redaction, the artifact and recall's indexing of it. Before #33's fix it failed
    over the 64 MiB cap; with the cap lifted it grew 327 MB over the session's own RSS (the line, both
    strings and orjson's copy; then recall read the artifact whole and split it into lines). With a
    secret in it, the redacted copy sat beside the original (and re.sub's pieces beside both): 150 MB;
    with an earlier result's lines in the view, folding the repeats split it into lines: 210 MB."""
    size = 50_000_000
    script = tmp_path / "session_measure.py"
    script.write_text(SESSION)
    done = subprocess.run([sys.executable, str(script), str(REPO / "tests"), str(project), str(size), secret],
                          capture_output=True, text=True, timeout=900, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["ok"], figures
    # the call's own growth, with a secret as without: one whole copy of the text at a time (the message's
    # is the ToolMessage's; the artifact is redacted and written a piece at a time): 85-95 MB measured
    # (290 MB for the whole process, the session alone ~200 MB — a total bound would fail on what other
    # areas add to a session, not on MCP)
    assert figures["peak_mb"] - figures["before_mb"] < 2.5 * size / 1e6, figures
