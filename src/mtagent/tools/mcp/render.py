"""An MCP tool result as the model reads it: text, with references for everything else.

A ``CallToolResult`` holds content blocks — text, images, audio, links to resources, embedded
resources — and optionally structured content. The model gets the text as is (the engine then
redacts it and applies the tool-result budget: a 5 MB result becomes an artifact and a preview,
like a built-in tool's), resources as references (URI, type, size), embedded text resources with
their text, and binary data only as a one-line placeholder — base64 never reaches the window.
Structured content is added as JSON when the result has no text block of its own (the spec asks
servers to send one with the serialized JSON, so it is not repeated).

Blocks are read by attribute or key so that the MCP SDK's pydantic models and plain dicts
(what a server sent, already parsed) render the same; nothing here imports the SDK.
"""

from __future__ import annotations

import json
from typing import Any

from mtagent.tools.mcp.untrusted import clean_text
from mtagent.tools.text_files import human_size

MAX_LISTED = 20  # images / resources named in the result's metadata, at most
EMPTY_RESULT = "(the tool returned no content)"


def get_field(block: Any, name: str, alias: str | None = None) -> Any:
    """``name`` of an SDK object, or of its JSON form (a dict), where it may be spelt ``alias`` (``mimeType``)."""
    if isinstance(block, dict):
        return block.get(alias or name, block.get(name))
    return getattr(block, name, None)


def _size(data: Any) -> int:
    """Decoded bytes of base64 ``data`` (estimated from its length; never decoded)."""
    text = data if isinstance(data, str) else ""
    return max(0, len(text) * 3 // 4 - text[-2:].count("="))


def _resource(block: Any, meta: dict[str, Any]) -> str:
    res = get_field(block, "resource") or {}
    uri = clean_text(get_field(res, "uri") or "", 500)
    mime = clean_text(get_field(res, "mime_type", "mimeType") or "unknown type", 100)
    meta["resources"].append(uri)
    text = get_field(res, "text")
    if isinstance(text, str):
        return f"[resource {uri} ({mime})]\n{text}"
    size = _size(get_field(res, "blob"))
    return f"[resource {uri}: {mime}, {human_size(size)} of binary data, not shown]"


def _block(block: Any, meta: dict[str, Any]) -> str:
    kind = str(get_field(block, "type") or "unknown")
    meta["blocks"][kind] = meta["blocks"].get(kind, 0) + 1
    if kind == "text":
        return str(get_field(block, "text") or "")
    if kind in ("image", "audio"):
        mime = clean_text(get_field(block, "mime_type", "mimeType") or "unknown type", 100)
        size = _size(get_field(block, "data"))
        meta["media"].append({"type": kind, "mime": mime, "bytes": size})
        return f"[{kind}: {mime}, {human_size(size)}, not shown]"
    if kind == "resource_link":
        uri = clean_text(get_field(block, "uri") or "", 500)
        name = clean_text(get_field(block, "name") or "", 200)
        mime = get_field(block, "mime_type", "mimeType")
        size = get_field(block, "size")
        details = ", ".join(p for p in (clean_text(mime, 100) if mime else "",
                                        human_size(size) if isinstance(size, int) else "") if p)
        meta["resources"].append(uri)
        desc = get_field(block, "description")
        line = f"[resource link: {name} <{uri}>{f' ({details})' if details else ''}]"
        return line + (f" {clean_text(desc, 300)}" if desc else "")
    if kind == "resource":
        return _resource(block, meta)
    return f"[{clean_text(kind, 40)} content, not shown]"


def render_result(result: Any, *, server: str, tool: str) -> tuple[str, dict[str, Any]]:
    """``(content, tool_use_result)`` of one ``CallToolResult`` (or its dict form)."""
    meta: dict[str, Any] = {"kind": "mcp", "server": server, "tool": tool,
                            "is_error": bool(get_field(result, "is_error", "isError")),
                            "blocks": {}, "media": [], "resources": []}
    parts: list[str] = []
    texts: list[str] = []
    for block in get_field(result, "content") or []:
        rendered = _block(block, meta)
        parts.append(rendered)
        if get_field(block, "type") == "text":
            texts.append(rendered)
    structured = get_field(result, "structured_content", "structuredContent")
    if structured is not None:
        meta["structured"] = True
        if not texts:  # a text block is the server's own rendering of it (the spec asks for one)
            parts.append("structured content:\n" + json.dumps(structured, indent=1, ensure_ascii=False,
                                                                default=str))
    meta["media"] = meta["media"][:MAX_LISTED]
    meta["resources"] = meta["resources"][:MAX_LISTED]
    content = "\n".join(p for p in parts if p) or EMPTY_RESULT
    return content, meta
