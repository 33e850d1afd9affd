"""Regenerate the golden transcripts under tests/data/transcripts/.

    python tests/data/regenerate.py          # rewrite the files
    python tests/data/regenerate.py --check  # exit 1 if a file differs (what the test does)

The goldens pin the on-disk format: a change to how records are serialised shows up as a
diff here, and old goldens must keep parsing. Everything is deterministic (fixed ids and
timestamps), so regenerating without a format change is a no-op.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.session import schema

HERE = Path(__file__).resolve().parent / "transcripts"
GREP_FULL = "\n".join(f"src/mod{i}.py:{i}: def handler_{i}(request):" for i in range(400))


def _clock() -> Iterator[str]:
    minute = 0
    while True:
        yield f"2026-01-02T03:{minute // 60:02d}:{minute % 60:02d}.000Z"
        minute += 1


def _msg(tick: Iterator[str], message: Any) -> dict[str, Any]:
    return schema.message_to_record(message, timestamp=next(tick))


def every_record() -> list[dict[str, Any]]:
    """One session using every v2 record type, plus one record from a future schema."""
    t = _clock()
    preview = GREP_FULL[:200]
    tool_use = {"kind": "text", "artifact": "tool-results/call_grep_1.txt", "original_chars": len(GREP_FULL),
                "preview_chars": len(preview), "truncated": True, "artifact_truncated": False,
                "pattern": "def handler_"}
    persisted = (f'<persisted-output path="tool-results/call_grep_1.txt" chars="{len(GREP_FULL)}">\n'
                 f"{preview}\n</persisted-output>")
    return [
        schema.session_start_record("golden-v2", "/home/dev/project", "openai:gpt-4o-mini", "0.1.0", timestamp=next(t)),
        _msg(t, SystemMessage("You are mtagent.", id="sys-1")),
        _msg(t, HumanMessage("Find the request handlers.", id="u-1")),
        _msg(t, AIMessage("", id="a-1", tool_calls=[{"id": "call_grep_1", "name": "grep",
                                                      "args": {"pattern": "def handler_"}}],
                          usage_metadata={"input_tokens": 120, "output_tokens": 14, "total_tokens": 134},
                          response_metadata={"model_name": "gpt-4o-mini", "finish_reason": "tool_calls"})),
        schema.tool_result_artifact_record("call_grep_1", "grep", "tool-results/call_grep_1.txt",
                                           original_chars=len(GREP_FULL), stored_bytes=len(GREP_FULL.encode()),
                                           truncated=False, sha256="0" * 64, timestamp=next(t)),
        _msg(t, ToolMessage(persisted, tool_call_id="call_grep_1", name="grep", id="t-1", artifact=tool_use)),
        _msg(t, AIMessage("There are 400 handlers; the first is in src/mod0.py.", id="a-2",
                          usage_metadata={"input_tokens": 400, "output_tokens": 20, "total_tokens": 420})),
        _msg(t, HumanMessage("Read src/mod1.py.", id="u-2")),
        _msg(t, AIMessage("", id="a-3", tool_calls=[{"id": "call_read_1", "name": "read_file",
                                                      "args": {"path": "src/mod1.py"}}])),
        _msg(t, ToolMessage("1\tdef handler_1(request):\n2\t    return 1", tool_call_id="call_read_1",
                            name="read_file", id="t-2", status="success",
                            artifact={"kind": "text", "artifact": None, "original_chars": 42, "preview_chars": 42,
                                      "truncated": False, "artifact_truncated": False})),
        schema.event_record("tool_finished", {"tool": "read_file", "ms": 3}, timestamp=next(t)),
        schema.subagent_record("agent-golden1", "finished", tool_call_id="call_task_1", agent="explore",
                               path="golden-v2/subagents/agent-golden1.jsonl",
                               report={"outcome": "success", "summary": "handlers are in src/", "validated": True},
                               timestamp=next(t)),
        schema.context_plan_record({"turn": 2, "tokens": 1200, "threshold": 98072,
                                    "buckets": {"system": 300, "history": 900},
                                    "selected": ["u-1", "a-1", "t-1", "a-2", "u-2", "a-3", "t-2"],
                                    "compressed": [{"id": "t-1", "from_tokens": 5000, "to_tokens": 80,
                                                    "method": "persisted_output"}],
                                    "dropped": [], "conflicts": []}, timestamp=next(t)),
        schema.session_memory_update_record("session-memory/summary.md", last_summarized_message_id="t-2",
                                            tokens=310, sections=["Current State", "Files and Functions"],
                                            timestamp=next(t)),
        schema.boundary_record(summary="Goal: find request handlers. 400 found by grep; mod1 read.",
                               first_kept_id="u-2", trigger="manual", reason="user ran /compact",
                               pre_tokens=1200, post_tokens=300, summary_source="llm",
                               boundary_id="cb-golden-1", timestamp=next(t)),
        schema.microcompact_record("time", ["t-2"], timestamp=next(t)),
        {"type": "future_record", "schema_version": 3, "timestamp": next(t), "payload": {"x": 1}},
        _msg(t, HumanMessage("Now summarise handler_1.", id="u-3")),
        _msg(t, AIMessage("handler_1 returns 1.", id="a-4")),
    ]


def legacy_v1() -> list[dict[str, Any]]:
    """A pre-v2 transcript: no schema_version, some messages without ids, a ``compression``."""
    t = _clock()
    return [
        {"type": "transcript_message", "role": "user", "content": "first question", "timestamp": next(t)},
        {"type": "transcript_message", "role": "assistant", "content": "first answer", "timestamp": next(t)},
        {"type": "transcript_message", "role": "user", "content": "second question", "timestamp": next(t)},
        {"type": "transcript_message", "role": "assistant", "content": "",
         "tool_calls": [{"id": "c1", "name": "ls", "args": {}}], "timestamp": next(t)},
        {"type": "transcript_message", "role": "tool", "tool_call_id": "c1", "name": "ls",
         "content": "a.py b.py", "timestamp": next(t)},
        {"type": "transcript_message", "role": "assistant", "content": "two files", "timestamp": next(t)},
        schema.compression_record("The user asked two questions; the folder has a.py and b.py.", 4, 2,
                                  timestamp=next(t)),
        {"type": "transcript_message", "role": "user", "content": "third question", "timestamp": next(t)},
    ]


def torn_round() -> bytes:
    """A session that crashed mid tool call and mid line."""
    t = _clock()
    records = [
        schema.session_start_record("golden-torn", "/home/dev/project", None, "0.1.0", timestamp=next(t)),
        _msg(t, HumanMessage("run the tests", id="u-1")),
        _msg(t, AIMessage("", id="a-1", tool_calls=[{"id": "call_sh_1", "name": "shell",
                                                      "args": {"command": "pytest -q"}}])),
    ]
    body = b"".join(schema.dumps_record(r) for r in records)
    return body + b'{"type":"transcript_message","schema_version":2,"role":"tool","id":"t-1","cont'


def expected_view(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from mtagent.context.view import build_resume_view

    return [schema.message_to_record(m, timestamp="-") for m in build_resume_view(records).messages]


def outputs() -> dict[Path, bytes]:
    every = every_record()
    legacy = legacy_v1()
    files = {
        HERE / "v2_every_record.jsonl": b"".join(schema.dumps_record(r) for r in every),
        HERE / "v1_legacy.jsonl": b"".join(schema.dumps_record(r) for r in legacy),
        HERE / "v2_torn_round.jsonl": torn_round(),
        HERE / "artifacts" / "v2_every_record" / "tool-results" / "call_grep_1.txt": GREP_FULL.encode(),
    }
    for name, records in (("v2_every_record", every), ("v1_legacy", legacy)):
        view = json.dumps(expected_view(records), indent=1, ensure_ascii=False) + "\n"
        files[HERE / f"{name}.view.json"] = view.encode()
    return files


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, data in outputs().items():
        if check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"wrote {path.relative_to(HERE.parent.parent.parent)}")
    for path in stale:
        print(f"stale golden: {path}; run python tests/data/regenerate.py and review the diff")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
