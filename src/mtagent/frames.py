"""The tags mtagent frames untrusted text with, and the one way to put text inside one.

A frame (``<mcp_server_instructions server="x">…</mcp_server_instructions>``, ``<skills>``,
``<deferred-tools>``, ``<project_context>``, ``<persisted-output>`` …) tells the model whose words
it is reading: a server's, a skill's, a tool's, the repository's. It holds only if the text inside
cannot close it (``</skills>`` in a skill's description, then words that read as the user's) or
open another one (a fake ``<session_context>``). So :func:`frame` is how a frame is built, and the
text put inside it goes through :func:`neutralize`: every opening or closing tag of
:data:`FRAME_TAGS` — any case, spaces or ``/`` anywhere inside the brackets — loses its ``<`` to
``‹`` (U+2039), readable to the model and to a person, and never a tag. Other markup (HTML in a tool
result, code with ``<div>``) is left as it is.
"""

from __future__ import annotations

import re

# Every tag mtagent frames text with. A new frame is named here (frame() refuses any other name).
FRAME_TAGS: frozenset[str] = frozenset({
    "session_context", "project_context",  # static context: the repository's CONTEXT.md and rules
    "mcp_server_instructions", "skills", "skill", "skill-file", "deferred-tools", "tools-delta",  # toolset
    "persisted-output", "truncated-output", "reattached_file",  # tool results and re-attached files
    "retrieved_context", "session_memory", "conversation_history_summary", "compact_boundary",  # recall, memory
    "task", "task_state", "file", "not_provided", "transcript",  # subagent briefs, memory extraction
})
INERT_BRACKET = "\u2039"  # ‹
_ALTERNATIVES = "|".join(re.escape(t) for t in sorted(FRAME_TAGS, key=len, reverse=True))
# `<`, optional spaces and `/`, a frame tag's name, then something that ends a tag name. The `<` may
# also arrive as a full-width or small form (＜ ﹤), which some tokenizers read alike.
_FRAME_TAG = re.compile(rf"[<\uff1c\ufe64](?P<inner>[\s/]*(?:{_ALTERNATIVES}))(?=[\s/>\uff1e\ufe65]|$)",
                        re.IGNORECASE)
_ATTR_UNSAFE = re.compile(r"[\"<>&\x00-\x1f\x7f\u2028\u2029]")


def neutralize(text: str) -> str:
    """``text`` with every frame tag in it (opening or closing) made inert: ``</skills>`` → ``‹/skills>``."""
    return _FRAME_TAG.sub(lambda m: INERT_BRACKET + m.group("inner"), text)


def attribute(value: object, limit: int = 200) -> str:
    """A value fit for a frame's attribute: no quote, bracket, ampersand, newline or control character
    (each becomes a space or is dropped), at most ``limit`` characters."""
    return _ATTR_UNSAFE.sub(lambda m: " " if m.group() in "\n\r\t" else "", str(value))[:limit]


def open_tag(tag: str, **attrs: object) -> str:
    """``<tag a="…">`` with each attribute through :func:`attribute`; ``tag`` must be a frame tag."""
    if tag not in FRAME_TAGS:
        raise ValueError(f"{tag!r} is not a frame tag; name it in mtagent.frames.FRAME_TAGS")
    parts = [tag, *(f'{key}="{attribute(value)}"' for key, value in attrs.items())]
    return "<" + " ".join(parts) + ">"


def frame(tag: str, body: str, **attrs: object) -> str:
    """``body`` inside ``<tag …>`` and ``</tag>``, on lines of their own; the body cannot close the
    frame or open another (:func:`neutralize`)."""
    return f"{open_tag(tag, **attrs)}\n{neutralize(body)}\n</{tag}>"
