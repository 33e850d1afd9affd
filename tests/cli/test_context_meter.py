"""One meter: /compact, /context stats and /context explain show the same current size for the
same moment, each labelled with the moment it measures ("as of call N" / "estimated now")."""

from __future__ import annotations

import json
import re

from rich.console import Console

from mtagent.cli.repl_host import ReplHost
from mtagent.cli.session_options import SessionOptions
from mtagent.cli.slash import dispatch


def _window_lines(text: str) -> list[str]:
    return re.findall(r"window: ([\d,]+) / [\d,]+ tokens \(([^)]*)\)", text)


def test_compact_stats_and_explain_agree_and_say_which_moment(project, tmp_path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([f"answer {i}: " + "detail " * 600 for i in range(12)]))
    console = Console(record=True, width=200)
    host = ReplHost(console=console, options=SessionOptions(cwd=project, model=f"scripted:{script}"))
    try:
        session = host.open()
        for i in range(12):
            session.run_turn(f"question {i}: " + "words " * 600)
        dispatch(host, "/context stats")
        before = console.export_text()
        assert re.search(r"Token estimate per bucket \(as of call \d+\)", before)
        dispatch(host, "/compact")
        dispatch(host, "/context explain")
        dispatch(host, "/context stats")
        out = console.export_text(clear=False)
        lines = _window_lines(out)
        assert len(lines) == 2 and lines[0] == lines[1] and lines[0][1] == "estimated now", lines
        used = host.window_usage()
        assert used is not None and f"{used.used:,}" == lines[0][0]
        assert "Token estimate per bucket (estimated now)" in out
    finally:
        host.close()
