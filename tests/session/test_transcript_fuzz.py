"""Bad input never crashes a reader, never reaches the CLI as a traceback, never changes the file."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from typer.testing import CliRunner

from mtagent import paths
from mtagent.cli.app import app
from mtagent.context.view import load_transcript
from mtagent.errors import ArtifactPathError, MTAgentError
from mtagent.session import schema
from mtagent.session.index import locate_resume_point
from mtagent.session.reader import ReadReport, read_records

GOOD = [
    schema.session_start_record("fz", "/p", "m", "0.1.0"),
    schema.message_to_record(HumanMessage("hi", id="u1")),
    schema.message_to_record(AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "grep", "args": {}}])),
    schema.message_to_record(ToolMessage("out", tool_call_id="c1", id="t1",
                                         artifact={"kind": "text", "artifact": "tool-results/c1.txt"})),
    schema.boundary_record(summary="s", first_kept_id="u1", boundary_id="b1"),
    schema.microcompact_record("time", ["t1"]),
]
GOOD_LINES = [schema.dumps_record(r) for r in GOOD]

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
field_names = st.sampled_from(["type", "schema_version", "role", "id", "content", "tool_calls", "tool_call_id",
                               "status", "toolUseResult", "first_kept_id", "cleared_ids", "summary", "kept_count"])
type_names = st.sampled_from([*schema.RECORD_TYPES, "future_thing", "", "x" * 300])


@st.composite
def mangled_line(draw) -> bytes:
    kind = draw(st.sampled_from(["bytes", "truncate", "wrong_type", "unknown", "huge", "traversal", "good"]))
    base = dict(draw(st.sampled_from(GOOD)))
    if kind == "bytes":
        return draw(st.binary(max_size=200)).replace(b"\n", b" ") + b"\n"
    if kind == "truncate":
        line = schema.dumps_record(base)
        return line[: draw(st.integers(1, len(line) - 1))] + b"\n"
    if kind == "wrong_type":
        base[draw(field_names)] = draw(json_values)
    elif kind == "unknown":
        base["type"] = draw(type_names)
        base["schema_version"] = draw(st.integers(1, 9))
    elif kind == "huge":
        base["content"] = "h" * draw(st.integers(100_000, 400_000))
    elif kind == "traversal":
        base = schema.message_to_record(ToolMessage("x", tool_call_id="c1", id="t9", artifact={
            "kind": "text", "artifact": draw(st.sampled_from(["../../etc/passwd", "/etc/passwd", "a/../../..",
                                                              "tool-results/\x00x", "C:\\win"]))}))
    return json.dumps(base).encode() + b"\n"


file_bodies = st.lists(st.sampled_from(GOOD_LINES) | mangled_line(), min_size=0, max_size=12).map(b"".join)
tails = st.sampled_from([b"", b'{"type":"transcript_mes', b"\xff\xfe", b"[1,2"])


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(body=file_bodies, tail=tails, skip=st.booleans())
def test_readers_give_records_or_typed_errors_and_never_modify_the_file(tmp_path, body, tail, skip):
    path = tmp_path / "fz.jsonl"
    path.write_bytes(body + tail)
    before = _sha(path)
    try:
        read_records(path, skip_corrupt=skip, report=ReadReport())
        locate_resume_point(path)
        resumed = load_transcript(path, skip_corrupt=skip)
        for message in resumed.messages:
            artifact = message.artifact if isinstance(message, ToolMessage) else None
            if isinstance(artifact, dict) and isinstance(artifact.get("artifact"), str):
                try:
                    resumed.artifacts.read_text(artifact["artifact"])
                except ArtifactPathError:
                    pass
    except MTAgentError:
        assert not skip, "with skip_corrupt a damaged line is skipped, never raised"
    assert _sha(path) == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(body=file_bodies, tail=tails, command=st.sampled_from([
    ["show"], ["show", "--full"], ["show", "--skip-corrupt"], ["show", "--view"], ["show", "--view", "--full"],
    ["export", "--format", "md"], ["export", "--format", "jsonl", "--skip-corrupt"], ["list"]]))
def test_no_traceback_reaches_the_cli_on_bad_transcripts(tmp_path, body, tail, command):
    path = paths.session_transcript_path(tmp_path, "fz")
    paths.ensure_dir(path.parent)
    path.write_bytes(body + tail)
    before = _sha(path)
    args = ["sessions", *command[:1], *(["fz"] if command[0] != "list" else []), *command[1:],
            "--cwd", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert _sha(path) == before


@pytest.mark.parametrize("bad_id", ["../../etc", "a/b", "..", "", "x" * 200])
def test_bad_session_ids_are_usage_errors(tmp_path, bad_id):
    result = CliRunner().invoke(app, ["sessions", "show", bad_id, "--cwd", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
