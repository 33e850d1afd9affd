"""Crash safety and concurrency, with real processes.

* A child process appends a realistic session (rounds with large tool results, boundaries,
  microcompacts) and is SIGKILLed at a random moment, 200 times on the same session. After
  each kill the session must resume to a valid view and hold every acknowledged record (at
  most the one in flight is lost); the next child repairs the torn tail and carries on.
* Writers in several processes: the lock admits one at a time, and O_APPEND single-write
  lines never interleave even when the lock is bypassed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent.context.view import load_transcript
from mtagent.errors import SessionLocked
from mtagent.session import schema
from mtagent.session.reader import ReadReport, iter_entries
from mtagent.session.transcript import TranscriptWriter

KILLS = 200
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _session_rounds(rng: random.Random, start: int):
    """An endless, realistic stream of records."""
    n = start
    recent: list[str] = []
    while True:
        n += 1
        user = HumanMessage(f"step {n}", id=f"u{n}")
        calls = [{"id": f"c{n}_{k}", "name": "grep", "args": {"q": "x" * rng.randint(0, 50)}}
                 for k in range(rng.randint(0, 3))]
        ai = AIMessage("thinking " * rng.randint(0, 20), id=f"a{n}", tool_calls=calls)
        yield schema.message_to_record(user)
        yield schema.message_to_record(ai)
        recent += [f"u{n}", f"a{n}"]
        for call in calls:
            size = rng.choice([10, 200, 2_000, 30_000, 120_000])
            tool = ToolMessage("r" * size, tool_call_id=call["id"], name="grep", id=f"t{call['id']}")
            yield schema.message_to_record(tool)
        if rng.random() < 0.1:
            yield schema.microcompact_record("time", [f"tc{n}_0"])
        if rng.random() < 0.08:
            yield schema.boundary_record(summary=f"summary at {n}", first_kept_id=f"u{n}")
        recent = recent[-10:]


def _child(path: Path, ack_fd: int, seed: int) -> None:
    rng = random.Random(seed)
    writer = TranscriptWriter(path, fsync="never")
    os.write(ack_fd, b"r")
    for count, record in enumerate(_session_rounds(rng, seed * 10_000)):
        writer.append(record)
        os.write(ack_fd, b"x")
        if count > 400:
            time.sleep(60)


def _fork(work: Callable[[], object]) -> int:
    """``work()`` in a forked child that never returns into pytest (exit 0, or 3 on any exception)."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            work()
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    return pid


def _kill_once(path: Path, seed: int, delay: float, after_open: bool) -> int:
    """Run a child writer and SIGKILL it ``delay`` s after fork (or after its writer opened)."""
    read_fd, write_fd = os.pipe()
    pid = _fork(lambda: (os.close(read_fd), _child(path, write_fd, seed)))
    os.close(write_fd)
    early = b""
    if after_open:
        early = os.read(read_fd, 1)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    acked = early.count(b"x")
    while chunk := os.read(read_fd, 65536):
        acked += chunk.count(b"x")
    os.close(read_fd)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"child ended early: {status}"
    return acked


def test_sigkill_at_random_points_never_loses_acknowledged_records(tmp_path, capsys):
    path = tmp_path / "crash.jsonl"
    rng = random.Random(1234)
    start = 0  # end of the last complete line: where the next child's records begin
    torn = simulated = appended = 0
    for kill in range(KILLS):
        after_open = rng.random() < 0.8  # else the kill may land while the writer repairs the tail
        acked = _kill_once(path, kill + 1, rng.uniform(0.0, 0.004 if after_open else 0.03), after_open)
        appended += acked
        report = ReadReport()
        new = sum(1 for _ in iter_entries(path, start=start, report=report))
        torn += report.torn_tail_offset is not None
        assert acked <= new <= acked + 1, f"kill {kill}: {acked} acknowledged, {new} on disk"
        resumed = load_transcript(path)
        open_calls: set[str] = set()
        for m in resumed.messages:
            if isinstance(m, ToolMessage):
                assert m.tool_call_id in open_calls
                open_calls.discard(m.tool_call_id)
            else:
                assert not open_calls
                if isinstance(m, AIMessage):
                    open_calls = {c["id"] for c in m.tool_calls}
        assert not open_calls
        start = report.torn_tail_offset if report.torn_tail_offset is not None else path.stat().st_size
        if report.torn_tail_offset is None and rng.random() < 0.25:
            # a write cut short (full disk, NFS, a kill inside a huge write): half a line, no newline
            line = schema.dumps_record(schema.event_record("in_flight", {"pad": "p" * rng.randint(1, 5_000)}))
            with open(path, "ab") as fh:
                fh.write(line[: rng.randint(1, len(line) - 1)])
            simulated += 1
    with capsys.disabled():
        print(f"\n[crash] {KILLS} SIGKILLs during {appended} appends ({simulated} followed by an injected "
              "half-written line): "
              f"{torn} reads met a torn last line, every resume valid, no acknowledged record lost")


def test_writers_in_turn_across_processes_never_interleave(tmp_path):
    path = tmp_path / "turns.jsonl"
    procs, per_proc, rounds = 4, 15, 10

    def turns(p: int) -> None:
        done = 0
        while done < per_proc:
            try:
                with TranscriptWriter(path, fsync="never") as writer:
                    for i in range(rounds):
                        writer.append(schema.event_record("turn", {"p": p, "turn": done, "i": i}))
                    done += 1
            except SessionLocked:
                time.sleep(0.0005)

    pids = [_fork(lambda p=p: turns(p)) for p in range(procs)]
    for pid in pids:
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    records = [json.loads(line)["data"] for line in path.read_bytes().splitlines()]
    assert len(records) == procs * per_proc * rounds
    for start in range(0, len(records), rounds):  # each holder's turn is contiguous
        block = records[start:start + rounds]
        assert {(r["p"], r["turn"]) for r in block} == {(block[0]["p"], block[0]["turn"])}
        assert [r["i"] for r in block] == list(range(rounds))


def test_ten_thousand_concurrent_o_append_lines_never_interleave(tmp_path):
    """Line atomicity without the lock: 4 processes × 2,500 single-write appends."""
    path = tmp_path / "append.jsonl"
    procs, per_proc = 4, 2_500

    def appends(p: int) -> None:
        rng = random.Random(p)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        for i in range(per_proc):
            record = schema.event_record("append", {"p": p, "i": i, "pad": "z" * rng.randint(0, 8_000)})
            os.write(fd, schema.dumps_record(record))

    pids = [_fork(lambda p=p: appends(p)) for p in range(procs)]
    for pid in pids:
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    seen: dict[int, list[int]] = {p: [] for p in range(procs)}
    for entry in iter_entries(path):
        seen[entry.record["data"]["p"]].append(entry.record["data"]["i"])
    assert all(seen[p] == list(range(per_proc)) for p in range(procs))
