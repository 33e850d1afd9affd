"""The recall tool: search the project's index, re-hydrate by ref, refuse bad input cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from mtagent import paths
from mtagent.config import Settings
from mtagent.session import schema
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.transcript import TranscriptWriter
from mtagent.tools import ToolSession, default_tools


def _tools(root: Path, settings: Settings | None = None) -> dict:
    artifacts = ArtifactStore.for_session(root, "live")
    return {t.name: t for t in default_tools(root, ToolSession(artifacts=artifacts, sink=[]), settings or Settings())}


def _call(tool, **args) -> ToolMessage:
    msg = tool.invoke({"name": "recall", "args": args, "id": "call_1", "type": "tool_call"})
    assert isinstance(msg, ToolMessage)
    return msg


def _earlier_session(root: Path) -> None:
    with TranscriptWriter(paths.session_transcript_path(root, "old"), session_id="old") as writer:
        writer.append(schema.message_to_record(HumanMessage("the flaky test is test_payment_retry_backoff", id="h1")))


def test_recall_finds_an_earlier_session_and_rehydrates(tmp_path: Path) -> None:
    _earlier_session(tmp_path)
    tool = _tools(tmp_path)["recall"]
    msg = _call(tool, query="test_payment_retry_backoff")
    assert msg.status == "success"
    assert "session old message h1" in msg.content and "ref: msg:old:h1" in msg.content
    assert msg.artifact["hits"] == ["msg:old:h1"]
    full = _call(tool, ref="msg:old:h1")
    assert full.content == "the flaky test is test_payment_retry_backoff"


@pytest.mark.parametrize("args", [{"query": ""}, {"ref": "msg:nope:x"}, {"query": "x", "scope": "session"}])
def test_bad_input_is_an_error_result_not_an_exception(tmp_path: Path, args: dict) -> None:
    tool = _tools(tmp_path)["recall"]
    msg = _call(tool, **args)
    assert msg.status == "error" or "No recalled items" in msg.content


@pytest.mark.parametrize("query", ['"', "NEAR(", "*", "x" * 100_000])
def test_hostile_queries_answer_without_error(tmp_path: Path, query: str) -> None:
    _earlier_session(tmp_path)
    msg = _call(_tools(tmp_path)["recall"], query=query)
    assert msg.status == "success" and "No recalled items" in msg.content


def test_recall_can_be_switched_off(tmp_path: Path) -> None:
    settings = Settings.model_validate({"recall": {"enabled": False}})
    assert "recall" not in _tools(tmp_path, settings)
