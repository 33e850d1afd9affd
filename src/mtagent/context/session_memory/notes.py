"""The session notes file (``summary.md``): its template, parsing, budgets and both updaters.

The notes are markdown with fixed ``# Heading`` lines, each followed by one italic description
line that says what belongs there. Updaters change only the text *under* the description:

* :func:`model_update` asks a chat model to rewrite the notes, then re-imposes the template —
  headings and description lines come from the template, never from the reply, so a model
  that renames, drops or reorders a heading cannot damage the file; a section it lost keeps
  its previous body. User constraints the reply dropped are put back.
* :func:`extractive_update` fills the same sections from the messages alone (goal, user
  constraints, files, commands, errors, results, worklog) — deterministic and free.

Both end in :func:`enforce_budget`: each section at most ``section_max_tokens``, the whole
file at most ``total_max_tokens``; list sections lose their oldest entries first and say so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.context.compaction import facts as F
from mtagent.context.boundary import is_summary_message
from mtagent.context.compaction.summarize import render_transcript
from mtagent.context.tokens import message_text
from mtagent.frames import frame

TITLE = "Session Title"
CURRENT_STATE = "Current State"
TASK_SPEC = "Task specification"
FILES = "Files and Functions"
WORKFLOW = "Workflow"
ERRORS = "Errors & Corrections"
CODEBASE = "Codebase and System Documentation"
LEARNINGS = "Learnings"
KEY_RESULTS = "Key results"
WORKLOG = "Worklog"

SECTION_DESCRIPTIONS: dict[str, str] = {
    TITLE: "_A short, specific title for this session (5-10 words)._",
    CURRENT_STATE: "_What is being worked on right now, what is pending, and the very next step._",
    TASK_SPEC: "_What the user asked for, in their words: goals, requirements, and every constraint they stated._",
    FILES: "_Files and functions that matter: what each holds and why it is relevant._",
    WORKFLOW: "_Commands that are run, in what order, and how to read their output._",
    ERRORS: "_Errors met and how they were fixed; user corrections; approaches that failed and must not be retried._",
    CODEBASE: "_How the relevant parts of the system work and fit together._",
    LEARNINGS: "_What worked, what did not, what to avoid (not repeated from other sections)._",
    KEY_RESULTS: "_Exact results the user asked for (answers, numbers, tables), repeated verbatim._",
    WORKLOG: "_Step by step, what was tried and done; one terse line per step._",
}
SECTIONS: tuple[str, ...] = tuple(SECTION_DESCRIPTIONS)
DEFAULT_SESSION_MEMORY_TEMPLATE = "".join(f"# {name}\n{desc}\n\n" for name, desc in SECTION_DESCRIPTIONS.items())

# Sections whose newest lines matter most (overflow drops the oldest); others keep their head.
# The task specification keeps its first line (the original ask) and every user constraint.
_RECENT_FIRST = frozenset({TASK_SPEC, FILES, WORKFLOW, ERRORS, KEY_RESULTS, WORKLOG, CODEBASE, LEARNINGS})
_TRUNCATED_MARK = "- … {n} older entries omitted (the full history is in the session transcript)"
_TRUNCATED_RE = re.compile(r"^- … (\d+) older entries omitted")
_CUT_MARK = "[… section truncated to fit the session-memory budget]"
_HEADING_RE = re.compile(r"^#\s+(.+?)\s*$")
MAX_TITLE_CHARS = 80
MAX_STATE_CHARS = 600

SESSION_MEMORY_SYSTEM_PROMPT = """You keep the running notes of an AI coding agent's session. \
The notes let the agent continue its work after older conversation is dropped from its context, \
so they must hold everything needed to carry on: the task and its constraints, the current \
state, files, commands, errors and results.

You receive the current notes and the conversation that happened since they were last updated. \
Return the complete updated notes file and nothing else.

