"""At-most-once tools on the middleware path: a process killed mid-tool and resumed from its
checkpoint does not run the tool again; the model is told the outcome is unknown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mtagent import paths
from mtagent.session.reader import read_records

CHILD = Path(__file__).with_name("crash_child.py")


def _start(project: Path, db: Path, marker: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(CHILD), str(project), str(db), str(marker), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def test_a_tool_killed_mid_run_is_not_run_again_on_resume(tmp_path):
    project, db, marker = tmp_path / "project", tmp_path / "checkpoints.sqlite", tmp_path / "side-effect.log"
    project.mkdir()
    child = _start(project, db, marker)
    deadline = time.monotonic() + 60
    while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), f"the tool never ran: {child.communicate(timeout=5)[1][-2000:]}"
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)

    resumed = subprocess.run([sys.executable, str(CHILD), str(project), str(db), str(marker), "--resume"],
                             capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    assert marker.read_text(encoding="utf-8").splitlines() == ["deployed prod"]  # the side effect, once
    messages = json.loads(resumed.stdout.strip().splitlines()[-1])
    answer = next(m for m in messages if m["tool_call_id"] == "call_deploy")
    assert answer["content"].startswith("Unknown outcome") and "never re-run" in answer["content"]
    assert messages[-1] == {"type": "ai", "content": "deploy handled", "tool_call_id": None}
    records = read_records(paths.session_transcript_path(project, "crash-thread"))
    started = [r for r in records if r["type"] == "event" and r["event"] == "tool_started"]
    results = [r for r in records if r["type"] == "transcript_message" and r.get("tool_call_id") == "call_deploy"]
    assert len(started) == 1 and len(results) == 1 and results[0]["status"] == "error"
