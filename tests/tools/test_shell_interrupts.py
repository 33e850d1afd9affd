"""Ctrl-C while a shell call starts its processes: the call stops at once and leaves nothing behind.

``Popen`` with a ``preexec_fn`` runs the ``os.register_at_fork`` hooks (logging's lock); a
KeyboardInterrupt raised inside one used to be printed as "Exception ignored" and lost — the turn
then waited for the command to end, with logging's lock still held — and one raised later inside
``Popen`` left a started child that nobody killed. A separate process sends SIGINT at delays swept
across the call's start, so some land during the fork itself (needing no GIL of ours to send).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest
from interrupts import live_descendants, wait_for

from mtagent.tools import proctree
from mtagent.tools.shell import interrupts_held

from .conftest import Kit

ROUNDS = 20
COMMAND_SECONDS = 30  # what a lost Ctrl-C (or a leaked child) would run for; a stopped call ends long before
PROMPT_SECONDS = 10.0  # generous for a loaded 2-core box, and well short of the command

SENDER = r"""
import os, signal, sys, time
target = int(sys.argv[1])
for line in sys.stdin:
    until = time.perf_counter() + float(line)
    while time.perf_counter() < until:
        pass
    os.kill(target, signal.SIGINT)
    sys.stdout.write("sent\n")
    sys.stdout.flush()
"""


def _logging_lock_free() -> bool:
    """Another thread can take logging's module lock (a lost KeyboardInterrupt in the after-fork
    hook left it held, and the next log line from any other thread hung)."""
    took: list[bool] = []

    def take() -> None:
        got = logging._lock.acquire(timeout=PROMPT_SECONDS)  # type: ignore[attr-defined]
        took.append(got)
        if got:
            logging._lock.release()  # type: ignore[attr-defined]

    worker = threading.Thread(target=take)
    worker.start()
    worker.join()
    return took == [True]


def _start_time(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> float:
    """Seconds from the tool call to the moment its ``Popen`` returned, on this machine now."""
    marks: list[float] = []
    real = proctree.start_watchdog
    monkeypatch.setattr(proctree, "start_watchdog", lambda *a: (marks.append(time.perf_counter()), real(*a))[1])
    began = time.perf_counter()
    kit.call("shell", command="true")
    monkeypatch.setattr(proctree, "start_watchdog", real)
    return marks[0] - began


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find processes left behind")
def test_ctrl_c_around_the_fork_stops_the_call_promptly_and_leaves_nothing(
        kit: Kit, sigint_delivered: None, monkeypatch: pytest.MonkeyPatch) -> None:
    window = _start_time(kit, monkeypatch) * 1.5
    sender = subprocess.Popen([sys.executable, "-c", SENDER, str(os.getpid())], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, bufsize=1)
    assert sender.stdin is not None and sender.stdout is not None
    try:
        for round_ in range(ROUNDS):
            delay = window * round_ / ROUNDS

            def press(delay: float = delay) -> None:
                assert sender.stdin is not None
                sender.stdin.write(f"{delay}\n")
                sender.stdin.flush()

            _stopped_promptly_leaving_nothing(kit, f"Ctrl-C {delay * 1000:.2f} ms into the call",
                                              frozenset({sender.pid}), press)
            assert sender.stdout.readline() == "sent\n"  # that one SIGINT was the one raised
    finally:
        sender.stdin.close()
        sender.wait(timeout=PROMPT_SECONDS)


def _stopped_promptly_leaving_nothing(kit: Kit, what: str, exclude: frozenset[int] = frozenset(),
                                      press: Callable[[], None] = lambda: None) -> None:
    """One shell call that a Ctrl-C (``press``, or the test's own arrangement) stops. Processes the
    suite already had (its PostgreSQL, Ray, MCP servers) are not the call's."""
    exclude = exclude | live_descendants(os.getpid())
    began = time.monotonic()
    try:
        press()
        kit.call("shell", command=f"sleep {COMMAND_SECONDS}")
    except KeyboardInterrupt:
        pass
    else:
        pytest.fail(f"{what}: the Ctrl-C was lost and the call ran its command to the end")
    took = time.monotonic() - began
    assert took < PROMPT_SECONDS, f"{what}: the call ran on for {took:.1f} s"
    wait_for(lambda: not live_descendants(os.getpid()) - exclude, f"no process left behind ({what})",
             timeout=PROMPT_SECONDS)
    assert _logging_lock_free(), f"logging's lock is still held ({what})"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find processes left behind")
def test_ctrl_c_while_popen_waits_for_the_exec_stops_the_call(
        kit: Kit, sigint_delivered: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic: the forked child presses Ctrl-C on us (from the shell's ``preexec_fn``), so it
    lands after the fork and before ``Popen`` returns — in an after-fork hook or in ``Popen``'s wait
    for the exec, the two places the old code lost the interrupt or the child."""
    real = proctree.die_with_parent

    def and_press_ctrl_c() -> None:
        real()
        os.kill(os.getppid(), signal.SIGINT)

    monkeypatch.setattr(proctree, "die_with_parent", and_press_ctrl_c)
    for attempt in range(5):
        _stopped_promptly_leaving_nothing(kit, f"Ctrl-C from the forked child, attempt {attempt + 1}")


def test_a_ctrl_c_held_back_while_the_call_starts_is_raised_after_it(sigint_delivered: None) -> None:
    after: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            signal.raise_signal(signal.SIGINT)  # without the hold, KeyboardInterrupt on the next line
            after.append("the block ran to its end")
        after.append("not reached")
    assert after == ["the block ran to its end"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_off_the_main_thread_nothing_is_held_back_and_no_handler_is_touched(sigint_delivered: None) -> None:
    seen: list[object] = []

    def worker() -> None:
        with interrupts_held():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]
