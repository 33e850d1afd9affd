"""``mtagent eval --suite builtin`` against the real llama.cpp server (SmolLM2-135M) end to end (#29).

A 135M model solves little; the point is that every part is real — the model calls through the
OpenAI-compatible client, the sessions, the checks, the paired report and its cost figures — and
that the run ends cleanly with one record per (task, policy). Shell commands are denied (a tiny
model's commands are not worth running); file writes stay allowed, inside the scratch copies.
Skipped with the reason when the server is not built (conftest).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from live_server import LlamaServer

from conftest import WINDOW

TASKS = 1
EVAL_SECONDS = 540


@pytest.mark.timeout(EVAL_SECONDS + 60)
def test_the_builtin_suite_runs_against_llama_server(llama_server: LlamaServer, tmp_path: Path,
                                                     mtagent_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTAGENT_") or k == "MTAGENT_HOME"}
    env.pop("OPENAI_API_KEY", None)
    out = tmp_path / "live.eval.jsonl"
    args = [sys.executable, "-m", "mtagent", "eval", "--suite", "builtin", "--limit", str(TASKS),
            "-p", "mtagent", "-p", "threshold", "--model", "llamacpp:smollm2", "--base-url", llama_server.base_url,
            "--scratch", str(tmp_path / "s"), "--out", str(out), "-j", "1", "--json",
            "-s", f"context.token_limit={WINDOW}", "-s", "context.auto_compact_threshold=0.9",
            "-s", "agent.tool_schemas=\"auto\"", "-s", "agent.max_steps=3", "-s", "agent.max_retries=0",
            "-s", "agent.max_output_tokens=96",
            "-s", 'agent.approval={shell = "deny"}']
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=EVAL_SECONDS, check=False,
                          stdin=subprocess.DEVNULL)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert [p["policy"] for p in data["policies"]] == ["mtagent", "threshold"]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2 * TASKS
    for r in records:
        assert r["model"] == "llamacpp:smollm2"
        if r["status"] == "done":  # the model answered; its check really ran in the workspace
            assert r["calls"] >= 1 and r["main"]["calls"] == r["calls"] and r["main"]["output"] > 0
            assert r["check"]["exit_code"] in (0, 1) and Path(r["workdir"], "README.md").is_file()
        else:
            assert r["error"]  # an error says what happened
    done_pairs = {r["task"] for r in records if r["status"] == "done"}
    assert data["paired"][0]["n"] <= TASKS and all(p["tasks"] + p["errors"] == TASKS for p in data["policies"])
    assert done_pairs or all(r["error"] for r in records)
