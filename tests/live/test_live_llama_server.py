"""mtagent against a real llama.cpp ``llama-server`` running SmolLM2-135M-Instruct (issue 21, item 8).

These check the protocol, not the task: a 135M model rarely does anything useful, but every reply
must arrive, parse and end the way mtagent promises — streamed text, a tool call round trip when
the model makes one, a context overflow recovered by a reactive compact, a rambling reply cut by
the output bound and by the total deadline, and one clear line, without retries, when the server
has no tool support. Skipped with the reason when the server or model is not built (conftest).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from live_server import LlamaServer, run_cli, transcript_records

from mtagent.context.model_errors import ErrorKind, classify
from mtagent.agent.models import create_chat_model
from mtagent.agent.server_profiles import detect_server
from mtagent.config import Settings

MODEL = "llamacpp:smollm2"
PROJECT_FILES = {"notes.txt": "The answer is 42.\n"}


def _model(server: LlamaServer, **agent):
    settings = Settings.model_validate({"agent": {"max_retries": 0, **agent},
                                        "session_memory": {"enabled": False}})
    return create_chat_model(MODEL, settings=settings, base_url=server.base_url, environ={})


def _messages(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("type") == "transcript_message"]


def test_server_is_detected_and_a_reply_streams(llama_server: LlamaServer) -> None:
    assert detect_server(llama_server.base_url) == "llamacpp"
    model = _model(llama_server, max_output_tokens=48)
    chunks = list(model.stream([HumanMessage("Say hello in one short sentence.")]))
    text = "".join(c.content for c in chunks if isinstance(c.content, str))
    assert len(chunks) > 2, "the reply did not arrive as a stream"
    assert text.strip(), "the stream carried no text"
    usage = next((c.usage_metadata for c in chunks if c.usage_metadata), None)
    assert usage and 0 < usage["output_tokens"] <= 48


def test_cli_run_ends_cleanly_and_any_tool_call_round_trips(llama_server: LlamaServer, project: Path,
                                                           mtagent_home: Path) -> None:
    """``mtagent run`` with the full tool set. SmolLM2 may or may not call a tool: either way the run
    ends with a status and every call in the transcript is answered by a result with its id."""
    run = run_cli(llama_server, "Use the read_file tool to read notes.txt, then tell me the answer.",
                  cwd=project, settings={"MTAGENT_AGENT__MAX_STEPS": "4"})
    assert run.code in (0, 1), run.stderr
    result = run.json()
    assert result["status"] in ("done", "max_steps"), result
    assert result["model_calls"] >= 1
    if run.code == 1:
        assert "agent.max_steps" in run.stderr, run.stderr
    calls = _assert_round_trips(transcript_records(mtagent_home))
    if not calls:
        warnings.warn("SmolLM2 answered in prose (no tool call) with tool_choice auto; the run still ended "
                      "cleanly (test_a_forced_tool_call_round_trips covers the round trip)", stacklevel=1)


def _assert_round_trips(records: list[dict]) -> list[dict]:
    """Every tool call in the transcript has well-formed arguments and a result with its id."""
    messages = _messages(records)
    answered = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    for call in calls:
        assert isinstance(call["args"], dict), call
        assert call["id"] in answered, f"tool call {call} has no result"
    return calls


@pytest.mark.xfail(reason="seen live 2026-12-01: with model_options tool_choice=required SmolLM2 still replied in "
                   "prose (1 model call); not yet explained", strict=False)
def test_a_forced_tool_call_round_trips(llama_server: LlamaServer, project: Path, mtagent_home: Path) -> None:
    """``tool_choice = "required"`` (a per-model request option) makes llama-server produce a tool
    call; its result goes back on the next call, which the server must accept."""
    run = run_cli(llama_server, "Read the file notes.txt.", cwd=project,
                  settings={"MTAGENT_AGENT__MAX_STEPS": "2",
                            "MTAGENT_AGENT__MODEL_OPTIONS": '{smollm2 = {tool_choice = "required"}}'})
    result = run.json()
    assert result["model_calls"] == 2, (result, run.stderr)  # the second call carried the first's result
    assert run.code == 1 and result["status"] == "max_steps" and "agent.max_steps" in run.stderr, run.stderr
    calls = _assert_round_trips(transcript_records(mtagent_home))
    assert len(calls) >= 2, calls


def _paragraph(topic: str, sentences: int) -> str:
    """Distinct English sentences (repeats would be cheap for any tokenizer) about ``topic``."""
    return " ".join(f"Note {i} on {topic}: the {topic} module keeps record number {i * 7} in bucket "
                    f"{i % 13}, and its owner reviewed it on day {i * 3 + 1} of the quarter." for i in range(sentences))


def test_a_context_overflow_is_recovered_by_a_reactive_compact(llama_server: LlamaServer, project: Path) -> None:
    """mtagent is told the window is 8,192 tokens; the server has 2,048. The turn that no longer fits
    gets llama-server's exceed_context_size_error, mtagent compacts reactively and the turn goes on."""
    from mtagent.agent.session import AgentSession
    from mtagent.session.reader import read_records

    settings = Settings.model_validate({
        "agent": {"max_retries": 0, "max_output_tokens": 48, "compact_model": "extractive", "max_steps": 3,
                  "model_options": {"smollm2": {"temperature": 0.0, "seed": 7}}},
        "context": {"token_limit": 8192, "summary_reserved_tokens": 600, "autocompact_buffer_tokens": 400,
                    "compression_preserve_min_tokens": 200, "compression_preserve_max_tokens": 400},
        "session_memory": {"enabled": False},
    })
    statuses = []
    with AgentSession.create(project, model=MODEL, base_url=llama_server.base_url, settings=settings,
                             approval="never", environ={}) as session:
        for topic in ("billing", "shipping", "storage", "search", "backup", "login", "report", "export"):
            statuses.append(session.run_turn(f"Read these notes, reply OK.\n{_paragraph(topic, 6)}").status)
            if any(r["type"] == "compact_boundary" for r in read_records(session.transcript_path)):
                break
        records = read_records(session.transcript_path)
    boundaries = [r for r in records if r["type"] == "compact_boundary"]
    assert boundaries, f"no compaction after {len(statuses)} turns; server log:\n{llama_server.log_tail()}"
    assert boundaries[0]["trigger"] == "reactive", boundaries[0]
    assert statuses[-1] in ("done", "max_steps"), statuses
    after = records[records.index(boundaries[0]) + 1:]
    assert any(r["type"] == "transcript_message" and r["role"] == "assistant" for r in after), \
        "no model reply after the compact: the turn did not go on"


