"""MCP messages are capped and read in linear time and bounded memory (#33): a 50 MB result took
minutes (the SDK rebuilt the line from 64 KiB pieces) and peaked at 836 MB; a message past the cap
is dropped as it is read and the call gets an error naming the cap."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tools.mcp.mcp_helpers import call, fixture_server, mcp_settings

from mtagent.tools.mcp import McpManager
from mtagent.tools.mcp import server as mcp_server
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


def test_a_result_over_the_cap_is_an_error_the_model_reads_and_the_server_stays_usable(
        project: Path, monkeypatch) -> None:
    monkeypatch.setattr(mcp_server, "MAX_MESSAGE_BYTES", 200_000)
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        tools = {t.name: t for t in manager.tools()}
        big = call(tools["mcp__fx__big"], size=1_000_000)
        assert big.status == "error" and "over the cap" in big.content
        assert call(tools["mcp__fx__echo"], text="still up").content == "still up"
        assert len(call(tools["mcp__fx__big"], size=50_000).content) == 50_000


MEASURE = textwrap.dedent("""
    import json, resource, sys, time
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from tools.mcp.mcp_helpers import call, fixture_server, mcp_settings
    from mtagent.tools.mcp import McpManager
    size = int(sys.argv[3])
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}, call_timeout_seconds=600), Path(sys.argv[2])) as m:
        tools = {t.name: t for t in m.tools()}
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
