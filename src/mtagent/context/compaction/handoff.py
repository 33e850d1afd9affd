"""Hand-off verifier: nothing the user set as a rule is silently lost by a summary.

A model-written summary paraphrases, and paraphrase drops things. After any summary (LLM,
extractive or session memory) :func:`verify_handoff` checks that it mentions the user goal,
every user constraint (verbatim, case- and space-insensitive), every file changed and the
latest error — from the summarized messages *and* from the previous hand-off. Whatever is
missing is appended as a short ``## Carried facts`` block that the next compaction parses
back (:func:`mtagent.context.compaction.facts.merge_previous`), so facts survive any number of
compactions.

The goal is held to a stricter rule, because the next compaction finds it only under
``## User goal``: a summary whose goal section does not state the goal verbatim (the notes of a
session-memory compaction have none; a model may paraphrase it or write ``(not stated)``) gets the
goal written there, line breaks and all (:func:`with_goal`). Otherwise a chain of compactions —
session memory, then a full one — hands the next engineer a sheet without the task.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

from mtagent.context.compaction import facts as F
from mtagent.context.ledger import LEDGER_HEADINGS, ledger_from_messages, render_ledger
from mtagent.context.ledger.workplan import plan_calls

_NO_GOAL = ("", "(not stated)", "(none)")


@dataclass(slots=True, frozen=True)
class HandoffCheck:
    """The verified summary, what had to be carried into it, and (when composed) its ledger as data."""

    summary: str
    missing: list[str] = field(default_factory=list)
    ledger: dict[str, Any] | None = None

    @property
    def complete(self) -> bool:
        return not self.missing


def required_facts(found: F.SessionFacts) -> list[tuple[str, str]]:
    """(kind, text) pairs a hand-off must mention."""
    required: list[tuple[str, str]] = []
    if found.goal:
        required.append(("Goal", found.goal))
    required += [("Constraint", line) for line in found.constraints]
    required += [("File changed", path) for path in found.files_changed]
    if found.latest_error:
        required.append(("Latest error", found.latest_error))
    return required


def with_goal(summary: str, goal: str) -> str:
    """``summary`` with ``goal`` verbatim under ``## User goal``, where the next compaction reads it.

    Unchanged when the goal it reads there already contains ``goal``. Otherwise the section's
    goal lines are replaced — by the goal, with what they said instead kept as a later request
    unless it was only a wording of the goal — or the section is put first when there is none.
    """
    if F.mentions(F.normalize(F.handoff_goal(summary)), goal):
        return summary
    body = F.summary_body(summary)
    lines = body.splitlines()
    span = F.goal_section_span(lines)
    if span is None:
        return summary.replace(body, f"## {F.SECTION_GOAL}\n{goal}\n\n{body}", 1) if body else f"## {F.SECTION_GOAL}\n{goal}"
    start, end = span
    section = [line for line in lines[start + 1:end] if line.strip()]
    cut = next((i for i, line in enumerate(section) if line.strip() == F.LATER_REQUESTS), len(section))
    said = " ".join(" ".join(section[:cut]).split())
    later = section[cut + 1:]
    if said not in _NO_GOAL and not F.mentions_goal(F.normalize(said), goal) and not any(
            F.mentions(F.normalize(line), said) for line in later):
        later.append(f"- {said}")
    new = [lines[start], goal, *([F.LATER_REQUESTS, *later] if later else []), ""]
    return summary.replace(body, "\n".join([*lines[:start], *new, *lines[end:]]).rstrip(), 1)


def verify_handoff(
    summary: str,
    messages: Sequence[BaseMessage],
    *,
    previous_summary: str | None = None,
    found: F.SessionFacts | None = None,
) -> HandoffCheck:
    """Return ``summary`` with the goal under its heading and a ``Carried facts`` block for
    anything else it fails to mention."""
    if found is None:
        found = F.extract_facts(messages, previous_summary)
    haystack = F.normalize(summary)
    missing: list[str] = []
    for kind, text in required_facts(found):
        present = F.mentions_goal(haystack, text) if kind == "Goal" else F.mentions(haystack, text)
        if kind == "Latest error" and not present and found.latest_error_line:
            # The error line itself is what matters, in full; the "tool args:" prefix is our framing.
            present = F.mentions(haystack, found.latest_error_line)
        if not present:
            missing.append(f"{kind}: {' '.join(text.split())}")
    if found.goal:
        summary = with_goal(summary, found.goal)
    carried = [line for line in missing if not line.startswith("Goal: ")]
    if not carried:
        return HandoffCheck(summary, missing)
    block = f"## {F.SECTION_CARRIED}\n" + "\n".join(f"- {line}" for line in carried)
    return HandoffCheck(f"{summary.rstrip()}\n\n{block}", missing)


# A model's text under these headings is dropped: the ledger states them exactly, and the verifier
# re-derives the carried facts.
_ENGINE_HEADINGS = frozenset({*LEDGER_HEADINGS, F.SECTION_CARRIED})
_HEADING_LINE = re.compile(r"^#{1,3}\s*(.+?)\s*:?\s*$")


def model_blocks(text: str) -> list[tuple[str, str]]:
    """``(heading, block text)`` of a summary's sections, split only at a hand-off's own headings
    (a heading the model invents stays inside the section it is in); text before any heading has
    the heading ``""``."""
    blocks: list[tuple[str, list[str]]] = [("", [])]
    for line in F.summary_body(text).splitlines():
        match = _HEADING_LINE.match(line.strip())
        if match and match.group(1) in F.KNOWN_HEADINGS:
            blocks.append((match.group(1), [line]))
        else:
            blocks[-1][1].append(line)
    return [(title, "\n".join(lines).strip()) for title, lines in blocks if "\n".join(lines).strip()]


def compose_handoff(
    model_text: str,
    summarized: Sequence[BaseMessage],
    kept: Sequence[BaseMessage] = (),
    *,
    previous_summary: str | None = None,
    rules: Sequence[str] = (),
) -> HandoffCheck:
    """The hand-off: the engine's ledger of ``summarized`` (rendered exactly) + the model's part.

    The model's text loses any section the ledger states (goal, requests, constraints, plan, files,
    failed commands, verification …: a model may not restate — or replace — the user's words).
    Session-memory notes sections of ``previous_summary`` that the model's text does not have are
    carried whole. The plan is the newest one, also when the newest plan call is in ``kept``.
    The result passes :func:`verify_handoff` (for the model's part), with the ledger's goal.
    """
    ledger = ledger_from_messages(summarized)
    ledger.rules += [rule for rule in rules if rule not in ledger.rules]  # in force now: the system prompt's
    newest = plan_calls(kept).latest
    if newest is not None:
        ledger.plan = newest
    blocks = [(title, body) for title, body in model_blocks(model_text) if title not in _ENGINE_HEADINGS]
    titles = {title for title, _ in blocks}
    if previous_summary:
        blocks += [(title, body) for title, body in model_blocks(previous_summary)
                   if title in F.NOTES_HEADINGS and title not in titles]
    text = "\n\n".join(part for part in (render_ledger(ledger), *(body for _, body in blocks)) if part)
    found = F.extract_facts(summarized, previous_summary)
    found.goal = ledger.goal or found.goal
    check = verify_handoff(text, summarized, previous_summary=previous_summary, found=found)
    return HandoffCheck(check.summary, check.missing, ledger.to_dict())