def test_a_rambling_reply_is_cut_by_the_output_bound(llama_server: LlamaServer) -> None:
    """``ignore_eos`` (a per-model request option) makes SmolLM2 ramble; max_output_tokens ends it."""
    model = _model(llama_server, max_output_tokens=40, model_options={"smollm2": {"ignore_eos": True}})
    chunks = list(model.stream([HumanMessage("Count from 1 to 1000, one number per line.")]))
    usage = next(c.usage_metadata for c in chunks if c.usage_metadata)
    finish = next(c.response_metadata.get("finish_reason") for c in reversed(chunks)
                  if c.response_metadata.get("finish_reason"))
    assert usage["output_tokens"] == 40 and finish == "length"


def test_a_rambling_stream_is_ended_by_the_total_deadline(llama_server: LlamaServer) -> None:
    """Output bound far away, deadline near: the stream is closed at the deadline and classed so
    (not retried: the same request would ramble as long again)."""
    prompt = [HumanMessage("Count from 1 to 1000, one number per line.")]
    first = time.monotonic()  # the first token's latency now (and the prompt cached): on a loaded box a
    next(iter(_model(llama_server, max_output_tokens=1).stream(prompt)))  # fixed 2 s could end before it
    deadline = max(2.0, 4 * (time.monotonic() - first) + 1.0)
    model = _model(llama_server, max_output_tokens=1500, request_timeout_seconds=deadline,
                   model_options={"smollm2": {"ignore_eos": True}})
    start = time.monotonic()
    received = 0
    with pytest.raises(Exception) as info:
        for _ in model.stream(prompt):
            received += 1
    elapsed = time.monotonic() - start
    assert classify(info.value) is ErrorKind.DEADLINE, repr(info.value)
    assert received > 0, "the deadline should cut a stream that was flowing"
    assert elapsed < deadline + 60, elapsed  # 1,500 tokens take far longer than the deadline; generous for CI


def test_a_server_without_tool_support_gives_one_line_and_no_retry(no_tools_server: LlamaServer,
                                                                  project: Path) -> None:
    run = run_cli(no_tools_server, "List the files here.", cwd=project,
                  settings={"MTAGENT_AGENT__MAX_RETRIES": "3", "MTAGENT_AGENT__RETRY_BASE_SECONDS": "5"})
    assert run.code == 1, (run.code, run.stderr)
    errors = [line for line in run.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and "--jinja" in errors[0], run.stderr
    assert "max_retries" not in run.stderr and "Traceback" not in run.stderr
    refusals = [line for line in no_tools_server.log.read_text(errors="replace").splitlines()
                if "got exception" in line and "--jinja" in line]  # llama-server logs each refused request
    assert len(refusals) == 1, no_tools_server.log_tail()
