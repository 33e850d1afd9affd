"""Incremental hand-offs: summarize only what is new, merge it into the previous sheet by section.

The second and later compactions of a session used to re-write the whole hand-off from the old
sheet plus the messages since — every compaction paid output tokens (the dearest kind) for facts
that were already written. Now the summarizer writes a *delta* sheet for the messages since the
last boundary, and :func:`merge_handoffs` folds it into the previous sheet section by section:

* goal — the previous one stands; what the delta calls a goal is a later request;
* constraints, files read, files changed (by path, newest reason wins), failed attempts,
  key facts — the union, oldest first (lists other than constraints and files changed keep their
  newest ``max_items``);
* current state, latest verification, next step — the delta's when it says anything;
* findings and hypotheses (the model's part) — the union, newest ``max_items``;
* a section under any other heading is kept — the delta's when it has one, else the previous
  sheet's (a session-memory compaction's notes: a full compaction after one carries every section).

The previous sheet's ``Carried facts`` are not copied: the hand-off verifier re-derives them from
the previous sheet and adds whatever the merged sheet still lacks, so they never pile up.
"""

from __future__ import annotations

from mtagent.context.compaction import facts as F
from mtagent.context.ledger import LEDGER_HEADINGS

MAX_LIST_ITEMS = 12
_UNION_TAIL = {F.SECTION_FACTS: MAX_LIST_ITEMS, F.SECTION_FILES_READ: 2 * MAX_LIST_ITEMS,
               F.SECTION_FAILED: MAX_LIST_ITEMS, "Findings": MAX_LIST_ITEMS, "Hypotheses": MAX_LIST_ITEMS // 2}
# The model's part of a hand-off (compaction/summarize.MODEL_SECTIONS) beside the older sheet's.
_MODEL_LISTS = ("Findings", "Hypotheses")
_DELTA_WINS = (F.SECTION_STATE, F.SECTION_VERIFICATION, F.SECTION_NEXT)


def _union(old: list[str], new: list[str]) -> list[str]:
    out = list(old)
    for line in new:
        if line in out:
            out.remove(line)
        out.append(line)
    return out


def _files_changed(old: list[str], new: list[str]) -> list[str]:
    merged: dict[str, str] = {}
    for line in [*old, *new]:
        path, _, why = line.partition(" — ")
        path = path.strip()
        merged.pop(path, None)
        merged[path] = why.strip()
    return [f"{path} — {why}" if why else path for path, why in merged.items()]


def _goal(old: list[str], new: list[str]) -> list[str]:
    old = [line for line in old if line != "(not stated)"]
    new = [line for line in new if line != "(not stated)"]
    old_goal, old_later = F.split_goal(old)
    new_goal, new_later = F.split_goal(new)
    if not old_goal:
        return new or old
    goal = F.normalize("\n".join(old_goal))
    # A delta that restates the goal (a model often does) is not a later request.
    restated = " ".join(" ".join(new_goal).split())
    fresh = [restated] if restated and not F.mentions_goal(goal, restated) else []
    later = _union(_union(old_later, fresh), [line for line in new_later if not F.mentions(goal, line)])
    return [*old_goal, F.LATER_REQUESTS, *later] if later else old_goal


def _bullets(lines: list[str], section: str) -> str:
    if not lines:
        return "(none)"
    if section == F.SECTION_GOAL:
        head, later = (lines, [])
        if F.LATER_REQUESTS in lines:
            cut = lines.index(F.LATER_REQUESTS)
            head, later = lines[:cut], lines[cut + 1:]
        text = "\n".join(head)
        if later:
            text += f"\n{F.LATER_REQUESTS}\n" + "\n".join(f"- {line}" for line in later)
        return text
    if section in (F.SECTION_VERIFICATION, F.SECTION_NEXT):
        return "\n".join(lines)
    return "\n".join(f"- {line}" for line in lines)


EARLIER = " (earlier)"


def _earlier(section: str) -> str:
    return section if section.endswith(EARLIER) else section + EARLIER


def merge_handoffs(previous: str | None, delta: str) -> str:
    """The previous hand-off with ``delta`` (a sheet of what happened since) merged in."""
    if not previous or not previous.strip():
        return delta
    old = F.parse_handoff(previous)
    new = F.parse_handoff(delta)
    merged: dict[str, list[str]] = {}
    for section in F.HANDOFF_SECTIONS:
        a, b = old.get(section, []), new.get(section, [])
        if section == F.SECTION_GOAL:
            merged[section] = _goal(a, b)
        elif section == F.SECTION_FILES_CHANGED:
            merged[section] = _files_changed(a, b)
        elif section in _DELTA_WINS:
            merged[section] = b or a
        else:
            lines = _union(a, b)
            limit = _UNION_TAIL.get(section)
            merged[section] = lines[-limit:] if limit else lines
    for section in _MODEL_LISTS:
        if section in old or section in new:
            merged[section] = _union(old.get(section, []), new.get(section, []))[-_UNION_TAIL[section]:]
    # e.g. session-memory notes: every section of them is carried, first and named as earlier — a value
    # the delta states anew (a setting changed since) comes after it and wins; a stale value never
    # stood below the fresh one, read as the newer
    carried = {section: [line for line in lines if not F.NOTES_ASIDE.fullmatch(line)]
               for section, lines in old.items()
               if section not in merged and section not in new and section != F.SECTION_CARRIED}
    earlier = {_earlier(s): lines for s, lines in carried.items() if s not in LEDGER_HEADINGS}
    merged = {**earlier, **merged}
    for section, lines in new.items():
        if section not in merged and section != F.SECTION_CARRIED:
            merged[section] = lines
    merged.update({s: lines for s, lines in carried.items() if s in LEDGER_HEADINGS})  # the engine renders these
    return "\n\n".join(f"## {title}\n{_bullets(lines, title)}" for title, lines in merged.items())