Rules:
- Keep every "# " heading line and the italic line right under it exactly as they are, in the \
same order. Change only the text below each italic line.
- Task specification: keep every requirement and constraint the user stated, verbatim \
(e.g. "never edit files under tests/"), including those already in the notes.
- Current State: rewrite it to describe the situation now, including the next step.
- Worklog: append terse lines for the new steps; keep earlier lines.
- Be specific: paths, function names, commands, error text, numbers.
- Keep each section under about {section_max_tokens} tokens; condense older detail, never \
the user's constraints.
- Leave a section's body empty when there is nothing to say."""


@dataclass(slots=True)
class Notes:
    """Parsed notes: section name → body text (without heading and description line)."""

    bodies: dict[str, str]

    @classmethod
    def empty(cls) -> Notes:
        return cls({name: "" for name in SECTIONS})

    def render(self) -> str:
        parts = []
        for name in SECTIONS:
            body = self.bodies.get(name, "").strip("\n")
            parts.append(f"# {name}\n{SECTION_DESCRIPTIONS[name]}\n" + (f"{body}\n" if body.strip() else "") + "\n")
        return "".join(parts)

    def is_empty(self) -> bool:
        return not any(body.strip() for body in self.bodies.values())

    def lines(self, name: str) -> list[str]:
        return [line for line in self.bodies.get(name, "").splitlines() if line.strip()]


def _canonical(name: str) -> str | None:
    key = re.sub(r"[^a-z&]+", " ", name.casefold()).strip()
    for section in SECTIONS:
        if re.sub(r"[^a-z&]+", " ", section.casefold()).strip() == key:
            return section
    return None


def parse_notes(text: str) -> Notes:
    """Read notes written by us, a model or a person. Unknown headings stay inside the body
    of the section before them; a first italic line under a heading is its description."""
    notes = Notes.empty()
    current: str | None = None
    buffer: list[str] = []
    fence = False

    def flush() -> None:
        if current is not None:
            body = list(buffer)
            while body and not body[0].strip():
                body.pop(0)
            if body and re.fullmatch(r"\s*[_*].+[_*]\s*", body[0]):
                body.pop(0)
            notes.bodies[current] = "\n".join(body).strip("\n")

    for line in text.replace("\r\n", "\n").split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        m = None if fence else _HEADING_RE.match(line)
        section = _canonical(m.group(1)) if m else None
        if section is not None:
            flush()
            current, buffer = section, []
        elif current is not None:
            buffer.append(line)
    flush()
    return notes


def strip_code_fence(reply: str) -> str:
    text = reply.strip()
    m = re.fullmatch(r"```(?:markdown|md)?\s*\n(.*?)\n```", text, re.S)
    return m.group(1) if m else text


def _section_tokens(notes: Notes, count: Callable[[str], int]) -> dict[str, int]:
    return {name: count(notes.bodies.get(name, "")) for name in SECTIONS}


def _protected(name: str, index: int, line: str) -> bool:
    return name == TASK_SPEC and (index == 0 or bool(F.CONSTRAINT_PATTERN.search(line)))


def _fit_lines(name: str, lines: list[str], limit: int, count: Callable[[str], int]) -> list[str]:
    """Drop whole lines until the body fits: oldest first in list sections, with a note saying how many.

    Lines are measured one by one (a newline is one more token), so shrinking a long section
    costs one count per line, not one per line dropped; the result is then checked exactly.
    """
    if count("\n".join(lines)) <= limit:
        return lines
    omitted = 0
    body: list[str] = []
    for line in lines:
        if (m := _TRUNCATED_RE.match(line)) is not None:
            omitted += int(m.group(1))
        else:
            body.append(line)
    recent_first = name in _RECENT_FIRST
    order = list(range(len(body)) if recent_first else range(len(body) - 1, -1, -1))
    cost = [count(line) + 1 for line in body]
    budget = limit - count(_TRUNCATED_MARK.format(n=len(lines) + omitted)) - 1
    total = sum(cost)
    keep = [True] * len(body)

    def drop_until(fits: Callable[[], bool]) -> None:
        nonlocal total, omitted
        for i in order:
            if fits():
                return
            if keep[i] and not _protected(name, i, body[i]):
                keep[i] = False
                total -= cost[i]
                omitted += 1

    drop_until(lambda: total <= budget)
    drop_until(lambda: count("\n".join(line for line, k in zip(body, keep) if k)) <= budget)
    out = [line for line, k in zip(body, keep) if k]
    if count("\n".join(out)) > budget:
        out = _cut_text("\n".join(out), max(0, budget), count).split("\n")
    if omitted:
        mark = _TRUNCATED_MARK.format(n=omitted)
        out = [mark, *out] if recent_first else [*out, mark]
    return out


