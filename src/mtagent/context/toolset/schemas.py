"""The tool schemas a session sends: in full, or compact when they would crowd a small window.

With a 4,096-token window the system prompt and the full schemas of mtagent's eleven tools took
three quarters of it before the user said a word. Every call pays that fixed cost again, so a
small window gets a *compact* schema set instead: the optional tools (``agent.compact_drop_tools``:
subagents, recall, long-term memory) are not offered, each description is cut to its first
sentence, parameter descriptions and defaults go, and ``anyOf [X, null]`` of an optional parameter
becomes ``X`` (leaving it out is how a model says null). Every parameter, type, bound, enum and the
``required`` list stay, so a call that fits the compact schema is a valid call of the real tool.

:func:`choose_schemas` measures the full set with the real token counter and switches to compact
when it would take more than ``agent.tool_schema_max_share`` of the window; ``agent.tool_schemas``
forces either mode. The :class:`SchemaChoice` says which mode, why, and the numbers — ``/context``
shows it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.utils.function_calling import convert_to_openai_tool

from mtagent.config_sections import COMPACT_DESCRIPTION_CHARS
from mtagent.context.tokens import DEFAULT_ENCODING, count_text_tokens

SchemaMode = Literal["full", "compact"]
# JSON-schema keys that only document a parameter; the compact set leaves them out. ``default`` too:
# it only says what leaving an optional parameter out means (the tool applies it), and a 4K window
# cannot pay for it on every call.
_DOC_KEYS = frozenset({"description", "title", "examples", "default"})
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")  # "e.g. src" goes on


def openai_schema(tool: Any) -> dict[str, Any]:
    """The OpenAI function schema of a tool (a ``BaseTool``, a callable or a schema dict)."""
    return convert_to_openai_tool(tool)


def schema_tokens(schemas: Iterable[Mapping[str, Any]], encoding: str = DEFAULT_ENCODING) -> int:
    """Tokens of the schemas as they are counted for the window (the engine's ``tools`` bucket), in the
    session's encoding (``context.encoding``): every front end counts a request's tools with this."""
    return sum(count_text_tokens(json.dumps(s, sort_keys=True), encoding) for s in schemas)


def first_sentence(text: str, limit: int = COMPACT_DESCRIPTION_CHARS) -> str:
    """The first sentence of ``text`` (its first line at most), cut at a word within ``limit`` chars."""
    line = text.strip().split("\n", 1)[0].strip()
    sentence = _SENTENCE_END.split(line, maxsplit=1)[0]
    if len(sentence) <= limit:
        return sentence
    cut = sentence[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def _without_null(options: list[Any]) -> Any | None:
    """``X`` from ``anyOf [X, {"type": "null"}]``; None for any other union."""
    rest = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
    return rest[0] if len(rest) == 1 and len(options) == 2 else None


def _compact_node(node: Any, *, optional: bool = False) -> Any:
    """A JSON-schema node without its documentation (recursively); see the module docstring."""
    if isinstance(node, list):
        return [_compact_node(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    if optional and isinstance(node.get("anyOf"), list) and (single := _without_null(node["anyOf"])) is not None:
        merged = {k: v for k, v in node.items() if k != "anyOf"}
        merged.update(single if isinstance(single, dict) else {})
        if merged.get("default", 0) is None:
            del merged["default"]
        return _compact_node(merged)
    required = set(node.get("required") or []) if isinstance(node.get("required"), list) else set()
    for key, value in node.items():
        if key in _DOC_KEYS and not isinstance(value, dict):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _compact_node(sub, optional=name not in required) for name, sub in value.items()}
        else:
            out[key] = _compact_node(value)
    return out


def compact_schema(tool: Any, description_chars: int = COMPACT_DESCRIPTION_CHARS) -> dict[str, Any]:
    """The compact OpenAI schema of ``tool``: first sentence, parameters without their documentation."""
    schema = copy.deepcopy(openai_schema(tool))
    function = schema["function"]
    function["description"] = first_sentence(str(function.get("description") or ""), description_chars)
    if isinstance(function.get("parameters"), dict):
        function["parameters"] = _compact_node(function["parameters"])
    return schema


@dataclass(slots=True, frozen=True)
class SchemaChoice:
    """Which schema set a session sends and why (``/context`` shows it)."""

    mode: SchemaMode
    setting: str  # agent.tool_schemas: auto | full | compact
    window: int
    max_share: float
    full_tokens: int  # system prompt + schemas, everything offered in full
    tokens: int  # system prompt + schemas as sent
    schema_tokens: int  # the schemas as sent (the ``tools`` bucket)
    dropped: tuple[str, ...] = ()
    offered: tuple[str, ...] = field(default=())

    @property
    def share(self) -> float:
        return self.tokens / self.window if self.window else 0.0

    @property
    def full_share(self) -> float:
        return self.full_tokens / self.window if self.window else 0.0

    @property
    def reason(self) -> str:
        limit = f"agent.tool_schema_max_share {self.max_share:.0%}"
        if self.setting != "auto":
            why = f"forced by agent.tool_schemas = {self.setting}"
        elif self.mode == "compact":
            why = f"full schemas + system prompt would take {self.full_share:.0%} of the window (> {limit})"
        else:
            why = f"schemas + system prompt take {self.full_share:.0%} of the window (<= {limit})"
        over = f"; still over {limit}" if self.mode == "compact" and self.share > self.max_share else ""
        return f"{why}{over}"

    def describe(self) -> str:
        """One line: mode, size, share, what was left out, and why."""
        text = (f"tool schemas: {self.mode} — {self.tokens:,} tokens with the system prompt "
                f"({self.share:.0%} of {self.window:,})")
        if self.mode == "compact":
            text += f", full would be {self.full_tokens:,}"
        if self.dropped:
            text += f"; not offered: {', '.join(self.dropped)}"
        return f"{text}; {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "setting": self.setting, "window": self.window, "max_share": self.max_share,
                "full_tokens": self.full_tokens, "tokens": self.tokens, "schema_tokens": self.schema_tokens,
                "share": round(self.share, 4), "dropped": list(self.dropped), "reason": self.reason}


SystemTokens = Callable[[Sequence[Any], SchemaMode], int]


def choose_schemas(tools: Sequence[Any], *, window: int, setting: str, max_share: float,
                   drop: Iterable[str], system_tokens: SystemTokens,
                   encoding: str = DEFAULT_ENCODING) -> tuple[list[Any], SchemaChoice]:
    """The tools to bind (``BaseTool`` objects in full; OpenAI schema dicts when compact) and the choice.

    ``system_tokens(offered_tools, mode)`` counts the system messages that go with a schema set
    (the compact prompt leaves out its ``## Tools`` list: the schemas already name every tool).
    """
    full_schemas = [openai_schema(t) for t in tools]
    full_schema_tokens = schema_tokens(full_schemas, encoding)
    full_tokens = full_schema_tokens + system_tokens(tools, "full")
    wanted = setting if setting in ("full", "compact") else (
        "compact" if full_tokens > max_share * window else "full")
    if wanted == "full":
        names = tuple(s["function"]["name"] for s in full_schemas)
        return list(tools), SchemaChoice("full", setting, window, max_share, full_tokens, full_tokens,
                                         full_schema_tokens, (), names)
    dropped_names = set(drop)
    kept = [t for t, s in zip(tools, full_schemas) if s["function"]["name"] not in dropped_names]
    dropped = tuple(s["function"]["name"] for s in full_schemas if s["function"]["name"] in dropped_names)
    compact = [compact_schema(t) for t in kept]
    compact_tokens = schema_tokens(compact, encoding)
    tokens = compact_tokens + system_tokens(compact, "compact")
    names = tuple(s["function"]["name"] for s in compact)
    return compact, SchemaChoice("compact", setting, window, max_share, full_tokens, tokens, compact_tokens,
                                 dropped, names)
