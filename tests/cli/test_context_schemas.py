"""/context (grid, stats, explain), the REPL banner and `run --json` say which tool-schema mode is
active and why, and where the window's size came from; one meter: /compact, /context stats and /context
explain show the same current size for the same moment, each labelled with the moment it measures
("as of call N" / "estimated now")."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rich.console import Console

from mtagent.cli.repl_host import ReplHost
from mtagent.cli.run_cmd import setup_warnings
from mtagent.cli.session_options import SessionOptions
from mtagent.cli.slash import dispatch


def _host(project: Path, tmp_path: Path, window: int) -> tuple[ReplHost, Console]:
    script = tmp_path / f"script-{window}.json"
    script.write_text(json.dumps(["fine"]))
    console = Console(record=True, width=240)
    host = ReplHost(console=console, options=SessionOptions(cwd=project, model=f"scripted:{script}", window=window))
    return host, console


def test_context_views_show_compact_mode_why_and_the_window_source(project: Path, tmp_path: Path) -> None:
    host, console = _host(project, tmp_path, 4096)
    try:
        session = host.open()
        session.run_turn("hello")
        for view in ("/context", "/context stats", "/context explain"):
            dispatch(host, view)
            out = console.export_text(clear=True)
            out = " ".join(out.split())  # the grid's legend wraps long lines
            assert "tool schemas: compact" in out and "not offered: save_memory, recall, task" in out, view
            assert re.search(r"full schemas \+ system prompt would take [89]\d% of the window", out), view
            assert "context.token_limit (set)" in out, view
        choice = session.schema_choice
        assert f"{choice.tokens:,} tokens with the system prompt" in host.window_usage().schemas
    finally:
        host.close()


def test_context_shows_full_mode_in_a_large_window(project: Path, tmp_path: Path) -> None:
    host, console = _host(project, tmp_path, 131072)
    try:
        host.open().run_turn("hello")
        dispatch(host, "/context stats")
        out = console.export_text()
        assert "full — " in out and "<= agent.tool_schema_max_share 30%" in out and "not offered" not in out
    finally:
        host.close()


def test_setup_warnings_carry_what_the_server_said_that_was_refused(project: Path, tmp_path: Path) -> None:
    host, _ = _host(project, tmp_path, 131072)
    try:
        session = host.open()
        session.window_warnings = ["the server's window: x is not a whole number ('4k'); ignored"]
        assert setup_warnings(session)[0].endswith("ignored")
    finally:
        host.close()


def test_run_json_reports_the_servers_window_and_the_compact_schemas(project: Path) -> None:
    from stub_openai import StubOpenAI
    from typer.testing import CliRunner

    from mtagent.cli.app import app

    models = {"object": "list", "data": [{"id": "smol", "object": "model", "owned_by": "llamacpp"}]}
    with StubOpenAI([{"content": "hi"}], models=models, props={"default_generation_settings": {"n_ctx": 4096}}) as stub:
        result = CliRunner().invoke(app, ["run", "--cwd", str(project), "--model", "llamacpp:smol", "--base-url",
                                          stub.base_url, "--json", "hello"])
    assert result.exit_code == 0, result.output
    window = json.loads(result.stdout)["window"]
    assert window["tokens"] == 4096 and window["source"].startswith("the server (llama.cpp /props")
    assert window["tool_schemas"]["mode"] == "compact" and window["tool_schemas"]["share"] < 0.3
    assert stub.requests[0]["max_tokens"] == 512  # the output bound from the server's window (4096 // 8)


def test_run_warns_about_a_window_the_server_got_wrong(project: Path) -> None:
    from stub_openai import StubOpenAI
    from typer.testing import CliRunner

    from mtagent.cli.app import app

    models = {"object": "list", "data": [{"id": "smol", "object": "model", "owned_by": "vllm", "max_model_len": -5}]}
    with StubOpenAI([{"content": "hi"}], models=models) as stub:
        result = CliRunner().invoke(app, ["run", "--cwd", str(project), "--model", "vllm:smol", "--base-url",
                                          stub.base_url, "hello"])
    assert result.exit_code == 0, result.output
    assert "vLLM /v1/models max_model_len = -5 is outside" in " ".join(result.output.split())


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
