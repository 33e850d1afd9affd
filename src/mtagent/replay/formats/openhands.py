"""OpenHands event streams → messages: eval records, replay trajectories, resolver output.

* **Event stream** (eval ``output.jsonl`` records, ``history`` list; or a bare list of events in
  replay trajectories): an action with ``tool_call_metadata`` becomes (part of) an assistant
  message; actions sharing one ``model_response.id`` are merged into one message. Its
  observation (``cause`` = the action's id) becomes the tool result. ``recall`` events (workspace
  and microagent injection) are skipped; ``message`` actions are user or assistant text;
  ``system`` is the system prompt. ``llm_metrics`` and ``model_response`` payloads are not context.
* **Resolver output** (older, JSONL of records whose ``history`` alternates action and
  observation dicts without ids): each action is paired with the observation that follows it,
  with synthetic call ids; tools are ``execute_bash`` and ``execute_ipython_cell``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from mtagent.errors import ReplayFormatError
from mtagent.replay.trajectory import (Trajectory, ai, finish, human, jsonl_objects, parse_arguments, system, text_of,
                                       tool)

FORMAT = "openhands"
FORMAT_RESOLVER = "openhands-resolver"
_SKIP_ACTIONS = {"recall", "change_agent_state", "null"}
_RESOLVER_TOOLS = {"run": ("execute_bash", "command"), "run_ipython": ("execute_ipython_cell", "code")}


def _is_event(e: Any) -> bool:
    return isinstance(e, dict) and ("action" in e or "observation" in e) and "id" in e and "source" in e


def sniff_events(data: Any) -> bool:
    events = data.get("history") if isinstance(data, dict) else data
    return isinstance(events, list) and bool(events) and all(_is_event(e) for e in events[:5])


def sniff_resolver(head: str) -> bool:
    first = head.lstrip().split("\n", 1)[0]
    return first.startswith("{") and '"issue"' in first[:200_000] and '"history"' in first[:200_000] or (
        '"issue_type"' in head[:2000] and '"git_patch"' in head[:200_000]
    )


def load_events(path: Path, data: Any) -> list[Trajectory]:
    events = data.get("history") if isinstance(data, dict) else data
    if not isinstance(events, list) or not all(_is_event(e) for e in events):
        raise ReplayFormatError(f"{path} is not an OpenHands event stream (expected events with id, source, action/observation)")
    messages: list[BaseMessage] = []
    by_response: dict[str, AIMessage] = {}
    call_of_action: dict[int, tuple[str, str]] = {}
    for e in events:
        ts = e.get("timestamp")
        mid = f"ev-{e['id']}"
        if "action" in e:
            _add_action(e, mid, ts, messages, by_response, call_of_action)
        elif e.get("observation") not in ("recall", None):
            cause = e.get("cause")
            tcm = e.get("tool_call_metadata") or {}
            call = call_of_action.get(cause) if isinstance(cause, int) else None
            call_id = tcm.get("tool_call_id") or (call[0] if call else None)
            if call_id is None:
                if e.get("observation") in ("error", "user_rejected") and text_of(e.get("content")).strip():
                    messages.append(human(text_of(e.get("content")), mid, ts))
                continue
            name = tcm.get("function_name") or (call[1] if call else None)
            messages.append(tool(text_of(e.get("content")), mid, str(call_id), name, timestamp=ts))
    meta: dict[str, Any] = {"source": str(path)}
    if isinstance(data, dict):
        meta["instance_id"] = data.get("instance_id")
    return [finish(messages, FORMAT, meta=meta)]


def _add_action(
    e: dict[str, Any],
    mid: str,
    ts: str | None,
    messages: list[BaseMessage],
    by_response: dict[str, AIMessage],
    call_of_action: dict[int, tuple[str, str]],
) -> None:
    action = e["action"]
    args = e.get("args") or {}
    if action in _SKIP_ACTIONS:
        return
    if action == "system":
        messages.append(system(text_of(args.get("content")), mid, ts))
        return
    tcm = e.get("tool_call_metadata")
    if not tcm:
        text = text_of(args.get("content") or args.get("thought") or args.get("final_thought") or e.get("message"))
        if not text.strip():
            return
        if e.get("source") == "user":
            messages.append(human(text, mid, ts))
        else:
            messages.append(ai(text, mid, timestamp=ts))
        return
    response = tcm.get("model_response") or {}
    choice = ((response.get("choices") or [{}])[0] or {}).get("message") or {}
    call_id = str(tcm["tool_call_id"])
    fname = str(tcm.get("function_name") or action)
    arguments: dict[str, Any] = {}
    for c in choice.get("tool_calls") or []:
        if c.get("id") == call_id:
            arguments = parse_arguments((c.get("function") or {}).get("arguments"))
    call = {"id": call_id, "name": fname, "args": arguments or {k: v for k, v in args.items() if isinstance(v, str) and v}}
    call_of_action[int(e["id"])] = (call_id, fname)
    response_id = str(response.get("id") or mid)
    existing = by_response.get(response_id)
    if existing is not None and total_calls(tcm) > 1:
        existing.tool_calls = list(existing.tool_calls) + [dict(call, type="tool_call")]
        return
    text = text_of(choice.get("content")) or text_of(args.get("thought"))
    message = ai(text, mid, [call], ts)
    by_response[response_id] = message
    messages.append(message)


def total_calls(tcm: dict[str, Any]) -> int:
    return int(tcm.get("total_calls_in_response") or 1)


def load_resolver(path: Path) -> list[Trajectory]:
    out: list[Trajectory] = []
    for line_no, record in jsonl_objects(path, "an OpenHands resolver output.jsonl record", "history"):
        history = record["history"]
        if not isinstance(history, list):
            raise ReplayFormatError(f"{path}:{line_no} has no 'history' list; expected an OpenHands resolver record")
        out.append(_resolver_record(path, line_no, record, history))
    if not out:
        raise ReplayFormatError(f"{path} is empty; expected an OpenHands resolver output.jsonl")
    return out


def _resolver_record(path: Path, line_no: int, record: dict[str, Any], history: list[Any]) -> Trajectory:
    messages: list[BaseMessage] = []
    pending: tuple[str, str] | None = None
    step = 0
    for i, e in enumerate(history):
        mid = f"r{line_no}-{i}"
        if not isinstance(e, dict):
            continue
        action = e.get("action")
        if action == "message":
            messages.append(human(text_of(e.get("content")), mid))
        elif action in _RESOLVER_TOOLS:
            step += 1
            name, key = _RESOLVER_TOOLS[action]
            pending = (f"call_{step}", name)
            messages.append(ai(text_of(e.get("thought")), mid, [{"id": pending[0], "name": name, "args": {key: e.get(key, "")}}]))
        elif action == "finish":
            text = text_of(e.get("thought") or e.get("final_thought") or e.get("outputs"))
            messages.append(ai(text or "finish", mid))
        elif "observation" in e and pending is not None:
            messages.append(tool(text_of(e.get("content")), mid, pending[0], pending[1]))
            pending = None
    return finish(messages, FORMAT_RESOLVER, meta={"source": f"{path}#{line_no}", "issue": (record.get("issue") or {}).get("number")})
