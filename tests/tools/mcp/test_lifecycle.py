"""A session's MCP servers: start in parallel with a bound, fail clearly, restart, and leave no process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from interrupts import wait_for
from tools.mcp.mcp_helpers import alive, call, children_of, fixture_server, mcp_settings, tools_of, wait_gone

from mtagent.tools.mcp import McpManager


def _pid(tools: dict, name: str) -> int:
    return int(call(tools[f"mcp__{name}__pid"]).content)


def test_tools_are_named_by_server_and_carry_their_source(project: Path) -> None:
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        tools = tools_of(manager)
        echo = tools["mcp__fx__echo"]
        assert echo.metadata["source"] == "mcp:fx" and echo.source == "mcp:fx"
        result = call(echo, text="hello there")
        assert result.status == "success" and result.content == "hello there"
        assert result.artifact["kind"] == "mcp" and result.artifact["server"] == "fx"
        [status] = manager.servers()
        own = [name for name in tools if name.startswith("mcp__fx__")]  # the rest: mcp_list/read_resource(s)
        assert (status.state, status.tool_count, status.source) == ("ready", len(own), "user config")


def test_nothing_starts_before_the_tools_are_asked_for(project: Path) -> None:
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        assert not any(_is_fixture(p) for p in children_of(os.getpid()))
        assert manager.servers()[0].state == "not started"
        assert not any(t.name == "mtagent-mcp" for t in threading.enumerate())  # no loop thread either


def _is_fixture(pid: int) -> bool:
    try:
        return "fixture_server.py" in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


def test_servers_start_in_parallel_and_a_hung_one_is_bounded_by_its_start_timeout(project: Path) -> None:
    settings = mcp_settings({"a": fixture_server(), "b": fixture_server(),
                             "hang": fixture_server("--hang-start", start_timeout_seconds=2)})
    started = time.monotonic()
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        took = time.monotonic() - started
        states = {s.name: (s.state, s.note) for s in manager.servers()}
    assert "mcp__a__echo" in tools and "mcp__b__echo" in tools
    assert not any(name.startswith("mcp__hang__") for name in tools)
    assert states["hang"] == ("failed", "did not start within 2 s")
    # the hung server costs its timeout plus the SDK's shutdown steps, once, not once per server
    assert took < 25, took  # not 30 s (the default start timeout), and not the sum of the three


def test_a_missing_command_is_a_state_with_a_note_not_an_exception(project: Path) -> None:
    settings = mcp_settings({"gone": {"command": "mtagent-no-such-server-xyz"}, "fx": fixture_server()})
    with McpManager.for_project(settings, project) as manager:
        assert "mcp__fx__echo" in tools_of(manager)
        state = {s.name: s for s in manager.servers()}["gone"]
        assert state.state == "failed" and "command not found: mtagent-no-such-server-xyz" in state.note


def test_a_call_that_hangs_times_out_with_a_clear_error_and_the_next_call_restarts(project: Path) -> None:
    settings = mcp_settings({"fx": fixture_server(call_timeout_seconds=1)})
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        first = _pid(tools, "fx")
        started = time.monotonic()
        result = call(tools["mcp__fx__sleep"], seconds=30)
        assert time.monotonic() - started < 20  # 1 s and the stop, not the 30 s the tool sleeps
        assert result.status == "error"
        assert "did not answer within 1 s" in result.content and "started again on the next call" in result.content
        assert manager.servers()[0].state == "failed"
        assert wait_gone(first), "the hung server was not stopped"
        second = _pid(tools, "fx")
        assert second != first and manager.servers()[0].state == "ready"


def test_a_server_that_dies_mid_call_gives_an_error_with_its_stderr_and_comes_back(project: Path) -> None:
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        tools = tools_of(manager)
        first = _pid(tools, "fx")
        result = call(tools["mcp__fx__crash"])
        assert result.status == "error"
        assert "stopped during the call" in result.content and "crashing on purpose" in result.content
        status = manager.servers()[0]
        assert status.state == "failed" and "crashing on purpose" in status.note
        assert call(tools["mcp__fx__echo"], text="back").content == "back"
        assert _pid(tools, "fx") != first


def test_a_server_killed_from_outside_during_a_call(project: Path) -> None:
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        tools = tools_of(manager)
        pid = _pid(tools, "fx")
        killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
        killer.start()
        result = call(tools["mcp__fx__sleep"], seconds=20)
        killer.join()
        assert result.status == "error" and "stopped during the call" in result.content
        assert call(tools["mcp__fx__echo"], text="again").content == "again"


def test_garbage_on_stdout_is_skipped_and_never_reaches_the_terminal(project: Path, capfd) -> None:
    settings = mcp_settings({"noisy": fixture_server("--garbage")})
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        assert manager.servers()[0].state == "ready"
        assert call(tools["mcp__noisy__garbage_echo"], text="still fine").content == "still fine"
    out, err = capfd.readouterr()
    assert "not JSON-RPC" not in out + err and "garbage between" not in out + err
    assert "Traceback" not in err


def test_only_the_configured_environment_reaches_a_server(project: Path, monkeypatch) -> None:
    monkeypatch.setenv("MTAGENT_TEST_SECRET_TOKEN", "do-not-leak-0123456789")
    settings = mcp_settings({"fx": fixture_server(env={"GIVEN": "yes"})})
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        assert call(tools["mcp__fx__env"], name="MTAGENT_TEST_SECRET_TOKEN").content == "<unset>"
        assert call(tools["mcp__fx__env"], name="GIVEN").content == "yes"
        assert call(tools["mcp__fx__env"], name="PATH").content != "<unset>"


def test_close_stops_every_server_process(project: Path) -> None:
    manager = McpManager.for_project(mcp_settings({"a": fixture_server(), "b": fixture_server()}), project)
    tools = tools_of(manager)
    pids = [_pid(tools, "a"), _pid(tools, "b")]
    assert all(alive(p) for p in pids)
    manager.close()
    assert all(wait_gone(p, 1) for p in pids)
    manager.close()  # twice is harmless
    result = call(tools["mcp__a__echo"], text="x")
    assert result.status == "error" and "shut down with the session" in result.content


def test_ctrl_c_during_a_call_cancels_it_and_close_still_stops_the_server(project: Path, sigint_delivered: None) -> None:
    manager = McpManager.for_project(mcp_settings({"fx": fixture_server()}), project)
    tools = tools_of(manager)
    pid = _pid(tools, "fx")
    timer = threading.Timer(0.5, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    try:
        manager.call("fx", "sleep", {"seconds": 20})
        raise AssertionError("the call was not interrupted")
    except KeyboardInterrupt:
        pass
    timer.join()
    assert call(tools["mcp__fx__echo"], text="after").content == "after"
    manager.close()
    assert wait_gone(pid, 1)


_CRASHING_PARENT = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from tools.mcp.mcp_helpers import fixture_server, mcp_settings
    from mtagent.tools.mcp import McpManager
    manager = McpManager.for_project(mcp_settings({{"fx": fixture_server(*{flags!r})}}), {project!r})
    tool = {{t.name: t for t in manager.tools()}}["mcp__fx__pid"]
    print(tool.invoke({{"name": tool.name, "args": {{}}, "id": "c1", "type": "tool_call"}}).content, flush=True)
    {ending}
""")


