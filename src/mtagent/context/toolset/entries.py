"""One row of the tool catalog: a tool (built-in, MCP or skill) as context — its schema and its price.

The catalog's input is deliberately plain so every source fits: a LangChain ``BaseTool`` (built-in
tools, and MCP tools as the MCP client hands them over, named ``mcp__<server>__<tool>``), an OpenAI
function dict, or an Agent Skill (listed by name and description only; its body is loaded by the
``skill`` tool). :func:`entry_for` reads what the catalog needs once: the OpenAI schema (full),
its tokens, a one-line description for the deferred listing, and the parameter names for search.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mtagent.context.toolset.frontmatter import CONTROL
from mtagent.context.tokens import DEFAULT_ENCODING
from mtagent.context.toolset.schemas import first_sentence, openai_schema, schema_tokens

BUILTIN = "builtin"
SKILL = "skill"
# The one spelling of an MCP tool's name, ``mcp__<server>__<tool>``: the MCP client names tools with
# it, approvals ask for them by default, the catalog groups them by server. Context is the lowest
# layer all three may import.
MCP_PREFIX = "mcp__"
MCP_SEPARATOR = "__"
LISTING_DESCRIPTION_CHARS = 100  # one line of the deferred listing, at most


def is_mcp_tool(name: str) -> bool:
    """Whether ``name`` is spelled like an MCP server's tool (``mcp__…``)."""
    return name.startswith(MCP_PREFIX)


def mcp_source(name: str) -> str | None:
    """``mcp:<server>`` for a tool named ``mcp__<server>__<tool>``; None for any other name."""
    if not is_mcp_tool(name):
        return None
    server, sep, tool = name[len(MCP_PREFIX):].partition(MCP_SEPARATOR)
    return f"mcp:{server}" if sep and server and tool else None


def one_line(text: str, limit: int = LISTING_DESCRIPTION_CHARS) -> str:
    """``text`` as one printable line of at most ``limit`` characters: an untrusted description
    never brings a newline, a terminal escape or a bidi override into the listing."""
    cleaned = CONTROL.sub(" ", unicodedata.normalize("NFC", str(text or "")))
    return first_sentence(" ".join(cleaned.split()), limit)


def parameter_names(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """The top-level parameter names of an OpenAI function schema."""
    params = (schema.get("function") or {}).get("parameters") or {}
    props = params.get("properties") if isinstance(params, dict) else None
    return tuple(str(k) for k in props) if isinstance(props, dict) else ()


@dataclass(slots=True)
class ToolEntry:
    """One tool in the catalog (see the module docstring).

    ``core`` tools are always sent in full; the others may be deferred. ``tool`` is what a front
    end binds and runs (a ``BaseTool`` or a schema dict); ``schema`` its full OpenAI schema.
    """

    name: str
    source: str
    description: str
    schema: dict[str, Any]
    tokens: int
    parameters: tuple[str, ...] = ()
    core: bool = False
    tool: Any = None
    listing: str = field(default="")

    def __post_init__(self) -> None:
        if not self.listing:
            self.listing = one_line(self.description)

    @property
    def is_mcp(self) -> bool:
        return self.source.startswith("mcp:")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "description": self.listing, "tokens": self.tokens,
                "core": self.core, "parameters": list(self.parameters)}


def _declared_mcp_source(tool: Any) -> str | None:
    """``mcp:…`` when a tool says it belongs to the MCP client (its ``metadata["source"]``): the
    resource tools (``mcp_list_resources``), deferred and grouped like the servers' own tools."""
    metadata = getattr(tool, "metadata", None)
    declared = metadata.get("source") if isinstance(metadata, dict) else None
    return declared if isinstance(declared, str) and declared.startswith("mcp:") else None


def entry_for(tool: Any, *, source: str | None = None, core: bool | None = None,
              encoding: str = DEFAULT_ENCODING) -> ToolEntry:
    """The catalog entry of ``tool`` (a ``BaseTool``, a callable or an OpenAI schema dict).

    ``source`` defaults to ``mcp:<server>`` for ``mcp__<server>__<tool>`` names, else ``builtin``;
    ``core`` defaults to True for built-in tools (they are the agent's workbench: never deferred).
    """
    schema = openai_schema(tool)
    function = schema["function"]
    name = str(function["name"])
    src = source or mcp_source(name) or _declared_mcp_source(tool) or BUILTIN
    return ToolEntry(name=name, source=src, description=str(function.get("description") or ""), schema=schema,
                     tokens=schema_tokens([schema], encoding), parameters=parameter_names(schema),
                     core=(src == BUILTIN) if core is None else core, tool=tool)
