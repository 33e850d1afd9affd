"""A server's own words (names, descriptions, schemas, instructions) are cleaned and capped once, on arrival."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from hypothesis import given, strategies as st

from tools.mcp.mcp_helpers import call, fixture_server, mcp_settings, tools_of

from mtagent.tools.mcp import McpManager
from mtagent.tools.mcp.render import render_result
from mtagent.tools.mcp.untrusted import (
    MAX_TOOL_NAME,
    PLAIN_SCHEMA,
    SCHEMA_MAX_DEPTH,
    clean_schema,
    clean_text,
    tool_name,
)

_ESCAPES = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


def test_an_evil_server_s_descriptions_and_instructions_reach_the_model_clean_and_capped(project: Path) -> None:
    settings = mcp_settings({"evil": fixture_server("--evil")}, description_max_chars=300, instructions_max_chars=500)
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        echo = tools["mcp__evil__echo"]
        assert not any(c in echo.description for c in _ESCAPES)
        assert len(echo.description) < 300 + 60 and "[cut:" in echo.description
        text = manager.instructions()["evil"]
        assert not any(c in text for c in _ESCAPES)
        assert "not from the user" in text and text.startswith('<mcp_server_instructions server="evil">')
        assert len(text) < 500 + 300
        status = manager.servers()[0]
        assert not any(c in status.instructions for c in _ESCAPES)
        assert "mcp__evil__we_rd_name____x" in tools  # a name no provider accepts became a valid one
        assert call(tools["mcp__evil__we_rd_name____x"]).content == "weird"  # and still calls the real tool
        assert any("tool huge_schema: its input schema" in note for note in manager.notes)  # replaced, and said so
        assert tools["mcp__evil__huge_schema"].args_schema == PLAIN_SCHEMA


@given(st.text(min_size=0, max_size=300))
def test_clean_text_never_leaves_a_control_character(text: str) -> None:
    cleaned = clean_text(text, 10_000)
    assert not any(ord(c) < 32 and c not in "\n\t" for c in cleaned)
    assert not any(0x7F <= ord(c) <= 0x9F for c in cleaned)
    assert "\u202e" not in cleaned


@given(st.text(min_size=1, max_size=120), st.text(min_size=0, max_size=200))
def test_tool_names_are_always_valid_function_names(server: str, tool: str) -> None:
    from mtagent.tools.mcp.untrusted import server_key

    name = tool_name(server_key(server), tool)
    assert 0 < len(name) <= MAX_TOOL_NAME
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in name)
    assert name.startswith("mcp__")


def test_long_tool_names_stay_distinct() -> None:
    a, b = tool_name("srv", "x" * 100 + "a"), tool_name("srv", "x" * 100 + "b")
    assert a != b and len(a) == len(b) == MAX_TOOL_NAME


def test_schemas_too_big_too_deep_or_not_objects_become_a_plain_object() -> None:
    deep: dict = {"type": "object"}
    node = deep
    for _ in range(SCHEMA_MAX_DEPTH + 5):
        node["properties"] = {"x": {"type": "object"}}
        node = node["properties"]["x"]
    huge = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "d" * 100} for i in range(500)}}
    for schema in (deep, huge, {"type": "string"}, ["not", "a", "dict"], {"type": "object", "default": object()}):
        cleaned, note = clean_schema(schema, description_limit=2_000, max_chars=16_384)
        assert cleaned == PLAIN_SCHEMA and note
    good = {"type": "object", "properties": {"q": {"type": "string", "description": "x\x1b[31my" + "z" * 5000}}}
    cleaned, note = clean_schema(good, description_limit=100, max_chars=16_384)
    assert note == "" and "\x1b" not in json.dumps(cleaned) and len(cleaned["properties"]["q"]["description"]) < 160


def test_binary_content_becomes_a_placeholder_never_base64() -> None:
    data = base64.b64encode(b"\x00" * 600_000).decode()
    result = {"content": [{"type": "image", "data": data, "mimeType": "image/png"},
                          {"type": "audio", "data": data, "mimeType": "audio/wav"},
                          {"type": "resource", "resource": {"uri": "file:///x.bin", "mimeType": "application/zip",
                                                            "blob": data}},
                          {"type": "resource", "resource": {"uri": "file:///notes.md", "mimeType": "text/markdown",
                                                            "text": "# notes"}},
                          {"type": "resource_link", "uri": "file:///big.log", "name": "big.log", "size": 5_000_000},
                          {"type": "hologram"}]}
    content, meta = render_result(result, server="s", tool="t")
    assert data[:100] not in content and len(content) < 1_000
    assert "[image: image/png, 585.9 KB, not shown]" in content
    assert "[audio: audio/wav, 585.9 KB, not shown]" in content
    assert "[resource file:///x.bin: application/zip, 585.9 KB of binary data, not shown]" in content
    assert "[resource file:///notes.md (text/markdown)]\n# notes" in content
    assert "[resource link: big.log <file:///big.log> (4.8 MB)]" in content
    assert "[hologram content, not shown]" in content
    assert meta["media"][0] == {"type": "image", "mime": "image/png", "bytes": 600_000}
    assert meta["resources"] == ["file:///x.bin", "file:///notes.md", "file:///big.log"]


def test_structured_content_is_shown_only_when_no_text_carries_it() -> None:
    content, meta = render_result({"content": [], "structuredContent": {"temp": 21}}, server="s", tool="t")
    assert json.loads(content.split("\n", 1)[1]) == {"temp": 21} and meta["structured"]
    content, _ = render_result({"content": [{"type": "text", "text": "21 degrees"}], "structuredContent": {"temp": 21}},
                               server="s", tool="t")
    assert content == "21 degrees"
    assert render_result({"content": []}, server="s", tool="t")[0] == "(the tool returned no content)"


def test_a_tool_reported_error_is_an_error_result(project: Path) -> None:
    with McpManager.for_project(mcp_settings({"fx": fixture_server()}), project) as manager:
        tools = tools_of(manager)
        result = call(tools["mcp__fx__count"], path=str(project / "no" / "such" / "dir" / "f"))
        assert result.status == "error" and "reported a failure" in result.content
        result = call(tools["mcp__fx__echo"])  # a required argument missing: the server's validation says so
        assert result.status == "error" and "text" in result.content
