"""The ledger as the model reads it, and the check that a later view still carries it.

:func:`render_ledger` writes the ledger's sections (empty ones left out) — the user's words
verbatim and whole, never clipped. :func:`ledger_items` names every item a view must still carry,
and :func:`missing_from` lists those a view has lost (a replay's work-state probe, the tests).
:func:`parse_rendered` reads a hand-off's text back into a ledger, for summaries stored without
their ledger data.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from mtagent.context.compaction import facts as F
from mtagent.context.ledger.model import CREATED, DELETED, EDITED, FailedCommand, HandoffLedger
from mtagent.context.ledger.workplan import PlanStep, WorkPlan, plan_calls, same_plan
from mtagent.context.tokens import message_text

SECTION_LAST_REQUEST = "Latest user request"
SECTION_EARLIER = "Earlier requests"
SECTION_PLAN = "Plan"
SECTION_FAILED_COMMANDS = "Failed commands"
SECTION_LATEST_ERROR = "Latest error"
SECTION_RULES = "Rules in force"
SECTION_TOOLS = "Tools loaded"
SECTION_TASKS = "Open subagent tasks"
# Every heading the ledger renders: a model's text under one of these is replaced by the ledger's.
LEDGER_HEADINGS: tuple[str, ...] = (
    F.SECTION_GOAL, SECTION_LAST_REQUEST, SECTION_EARLIER, F.SECTION_CONSTRAINTS, SECTION_PLAN,
    F.SECTION_FILES_CHANGED, F.SECTION_FILES_READ, SECTION_FAILED_COMMANDS, SECTION_LATEST_ERROR,
    F.SECTION_VERIFICATION, SECTION_RULES, SECTION_TOOLS, SECTION_TASKS,
)
MAX_FILES_READ = 30
MAX_EARLIER_REQUESTS = 10
# Characters of the requests between the first and the latest a hand-off repeats (both of those
# are always whole): a long session's every request, repeated in every hand-off, would never shrink.
MAX_EARLIER_CHARS = 2_000
REQUEST_SEPARATOR = "---"
_PLAN_LINE = re.compile(r"^\[( |~|x)\] (.+) \((pending|in progress|done)\)$")
_OMITTED = re.compile(r"\(\d+ earlier requests omitted: .*\)")
_CHANGED_LINE = re.compile(r"^(.+?) — (created|edited|deleted)(?:: (.*))?$")


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def _verbatim(text: str) -> str:
    """A user's words as they were (only blank lines at the ends dropped). A heading they wrote
    stays theirs: readers end these sections only at a hand-off's own headings."""
    return text.strip("\n")


def _changed_line(path: str, kind: str, why: str) -> str:
    return f"{path} — {kind}: {why}" if why and kind != DELETED else f"{path} — {kind}"


def earlier_requests(requests: Sequence[str]) -> tuple[list[str], int]:
    """The requests between the first and the latest that a hand-off repeats — newest first, each
    whole or not at all (never clipped), within :data:`MAX_EARLIER_CHARS` and
    :data:`MAX_EARLIER_REQUESTS` — and how many it leaves out."""
    kept: list[str] = []
    used = 0
    for request in reversed(requests):
        if len(kept) == MAX_EARLIER_REQUESTS or used + len(request) > MAX_EARLIER_CHARS:
            break
        kept.insert(0, request)
        used += len(request)
    return kept, len(requests) - len(kept)


def ledger_sections(ledger: HandoffLedger) -> dict[str, str]:
    """Heading → body of each non-empty section, in reading order."""
    sections: dict[str, str] = {}
    if ledger.goal:
        sections[F.SECTION_GOAL] = _verbatim(ledger.goal)
    if ledger.requests:
        sections[SECTION_LAST_REQUEST] = _verbatim(ledger.requests[-1])
    earlier, omitted = earlier_requests(ledger.requests[:-1])
    if earlier or omitted:
        note = [f"({omitted} earlier requests omitted: they are in the session transcript)"] if omitted else []
        sections[SECTION_EARLIER] = f"\n{REQUEST_SEPARATOR}\n".join([*note, *(_verbatim(r) for r in earlier)])
    if ledger.constraints:
        sections[F.SECTION_CONSTRAINTS] = _bullets(ledger.constraints)
    if ledger.plan is not None:
        sections[SECTION_PLAN] = ledger.plan.render()
    if ledger.files_changed:
        sections[F.SECTION_FILES_CHANGED] = _bullets(
            [_changed_line(p, k, w) for p, (k, w) in ledger.files_changed.items()])
    if ledger.files_read:
        sections[F.SECTION_FILES_READ] = _bullets(ledger.files_read[-MAX_FILES_READ:])
    if ledger.failed_commands:
        sections[SECTION_FAILED_COMMANDS] = _bullets([f"`{f.command}` → {f.error_tail}" for f in ledger.failed_commands])
    if ledger.latest_error:  # one line, verbatim: what the next fix is judged against
        sections[SECTION_LATEST_ERROR] = ledger.latest_error
    if ledger.verification:
        sections[F.SECTION_VERIFICATION] = ledger.verification
    for title, items in ((SECTION_RULES, ledger.rules), (SECTION_TOOLS, ledger.tools_loaded),
                         (SECTION_TASKS, list(ledger.open_tasks.values()))):
        if items:
            sections[title] = _bullets(items)
    return sections


def render_ledger(ledger: HandoffLedger) -> str:
    """The ledger as hand-off sections (``## Heading`` + body), the user's words quoted whole."""
    return "\n\n".join(f"## {title}\n{body}" for title, body in ledger_sections(ledger).items())


