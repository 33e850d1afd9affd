"""One readable line per bookkeeping record (context plans, events, artifacts) for ``sessions show``.

The conversation is what a reader follows; the engine's records explain it. Each is one line
of the few fields a person scans for (turn, tokens, counts, the event's name and its scalar data);
``sessions show --raw`` prints the full JSON record instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mtagent.session import schema

VALUE_CHARS = 60  # one event value longer than this is cut: the line stays one line
LINE_CHARS = 240


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _fields(data: Mapping[str, Any]) -> str:
    parts = []
    for key, value in data.items():
        if isinstance(value, (list, dict)):
            parts.append(f"{key}=[{len(value)}]")
        elif value is not None:
            parts.append(f"{key}={_short(value)}")
    return " ".join(parts)


def _plan_line(rec: Mapping[str, Any]) -> str:
    tokens, threshold = rec.get("tokens"), rec.get("threshold")
    of = f" of {threshold:,} before compaction" if isinstance(threshold, int) and threshold else ""
    tokens_text = f"{tokens:,}" if isinstance(tokens, int) else str(tokens)
    counts = ", ".join(f"{len(rec.get(key) or [])} {key}" for key in ("selected", "compressed", "dropped"))
    return f"· plan for call {rec.get('turn')}: {tokens_text} tokens{of} · {counts}"


def record_line(rec: Mapping[str, Any]) -> str:
    """A record the conversation view does not draw itself, as one line (no newlines, bounded)."""
    kind = rec.get("type")
    if kind == schema.CONTEXT_PLAN:
        line = _plan_line(rec)
    elif kind == schema.EVENT:
        data = rec.get("data") if isinstance(rec.get("data"), Mapping) else {}
        line = f"· event {rec.get('event')} {_fields(data)}".rstrip()
    elif kind == schema.TOOL_RESULT_ARTIFACT:
        line = (f"· tool result {rec.get('tool_call_id')} ({rec.get('tool') or '?'}) saved to {rec.get('path')}, "
                f"{rec.get('original_chars')} chars")
    elif kind == schema.SESSION_MEMORY_UPDATE:
        line = f"· session memory updated ({rec.get('tokens')} tokens) at {rec.get('path')}"
    elif kind == schema.SUBAGENT:
        line = f"· subagent {rec.get('child_id')} ({rec.get('agent') or '-'}) {rec.get('status')}"
    else:
        detail = {k: v for k, v in rec.items() if k not in ("type", "schema_version", "timestamp")}
        line = f"· {kind} {_fields(detail)}".rstrip()
    line = " ".join(line.split())
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
