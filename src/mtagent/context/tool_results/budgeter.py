"""Tool results on a budget (spec 000 M2): decided once, when a result is produced.

A result over its tool's limit (grep 20,000 chars, shell 30,000, default 50,000; read_file
bounds itself) is written in full to the session's artifact store, and the model sees
``<persisted-output tool=… path=… original_chars=…>`` with a tool-aware preview
(:mod:`mtagent.context.tool_results.previews`). When the results of one assistant turn together exceed
200,000 chars, the largest are persisted until the rest fits.

The decision is *frozen*: it is written into the ToolMessage's ``artifact`` (the transcript's
``toolUseResult``) with a ``budget`` marker. Budgeting a message that carries the marker is a
no-op, and a resumed session reads the recorded content as-is, so the prompt prefix is
byte-identical across resumes.

Three copies of a result (DESIGN principle 2): raw in the artifact file, structured
``toolUseResult`` in the transcript, and the bounded preview the model sees.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from mtagent.config import ToolResultSettings
from mtagent.context.tool_results import previews
from mtagent.errors import ConfigError
from mtagent.events import EventBus, EventType, SessionStats
from mtagent.session.artifacts import ArtifactMeta, ArtifactStore, get_tool_result_path
from mtagent.session.schema import message_to_record, tool_result_artifact_record
from mtagent.session.transcript import RecordSink

_DEFAULTS = ToolResultSettings()
BUDGET_KEY = "budget"
STAGE_TOOL = "tool"  # the per-tool limit was applied; the turn's aggregate may still persist it
STAGE_TURN = "turn"  # final: the aggregate rule ran too; never touched again
_REDUCER_KEYS = frozenset({"path", "keep_last", "keep_first", "keep_fields", "drop_fields"})


@dataclass(slots=True)
class ToolResultPolicy:
    """Per-tool limits, the per-turn aggregate, the preview size and reducers."""

    grep_max_chars: int = _DEFAULTS.grep_max_chars
    shell_max_chars: int = _DEFAULTS.shell_max_chars
    default_max_chars: int = _DEFAULTS.default_max_chars
    aggregate_max_chars: int = _DEFAULTS.aggregate_max_chars
    preview_chars: int = _DEFAULTS.preview_chars
    per_tool_max_chars: dict[str, int] = field(default_factory=dict)
    self_limiting_tools: frozenset[str] = frozenset(_DEFAULTS.self_limiting_tools)
    reducers: dict[str, dict[str, Any]] = field(default_factory=dict)
    window_max_chars: int | None = None  # no result may take more of the window (see window_max_chars())

    def __post_init__(self) -> None:
        for tool, spec in self.reducers.items():
            validate_reducer(tool, spec)

    @classmethod
    def from_settings(cls, settings: ToolResultSettings | None = None, *,
                      window_chars: int | None = None) -> ToolResultPolicy:
        """``window_chars``: :func:`window_max_chars` of the session's settings (None: no window bound)."""
        s = settings or ToolResultSettings()
        return cls(
            grep_max_chars=s.grep_max_chars,
            shell_max_chars=s.shell_max_chars,
            default_max_chars=s.default_max_chars,
            aggregate_max_chars=s.aggregate_max_chars,
            preview_chars=s.preview_chars,
            per_tool_max_chars=dict(s.per_tool_max_chars),
            self_limiting_tools=frozenset(s.self_limiting_tools),
            reducers={k: dict(v) for k, v in s.reducers.items()},
            window_max_chars=window_chars,
        )

    def limit_for(self, tool_name: str | None) -> int | None:
        """The tool's threshold in chars (never over :attr:`window_max_chars`), or None for a tool
        that bounds its own output."""
        limit = self._tool_limit(tool_name or "")
        if limit is None or self.window_max_chars is None:
            return limit
        return min(limit, self.window_max_chars)

    def _tool_limit(self, name: str) -> int | None:
        if name in self.per_tool_max_chars:
            return self.per_tool_max_chars[name]
        if name in self.self_limiting_tools:
            return None
        lowered = name.lower()
        if lowered in previews.GREP_TOOLS:
            return self.grep_max_chars
        if lowered in previews.SHELL_TOOLS:
            return self.shell_max_chars
        return self.default_max_chars