def _cut_text(text: str, limit: int, count: Callable[[str], int]) -> str:
    """Keep the head of ``text`` within ``limit`` tokens, cut at a line end, marked."""
    if count(text) <= limit:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) + count(_CUT_MARK) <= limit:
            lo = mid
        else:
            hi = mid - 1
    head = text[:lo]
    if "\n" in head:
        head = head[: head.rindex("\n")]
    return f"{head}\n{_CUT_MARK}".lstrip("\n")


def enforce_budget(notes: Notes, *, section_max_tokens: int, total_max_tokens: int,
                   count: Callable[[str], int]) -> Notes:
    """Every section within its cap, then the whole file within the total: the largest
    sections shrink first, so a long worklog gives way before the task specification."""
    out = Notes(dict(notes.bodies))
    for name in SECTIONS:
        lines = out.bodies.get(name, "").split("\n")
        out.bodies[name] = "\n".join(_fit_lines(name, lines, section_max_tokens, count)).strip("\n")
    overhead = count(Notes.empty().render())
    while count(out.render()) > total_max_tokens:
        sizes = _section_tokens(out, count)
        name = max(sizes, key=lambda n: (n != TASK_SPEC, sizes[n]))
        target = max(0, min(sizes[name] - max(1, sizes[name] // 4),
                            total_max_tokens - overhead - (sum(sizes.values()) - sizes[name])))
        if sizes[name] == 0:
            break
        lines = out.bodies[name].split("\n")
        shrunk = "\n".join(_fit_lines(name, lines, target, count)).strip("\n")
        if shrunk == out.bodies[name]:
            shrunk = _cut_text(out.bodies[name], target, count) if target else ""
        out.bodies[name] = shrunk
    return out


# ── the extractive updater ─────────────────────────────────────────────────────────────


def _bullet(text: str) -> str:
    return f"- {text}"


def _append_unique(lines: list[str], new: Sequence[str]) -> list[str]:
    seen = {F.normalize(line.lstrip("- ")) for line in lines}
    out = list(lines)
    for item in new:
        key = F.normalize(item)
        if key and key not in seen:
            seen.add(key)
            out.append(_bullet(item))
    return out


def _worklog(messages: Sequence[BaseMessage]) -> list[str]:
    calls: dict[str, str] = {}
    steps: list[str] = []
    for m in messages:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                args = dict(call.get("args") or {})
                target = F.call_path(args) or str(args.get("command", args.get("pattern", "")))
                calls[str(call.get("id"))] = F.clip(f"{call['name']} {target}".strip(), F.MAX_FACT_CHARS)
            if not m.tool_calls and message_text(m).strip():
                steps.append(f"answered: {F.clip(message_text(m).splitlines()[0], F.MAX_FACT_CHARS)}")
        elif isinstance(m, ToolMessage):
            failed = m.status == "error"
            steps.append(f"{calls.get(m.tool_call_id, m.name or 'tool')} → {'error' if failed else 'ok'}")
    return steps


def conversation(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages notes are written from: no summaries, no engine-injected context."""
    out = []
    for m in messages:
        meta = (m.response_metadata or {}).get("mtagent") or {}
        if is_summary_message(m) or meta.get("kind") or isinstance(m, SystemMessage):
            continue
        out.append(m)
    return out


def extractive_update(notes: Notes, messages: Sequence[BaseMessage]) -> Notes:
    """Fold ``messages`` (the new part of the conversation) into ``notes`` without a model."""
    msgs = conversation(messages)
    found = F.extract_facts(msgs)
    out = Notes(dict(notes.bodies))
    if not out.bodies[TITLE].strip() and found.goal:
        out.bodies[TITLE] = F.clip(found.goal.splitlines()[0], MAX_TITLE_CHARS)

    user_texts = [message_text(m).strip() for m in msgs if isinstance(m, HumanMessage) and message_text(m).strip()]
    spec = _append_unique(out.lines(TASK_SPEC), [F.clip(t, F.MAX_LINE_CHARS) for t in user_texts])
    spec = _append_unique(spec, found.constraints)
    out.bodies[TASK_SPEC] = "\n".join(spec)

    files = out.lines(FILES)
    updates = {path: f"{path} (read)" for path in found.files_read}
    updates.update({path: f"{path} (changed{': ' + note if note else ''})" for path, note in found.files_changed.items()})
    for path, line in updates.items():
        files = [f for f in files if not f.lstrip("- ").startswith(f"{path} (")]
        files.append(_bullet(line))
    out.bodies[FILES] = "\n".join(files)

    out.bodies[WORKFLOW] = "\n".join(_append_unique(out.lines(WORKFLOW), found.commands))
    out.bodies[ERRORS] = "\n".join(_append_unique(out.lines(ERRORS), found.errors))
    results = [found.latest_verification] if found.latest_verification else []
    out.bodies[KEY_RESULTS] = "\n".join(_append_unique(out.lines(KEY_RESULTS), results))
    out.bodies[WORKLOG] = "\n".join(out.lines(WORKLOG) + [_bullet(s) for s in _worklog(msgs)])

    state = []
    if found.last_action:
        state.append(f"Last action: {found.last_action}")
    if found.latest_error:
        state.append(f"Latest error: {found.latest_error}")
    if found.next_step:
        state.append(f"Assistant's latest message: {F.clip(found.next_step, MAX_STATE_CHARS)}")
    if state:
        out.bodies[CURRENT_STATE] = "\n".join(state)
    return out


# ── the model updater ──────────────────────────────────────────────────────────────────


def build_update_request(notes: Notes, messages: Sequence[BaseMessage], *, section_max_tokens: int,
                         tool_result_chars: int) -> list[BaseMessage]:
    transcript = render_transcript(conversation(messages), tool_result_chars=tool_result_chars)
    return [
        SystemMessage(content=SESSION_MEMORY_SYSTEM_PROMPT.format(section_max_tokens=section_max_tokens)),
        HumanMessage(content=f"Current notes:\n<notes>\n{notes.render()}</notes>\n\n"
                             f"Conversation since the last update:\n{frame('transcript', transcript)}\n\n"
                             "Return the complete updated notes file."),
    ]


def merge_model_reply(old: Notes, reply: str, messages: Sequence[BaseMessage]) -> tuple[Notes, list[str]]:
    """The model's notes under the template's headings; returns (notes, repairs made).

    A section missing from the reply keeps its old body; a user constraint (from the old task
    specification or the new user messages) the reply dropped is appended again.
    """
    text = strip_code_fence(reply)
    parsed = parse_notes(text)
    present = {_canonical(m.group(1)) for line in text.splitlines() if (m := _HEADING_RE.match(line))}
    repairs: list[str] = []
    out = Notes(dict(parsed.bodies))
    for name in SECTIONS:
        if name not in present:
            out.bodies[name] = old.bodies.get(name, "")
            repairs.append(f"restored section {name!r}")
    for line in text.splitlines():
        m = _HEADING_RE.match(line)
        if m and _canonical(m.group(1)) is not None and f"# {_canonical(m.group(1))}" != line.strip():
            repairs.append(f"restored heading {line.strip()!r}")
    required = [line.lstrip("- ").strip() for line in old.lines(TASK_SPEC) if F.CONSTRAINT_PATTERN.search(line)]
    for m in conversation(messages):
        if isinstance(m, HumanMessage):
            required += F.constraint_lines(message_text(m))
    body = F.normalize(out.bodies[TASK_SPEC])
    missing = [c for c in dict.fromkeys(required) if not F.mentions(body, c)]
    if missing:
        out.bodies[TASK_SPEC] = "\n".join([*out.lines(TASK_SPEC), *(_bullet(c) for c in missing)])
        repairs.append(f"restored {len(missing)} user constraint(s)")
    return out, repairs
