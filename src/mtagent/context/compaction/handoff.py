"""Hand-off verifier: nothing the user set as a rule is silently lost by a summary.

A model-written summary paraphrases, and paraphrase drops things. After any summary (LLM,
extractive or session memory) :func:`verify_handoff` checks that it mentions the user goal,
every user constraint (verbatim, case- and space-insensitive), every file changed and the
latest error — from the summarized messages *and* from the previous hand-off. Whatever is
missing is appended as a short ``## Carried facts`` block that the next compaction parses
back (:func:`mtagent.context.compaction.facts.merge_previous`), so facts survive any number of
compactions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from mtagent.context.compaction import facts as F


@dataclass(slots=True, frozen=True)
class HandoffCheck:
    """The verified summary and what had to be carried into it."""

    summary: str
    missing: list[str] = field(default_factory=list)

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


def verify_handoff(
    summary: str,
    messages: Sequence[BaseMessage],
    *,
    previous_summary: str | None = None,
    found: F.SessionFacts | None = None,
) -> HandoffCheck:
    """Return ``summary`` with a ``Carried facts`` block for anything it fails to mention."""
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
    if not missing:
        return HandoffCheck(summary)
    block = f"## {F.SECTION_CARRIED}\n" + "\n".join(f"- {line}" for line in missing)
    return HandoffCheck(f"{summary.rstrip()}\n\n{block}", missing)