# A token is about four characters of English or code: the window bound is set in characters, as
# the per-tool limits are, so a result is judged without counting its tokens.
CHARS_PER_TOKEN = 4


def window_max_chars(settings: Any) -> int:
    """The most characters one tool result may bring into the view: ``read_file.max_window_share``
    of the context window (#38). On a 12K window a 29,000-character shell output stayed inline
    under the 30,000 limit, filled the window, and every compaction dropped it before the model
    had seen it; on a large window the per-tool limits stay the smaller ones."""
    return max(1, int(settings.context.token_limit * settings.read_file.max_window_share * CHARS_PER_TOKEN))


# ── reducers: user-declared data slimming for structured output ────────────────────────


def validate_reducer(tool: str, spec: Mapping[str, Any]) -> None:
    unknown = set(spec) - _REDUCER_KEYS
    if unknown:
        raise ConfigError(
            f"tool_results.reducers.{tool} has unknown keys {sorted(unknown)}; "
            f"use {sorted(_REDUCER_KEYS)}"
        )
    for key in ("keep_last", "keep_first"):
        if key in spec and (not isinstance(spec[key], int) or isinstance(spec[key], bool) or spec[key] < 0):
            raise ConfigError(f"tool_results.reducers.{tool}.{key} must be a whole number >= 0")
    for key in ("keep_fields", "drop_fields"):
        if key in spec and not (isinstance(spec[key], list) and all(isinstance(f, str) for f in spec[key])):
            raise ConfigError(f"tool_results.reducers.{tool}.{key} must be a list of field names")
    if "path" in spec and not isinstance(spec["path"], str):
        raise ConfigError(f"tool_results.reducers.{tool}.path must be a dotted path like 'data.items'")


def _slim(value: Any, spec: Mapping[str, Any], notes: list[str], where: str) -> Any:
    if isinstance(value, list):
        total = len(value)
        if "keep_first" in spec and total > spec["keep_first"]:
            value = value[: spec["keep_first"]]
            notes.append(f"{where}: kept first {spec['keep_first']} of {total} items")
        if "keep_last" in spec and len(value) > spec["keep_last"]:
            kept = spec["keep_last"]
            value = value[len(value) - kept:] if kept else []
            notes.append(f"{where}: kept last {kept} of {total} items")
        return [_slim_fields(item, spec) for item in value]
    return _slim_fields(value, spec)


def _slim_fields(value: Any, spec: Mapping[str, Any]) -> Any:
    if not isinstance(value, dict):
        return value
    if "keep_fields" in spec:
        value = {k: v for k, v in value.items() if k in spec["keep_fields"]}
    if "drop_fields" in spec:
        value = {k: v for k, v in value.items() if k not in spec["drop_fields"]}
    return value


