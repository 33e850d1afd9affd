"""Compact tool schemas (context/toolset/schemas.py): shorter, yet every call that fits them is a valid call of the real tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.tools import tool

from mtagent.tools import default_tools
from mtagent.context.toolset.schemas import (
    choose_schemas,
    compact_schema,
    first_sentence,
    openai_schema,
    schema_tokens,
)


@pytest.fixture
def tools(tmp_path: Path):
    return default_tools(tmp_path)


def _no_system(_tools, _mode) -> int:
    return 0


def _property_names(schema: dict) -> set[str]:
    return set(schema["function"]["parameters"].get("properties", {}))


def test_first_sentence_cuts_at_the_sentence_then_at_a_word() -> None:
    assert first_sentence("Read a file. Output has line numbers.") == "Read a file."
    assert first_sentence("List a folder: e.g. src/.\nMore.") == "List a folder: e.g. src/."
    long = "word " * 60
    cut = first_sentence(long, 40)
    assert cut.endswith("…") and len(cut) <= 41 and not cut[:-1].endswith(" ")
    assert first_sentence("") == ""


def test_compact_keeps_every_parameter_type_bound_and_requirement(tools) -> None:
    for t in tools:
        full, small = openai_schema(t), compact_schema(t)
        assert small["function"]["name"] == full["function"]["name"]
        assert _property_names(small) == _property_names(full), t.name
        assert small["function"]["parameters"].get("required") == full["function"]["parameters"].get("required")
        assert "description" not in json.dumps(small["function"]["parameters"]), t.name
        assert schema_tokens([small]) < schema_tokens([full]), t.name
    read = compact_schema(next(t for t in tools if t.name == "read_file"))["function"]["parameters"]
    assert read["properties"]["offset"] == {"minimum": 1, "type": "integer"}  # anyOf [int, null] → int, bound kept


def test_compact_schemas_are_valid_json_schema_and_their_calls_validate_against_the_real_tool(tools) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    samples = {"string": "src/app.py", "integer": 3, "number": 2.5, "boolean": True}

    def sample(prop: dict):  # a value of the type the compact schema gives (lists and objects: built from their parts)
        if "enum" in prop:
            return prop["enum"][0]
        kind = prop.get("type", "string")
        if kind == "array":
            return [sample(prop.get("items", {}))]
        if kind == "object":
            return {name: sample(sub) for name, sub in prop.get("properties", {}).items()}
        return samples[kind]

    for t in tools:
        params = compact_schema(t)["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(params)
        args = {}
        for name, prop in params["properties"].items():  # every parameter, as the compact schema types it
            args[name] = sample(prop)
        jsonschema.validate(args, params)
        t.args_schema.model_validate(args)  # the real tool accepts what the compact schema allowed


def test_unions_nested_objects_and_a_parameter_named_description_survive() -> None:
    @tool
    def note(description: str, where: dict[str, int] | None = None, size: int | str = 1) -> str:
        """Take a note. A much longer explanation follows here."""
        return "ok"

    small = compact_schema(note)
    props = small["function"]["parameters"]["properties"]
    assert set(props) == {"description", "where", "size"}
    assert props["description"] == {"type": "string"}
    assert props["where"]["type"] == "object" and props["where"]["additionalProperties"] == {"type": "integer"}
    assert "anyOf" in props["size"]  # a real union (not X-or-null) stays a union
    assert "default" not in props["size"]  # a default only says what leaving it out means: the tool applies it
    assert small["function"]["description"] == "Take a note."
    assert small["function"]["parameters"]["required"] == ["description"]


def test_auto_picks_compact_when_full_schemas_exceed_the_share_and_drops_optional_tools(tools) -> None:
    full_tokens = schema_tokens(openai_schema(t) for t in tools)
    offered, choice = choose_schemas(tools, window=4096, setting="auto", max_share=0.3,
                                     drop=["recall", "save_memory", "task"], system_tokens=_no_system)
    assert choice.mode == "compact" and choice.full_tokens == full_tokens > 0.3 * 4096
    assert set(choice.dropped) == {"recall", "save_memory"}  # task is not among default_tools
    assert all(isinstance(s, dict) for s in offered)
    assert {s["function"]["name"] for s in offered} == {t.name for t in tools} - {"recall", "save_memory"}
    assert choice.schema_tokens == schema_tokens(offered) < full_tokens / 2
    assert "would take" in choice.reason and choice.to_dict()["mode"] == "compact"


def test_auto_keeps_full_schemas_in_a_large_window_and_settings_force_either(tools) -> None:
    offered, choice = choose_schemas(tools, window=131072, setting="auto", max_share=0.3, drop=["recall"],
                                     system_tokens=_no_system)
    assert choice.mode == "full" and offered == list(tools) and not choice.dropped
    _, forced = choose_schemas(tools, window=131072, setting="compact", max_share=0.3, drop=[],
                               system_tokens=_no_system)
    assert forced.mode == "compact" and "forced by agent.tool_schemas = compact" in forced.reason
    offered, forced = choose_schemas(tools, window=4096, setting="full", max_share=0.3, drop=["recall"],
                                     system_tokens=_no_system)
    assert forced.mode == "full" and offered == list(tools)


def test_the_system_prompt_counts_toward_the_share() -> None:
    @tool
    def tiny(x: int) -> str:
        """Tiny."""
        return "ok"

    def big_system(_tools, mode):
        return 1000 if mode == "full" else 400

    _, choice = choose_schemas([tiny], window=4096, setting="auto", max_share=0.2, drop=[],
                               system_tokens=big_system)
    assert choice.mode == "compact" and choice.tokens == 400 + choice.schema_tokens
    assert "still over" not in choice.reason
    _, choice = choose_schemas([tiny], window=2048, setting="auto", max_share=0.1, drop=[],
                               system_tokens=big_system)
    assert choice.mode == "compact" and "still over" in choice.reason  # said, not hidden