def ledger_items(ledger: HandoffLedger) -> list[tuple[str, str]]:
    """``(kind, text)`` of every item a view must still carry (what :func:`render_ledger` renders)."""
    items: list[tuple[str, str]] = []
    if ledger.goal:
        items.append(("goal", ledger.goal))
    if ledger.requests:
        items.append(("last request", ledger.requests[-1]))
    items += [("constraint", c) for c in ledger.constraints]
    if ledger.plan is not None:
        items += [("plan step", f"{s.text} ({s.status.replace('_', ' ')})") for s in ledger.plan.steps]
    items += [(f"file {kind}", path) for path, (kind, _) in ledger.files_changed.items()]
    # a long command is held clipped ("…"): what must survive is the part the ledger holds
    items += [("failed command", f.command.removesuffix("…")) for f in ledger.failed_commands]
    if ledger.verification:  # its command: a view may hold the result as the tool's own output
        command = re.match(r"`(.+?)` (?:passed|failed)", ledger.verification, re.DOTALL)
        items.append(("verification", (command.group(1) if command else ledger.verification).removesuffix("…")))
    items += [("rule", r) for r in ledger.rules] + [("tool loaded", t) for t in ledger.tools_loaded]
    items += [("open task", t) for t in ledger.open_tasks.values()]
    return items


def _view_text(view: str | Sequence[BaseMessage]) -> str:
    if isinstance(view, str):
        return view
    parts: list[str] = []
    for message in view:
        parts.append(message_text(message))
        if isinstance(message, AIMessage):  # arguments as written: a multi-line command is not JSON-escaped
            for call in message.tool_calls:
                parts += _strings(call.get("args"))
    return "\n".join(parts)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def missing_from(ledger: HandoffLedger, view: str | Sequence[BaseMessage]) -> list[str]:
    """Items of ``ledger`` that ``view`` (its text, or its messages) no longer carries, as
    ``"kind: text"`` lines; ``[]`` when the view carries the whole work state.

    Text is compared case- and whitespace-insensitively (a quoted request counts). With messages,
    the plan also counts as carried when the newest plan call in the view is the same plan.
    """
    haystack = F.normalize(_view_text(view))
    plan_in_view = None if isinstance(view, str) else plan_calls(view).latest
    plan_carried = ledger.plan is not None and same_plan(plan_in_view, ledger.plan)
    missing: list[str] = []
    for kind, item in ledger_items(ledger):
        if kind == "plan step" and plan_carried:
            continue
        if F.normalize(item) not in haystack:
            missing.append(f"{kind}: {' '.join(item.split())[:200]}")
    return missing


def parse_rendered(text: str) -> HandoffLedger:
    """A ledger from a hand-off's text (this module's sections, or an older sheet's), lossy."""
    body = F.summary_body(text)
    sections = _sections(body)
    facts = F.SessionFacts()
    F.merge_previous(facts, F.parse_handoff(body))
    goal = sections.get(F.SECTION_GOAL, "").strip() or facts.goal
    ledger = HandoffLedger(goal=goal, constraints=list(facts.constraints), files_read=list(facts.files_read),
                           verification=facts.latest_verification,
                           latest_error=" ".join(sections.get(SECTION_LATEST_ERROR, "").split()))
    earlier = sections.get(SECTION_EARLIER, "").split(f"\n{REQUEST_SEPARATOR}\n")
    ledger.requests = [r.strip() for r in earlier if r.strip() and not _OMITTED.fullmatch(r.strip())] or list(
        facts.user_requests)
    last = sections.get(SECTION_LAST_REQUEST, "").strip()
    if last:
        ledger.requests.append(last)
    for line in _lines(sections.get(F.SECTION_FILES_CHANGED, "")):
        match = _CHANGED_LINE.match(line)
        path, kind, why = (match.group(1), match.group(2), match.group(3) or "") if match else (
            line.partition(" — ")[0].strip(), EDITED, line.partition(" — ")[2].strip())
        ledger.files_changed[path] = (kind if kind in (CREATED, EDITED, DELETED) else EDITED, why)
    steps = [m for m in (_PLAN_LINE.match(line) for line in _lines(sections.get(SECTION_PLAN, ""))) if m]
    if steps:
        note = next((line[6:] for line in sections[SECTION_PLAN].splitlines() if line.startswith("Note: ")), "")
        ledger.plan = WorkPlan(tuple(PlanStep(m.group(2), m.group(3).replace(" ", "_")) for m in steps), note)
    for line in _lines(sections.get(SECTION_FAILED_COMMANDS, "")):
        command, _, tail = line.partition(" → ")
        ledger.failed_commands.append(FailedCommand(command.strip("`"), tail))
    ledger.rules = _lines(sections.get(SECTION_RULES, ""))
    ledger.tools_loaded = _lines(sections.get(SECTION_TOOLS, ""))
    ledger.open_tasks = {f"text-{i}": t for i, t in enumerate(_lines(sections.get(SECTION_TASKS, "")))}
    return ledger


def _lines(body: str) -> list[str]:
    return [line.strip()[2:] if line.strip().startswith("- ") else line.strip()
            for line in body.splitlines() if line.strip() and line.strip() != "(none)"]


def _sections(body: str) -> dict[str, str]:
    """``## Heading`` → body for the ledger's headings. Only a hand-off's own heading ends a section,
    so a heading inside the user's words stays part of them."""
    sections: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in body.splitlines():
        match = re.match(r"^#{1,3}\s+(.+?)\s*:?\s*$", line)
        if match and match.group(1) in F.KNOWN_HEADINGS:
            if current is not None:
                sections[current] = "\n".join(lines).strip("\n")
            current, lines = match.group(1), []
            continue
        lines.append(line)
    if current is not None:
        sections[current] = "\n".join(lines).strip("\n")
    return {k: v for k, v in sections.items() if k in LEDGER_HEADINGS}