def apply_reducer(data: Any, spec: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """Slim ``data`` by ``spec``; returns the new value and what was dropped (for the note)."""
    notes: list[str] = []
    where = spec.get("path") or "result"
    if "keep_fields" in spec:
        notes.append(f"{where}: kept only fields {', '.join(spec['keep_fields'])}")
    if "drop_fields" in spec:
        notes.append(f"{where}: dropped fields {', '.join(spec['drop_fields'])}")
    path = [p for p in str(spec.get("path", "")).split(".") if p]
    if not path:
        return _slim(data, spec, notes, "result"), notes
    data = copy.deepcopy(data)
    parent = data
    for part in path[:-1]:
        if not isinstance(parent, dict) or part not in parent:
            return data, [f"path {spec['path']!r} not found; nothing reduced"]
        parent = parent[part]
    leaf = path[-1]
    if not isinstance(parent, dict) or leaf not in parent:
        return data, [f"path {spec['path']!r} not found; nothing reduced"]
    parent[leaf] = _slim(parent[leaf], spec, notes, spec["path"])
    return data, notes


# ── the budgeter ─────────────────────────────────────────────────────────────────────────


def is_budgeted(message: BaseMessage, stage: str | None = None) -> bool:
    """True once the budgeter decided this result (optionally: reached ``stage``)."""
    artifact = getattr(message, "artifact", None)
    marker = artifact.get(BUDGET_KEY) if isinstance(artifact, dict) else None
    if not isinstance(marker, dict):
        return False
    return stage is None or marker.get("stage") == stage


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            else:
                return None  # images and other blocks are not ours to cut
        return "\n".join(parts)
    return None


def _base_result(message: ToolMessage) -> dict[str, Any]:
    artifact = message.artifact
    if isinstance(artifact, dict):
        return copy.deepcopy(artifact)
    result: dict[str, Any] = {"kind": "text"}
    if artifact is not None:
        result["tool_artifact_type"] = type(artifact).__name__
    return result


@dataclass
class ToolResultBudgeter:
    """Applies :class:`ToolResultPolicy` to ToolMessages, once, and records what it did.

    ``budget`` runs per result as it is produced (the tools call it); ``admit`` is the engine's
    one step per arriving result (its tool's limit unless decided, the aggregate against the
    turn's earlier results, frozen); ``budget_turn`` runs on all results of one assistant turn
    (largest persisted first) and freezes the decisions; ``finalize_turn`` also appends each
    result as a ``transcript_message`` to the sink. Safe to call from parallel tool threads.
    """

    policy: ToolResultPolicy = field(default_factory=ToolResultPolicy)
    artifacts: ArtifactStore | None = None
    sink: RecordSink | None = None
    events: EventBus | None = None
    stats: SessionStats | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def budget(self, message: ToolMessage) -> ToolMessage:
        """Apply the reducer and the tool's own limit; a budgeted message comes back unchanged."""
        if not isinstance(message, ToolMessage) or is_budgeted(message):
            return message
        return self._rebuild(message, *self._tool_limit(message))

    def admit(self, message: ToolMessage, earlier_chars: int) -> tuple[ToolMessage, int]:
        """One arriving result, decided once and built once: its tool's limit (unless its tool
        decided it already), then the turn's aggregate against ``earlier_chars`` (the text of the
        turn's results before it, all frozen: only this one can be persisted), frozen. Returns
        the result and the turn's text so far, with it."""
        if is_budgeted(message, STAGE_TURN):
            return message, earlier_chars + len(_text_of(message.content) or "")
        content, result = ((message.content, copy.deepcopy(message.artifact)) if is_budgeted(message)
                           else self._tool_limit(message))
        text = _text_of(content)
        if earlier_chars + len(text or "") > self.policy.aggregate_max_chars:
            content = self._offload(message, text, result) or content
        result[BUDGET_KEY] = {**result[BUDGET_KEY], "stage": STAGE_TURN}
        return self._rebuild(message, content, result), earlier_chars + len(_text_of(content) or "")

    def _tool_limit(self, message: ToolMessage, sample: str | None = None) -> tuple[Any, dict[str, Any]]:
        """(what the model sees, the ``toolUseResult``) under the reducer and the tool's own limit;
        with ``sample`` (a redacted excerpt of a text too big to copy) the preview is made from it."""
        tool = message.name or ""
        result = _base_result(message)
        text = _text_of(message.content)
        if text is None:
            result[BUDGET_KEY] = {"stage": STAGE_TOOL, "decision": "not_text"}
            return message.content, result
        raw = text
        reducer = self.policy.reducers.get(tool) if sample is None else None
        reduced_note = ""
        if reducer is not None:
            parsed = previews._parse_json(text)
            if parsed is not None:
                slimmed, notes = apply_reducer(parsed, reducer)
                if slimmed != parsed:
                    text = json.dumps(slimmed, ensure_ascii=False)
                    result["reducer"] = {"spec": dict(reducer), "notes": notes,
                                         "original_chars": len(raw), "reduced_chars": len(text)}
                    reduced_note = "; ".join(notes)
        result.setdefault("kind", "text")
        result["original_chars"] = len(raw)
        if self.stats is not None:
            self.stats.last_tool_result_chars = len(raw)
        limit = self.policy.limit_for(tool)
        decision, reason = "inline", None
        if limit is not None and len(text) > limit:
            content, decision = self._persist(message, tool, raw, text if sample is None else sample, result,
                                              reason="tool_limit", limit=limit)
            reason = "tool_limit"
        elif reduced_note:
            meta = self._write(message.tool_call_id, tool, raw, result)
            where = f"; full data saved to {meta.path}" if meta else ""
            content = f"[reduced by the '{tool}' reducer: {reduced_note}{where}]\n{text}"
            result.update(truncated=True)
            decision = "reduced"
        else:
            content = message.content
            result.setdefault("artifact", None)
            result.setdefault("truncated", False)
            result.setdefault("artifact_truncated", False)
        result["preview_chars"] = len(_text_of(content) or "")
        result[BUDGET_KEY] = {"stage": STAGE_TOOL, "decision": decision, "limit": limit,
                              **({"reason": reason} if reason else {})}
        return content, result

    def budget_turn(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Budget every result of one assistant turn, then persist the largest until the turn fits.

        Messages already frozen (``stage == "turn"``) are returned as the same objects, so
        re-budgeting a resumed history changes nothing. Non-tool messages pass through.
        """
        out = [self.budget(m) if isinstance(m, ToolMessage) else m for m in messages]
        open_idx = [i for i, m in enumerate(out) if isinstance(m, ToolMessage) and not is_budgeted(m, STAGE_TURN)]
        total = sum(len(_text_of(m.content) or "") for m in out if isinstance(m, ToolMessage))
        decided = {i: (out[i].content, copy.deepcopy(out[i].artifact)) for i in open_idx}
        for i in sorted(open_idx, key=lambda i: len(_text_of(out[i].content) or ""), reverse=True):
            if total <= self.policy.aggregate_max_chars:
                break
            text, result = _text_of(out[i].content), decided[i][1]
            offloaded = self._offload(out[i], text, result)
            if offloaded is not None:  # so text is not None
                decided[i] = (offloaded, result)
                total -= len(text or "") - len(offloaded)
        for i, (content, result) in decided.items():
            result[BUDGET_KEY] = {**result[BUDGET_KEY], "stage": STAGE_TURN}
            out[i] = self._rebuild(out[i], content, result)
        return out

    def finalize_turn(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """``budget_turn``, then append each tool result of the turn to the sink as a record."""
        out = self.budget_turn(messages)
        if self.sink is not None:
            for message in out:
                if isinstance(message, ToolMessage):
                    self.sink.append(message_to_record(message))
        return out

    # ── internals ──

    def _offload(self, message: ToolMessage, text: str | None, result: dict[str, Any]) -> str | None:
        """Persist an inline text result of a tool with a limit for the turn's aggregate (``result``
        updated) and return what the model sees instead; None: the aggregate rule leaves it alone."""
        if text is None or result[BUDGET_KEY].get("decision") != "inline" or self.policy.limit_for(message.name) is None:
            return None
        content, decision = self._persist(message, message.name or "", text, text, result,
                                          reason="aggregate", limit=self.policy.aggregate_max_chars)
        result["preview_chars"] = len(content)
        result[BUDGET_KEY] = {**result[BUDGET_KEY], "decision": decision, "reason": "aggregate"}
        return content

    def save(self, tool_call_id: str, tool: str, raw: str, result: dict[str, Any]) -> ArtifactMeta | None:
        """Store ``raw`` as this call's artifact (None without a store) and count it persisted.

        For a tool that bounds its own output (``read_file``): what does not fit the window is
        saved here and the tool shows its own preview, so recall indexes it like any saved result."""
        meta = self._write(tool_call_id, tool, raw, result)
        if meta is not None:
            with self._lock:
                if self.stats is not None:
                    self.stats.tool_results_persisted += 1
            if self.events is not None:
                self.events.emit(EventType.TOOL_RESULT_PERSISTED, tool=tool, tool_call_id=tool_call_id,
                                 path=meta.path, original_chars=len(raw), preview_chars=0, reason="window",
                                 limit=None)
        return meta

    def persist_stream(self, message: ToolMessage, sample: str) -> ToolMessage:
        """A text result too big to copy, over its tool's limit (:mod:`~mtagent.context.tool_results.streamed`):
        stored as it came — the artifact store redacts it a piece at a time — and previewed from ``sample``
        (already redacted); otherwise decided as :meth:`budget` decides a result over its limit."""
        return self._rebuild(message, *self._tool_limit(message, sample))

    def _write(self, tool_call_id: str, tool: str, raw: str, result: dict[str, Any]) -> ArtifactMeta | None:
        if self.artifacts is None:
            result.update(artifact=None, artifact_truncated=False)
            return None
        with self._lock:  # a reused tool_call_id (some local models repeat them) must not overwrite
            relative = get_tool_result_path(tool_call_id)
            suffix = 1
            while self.artifacts.exists(relative):
                suffix += 1
                relative = get_tool_result_path(f"{tool_call_id}-{suffix}")
            meta = self.artifacts.write_text(relative, raw)
        result.update(artifact=meta.path, artifact_truncated=meta.truncated)
        if self.sink is not None:
            self.sink.append(tool_result_artifact_record(
                tool_call_id, tool, meta.path, original_chars=meta.original_chars,
                stored_bytes=meta.stored_bytes, truncated=meta.truncated, sha256=meta.sha256,
            ))
        return meta

    def _persist(self, message: ToolMessage, tool: str, raw: str, text: str, result: dict[str, Any],
                 *, reason: str, limit: int) -> tuple[str, str]:
        """Write the raw result to the store; return (what the model sees instead, decision)."""
        meta = self._write(message.tool_call_id, tool, raw, result)
        kind = previews.preview_kind(tool, text)
        preview = previews.make_preview(kind, text, self.policy.preview_chars)
        if meta is not None:
            content = previews.persisted_output(tool, raw, meta, preview)
            decision = "persisted"
        else:
            content = previews.truncated_output(tool, raw, preview)
            decision = "truncated"
        result.update(truncated=True, preview_kind=kind)
        with self._lock:
            if self.stats is not None and meta is not None:
                self.stats.tool_results_persisted += 1
                self.stats.tool_result_chars_saved += max(0, len(raw) - len(content))
        if self.events is not None:
            self.events.emit(
                EventType.TOOL_RESULT_PERSISTED, tool=tool, tool_call_id=message.tool_call_id,
                path=meta.path if meta else None, original_chars=len(raw), preview_chars=len(content),
                reason=reason, limit=limit,
            )
        return content, decision

    @staticmethod
    def _rebuild(message: ToolMessage, content: Any, result: dict[str, Any]) -> ToolMessage:
        metadata = dict(message.response_metadata or {})
        marks = dict(metadata.get("mtagent") or {})
        marks["tool_result"] = result[BUDGET_KEY]["decision"]
        metadata["mtagent"] = marks
        return ToolMessage(
            content=content,
            tool_call_id=message.tool_call_id,
            name=message.name,
            status=message.status,
            id=message.id or f"msg-{uuid.uuid4().hex}",
            artifact=result,
            response_metadata=metadata,
            additional_kwargs=dict(message.additional_kwargs or {}),
        )