def _run_parent(project: Path, ending: str, *flags: str) -> tuple[int, subprocess.CompletedProcess]:
    script = _CRASHING_PARENT.format(tests=str(Path(__file__).parents[2]), project=str(project), ending=ending,
                                     flags=list(flags))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return int(done.stdout.split()[0]), done


def test_a_session_never_closed_and_an_uncaught_exception_still_stop_the_servers(project: Path) -> None:
    pid, done = _run_parent(project, "raise RuntimeError('boom')  # no close()")
    assert "boom" in done.stderr and done.returncode == 1
    assert wait_gone(pid, 5), "the server outlived the process that started it"


def test_a_parent_killed_outright_leaves_no_server_even_one_that_ignores_its_closed_stdin(project: Path) -> None:
    pid, done = _run_parent(project, "os.kill(os.getpid(), signal.SIGKILL)", "--linger")
    assert done.returncode == -signal.SIGKILL
    assert wait_gone(pid, 10), "the server kept running after its parent was killed"


def test_a_server_that_died_while_idle_is_started_again_by_the_next_call(project: Path) -> None:
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        tools = tools_of(manager)
        first = _pid(tools, "fx")
        os.kill(first, signal.SIGKILL)
        assert wait_gone(first)
        wait_for(lambda: [s.state for s in manager.servers()] == ["failed"], "the client to see the closed pipe")
        assert "exited while idle" in manager.servers()[0].note  # what /mcp shows before the next call
        result = call(tools["mcp__fx__echo"], text="no call lost")
        assert result.status == "success" and result.content == "no call lost"
        assert _pid(tools, "fx") != first


def test_ctrl_c_while_servers_start_leaves_no_process_behind(project: Path, sigint_delivered: None) -> None:
    manager = McpManager.for_project(mcp_settings({"hang": fixture_server("--hang-start")}), project)
    timer = threading.Timer(1.5, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    try:
        manager.tools()
        raise AssertionError("the start was not interrupted")
    except KeyboardInterrupt:
        pass
    timer.join()
    hung = [p for p in children_of(os.getpid()) if _is_fixture(p)]
    manager.close()
    assert all(wait_gone(p, 10) for p in hung), "a server being started outlived Ctrl-C and close()"


def test_three_hung_servers_cost_one_start_timeout_not_three(project: Path) -> None:
    """Started one after another they would take 3 × (3 s + the stop) ≥ 15 s; together about 5 s."""
    hung = {f"h{i}": fixture_server("--hang-start", start_timeout_seconds=3) for i in range(3)}
    started = time.monotonic()
    with McpManager.for_project(mcp_settings(hung), project) as manager:
        assert manager.tools() == []
        assert {s.state for s in manager.servers()} == {"failed"}
        took = time.monotonic() - started
    assert took < 12, took
