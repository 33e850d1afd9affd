"""Optional end-of-turn memory extraction (spec 002 "extractMemories"; off by default).

After a turn that ended without a tool call — the model answered, the user is about to speak —
a chat model reads the conversation since the last extraction together with what is already
remembered, and proposes durable facts. They are added to the *project* memory (``MEMORY.md``
in the project's memory folder), deduplicated like any other memory. The model gets no tools
and names no paths: the only thing that can be written is a list item in that one file, so
extraction can never write outside the memory folder. A proposed fact that contradicts a
project rule is dropped (the rule has higher authority).

Enable with ``memory.auto_extract = true``.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from mtagent.config import Settings
from mtagent.context.static import memory
from mtagent.context.static.authority import Authority, AuthorityItem, detect_conflicts
from mtagent.context.static.rules import load_rules
from mtagent.context.session_memory.manager import last_turn_had_tool_calls
from mtagent.context.session_memory.notes import conversation
from mtagent.context.compaction.summarize import ChatModel, render_transcript
from mtagent.context.tokens import MessageTokenCounter, message_text
from mtagent.frames import frame
from mtagent.session.local import local_home

EXTRACT_SYSTEM_PROMPT = """You decide what an AI coding agent should remember about this project \
for future sessions. Propose only durable facts that will still be true and useful next week: \
user preferences, project conventions, how to build/test/run things, hard-won lessons. \
Never propose task progress, temporary state, secrets, or anything already remembered.

Answer with one fact per line, each starting with "- ", at most {max_facts} lines, each a short \
self-contained sentence. Answer NONE when nothing is worth remembering."""

NONE_REPLY = re.compile(r"^\s*(none|nothing)\.?\s*$", re.IGNORECASE)


@dataclass(slots=True, frozen=True)
class ExtractionResult:
    added: list[str]
    skipped: list[str]  # duplicates, or facts that contradict a rule
    ran: bool


def parse_proposed_facts(reply: str, max_facts: int) -> list[str]:
    """The "- fact" lines of a reply, cleaned, at most ``max_facts``."""
    if NONE_REPLY.match(reply):
        return []
    facts: list[str] = []
    for line in reply.splitlines():
        stripped = line.strip()
        if stripped.startswith(("- ", "* ")):
            text = re.sub(r"\s+", " ", stripped[2:]).strip()
            if text and text not in facts:
                facts.append(text)
    return facts[:max_facts]


@dataclass
class MemoryExtractor:
    """Runs extraction at most once at a time; a cursor makes every message seen exactly once."""

    model: ChatModel
    project_root: Path
    settings: Settings = field(default_factory=Settings)
    last_message_id: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def _new_messages(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        if self.last_message_id is not None:
            for i in range(len(messages) - 1, -1, -1):
                if messages[i].id == self.last_message_id:
                    return list(messages[i + 1:])
        return list(messages)

    def _bounded(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        counter = MessageTokenCounter(encoding=self.settings.context.encoding)
        budget = self.settings.memory.extract_input_max_tokens
        used, start = 0, len(messages)
        for i in range(len(messages) - 1, -1, -1):
            used += counter.message_tokens(messages[i])
            if used > budget and start < len(messages):
                break
            start = i
        return messages[start:]

    def maybe_extract(self, messages: Sequence[BaseMessage]) -> ExtractionResult:
        """Extract after a turn without tool calls, when enabled; otherwise do nothing."""
        if not self.settings.memory.auto_extract or last_turn_had_tool_calls(messages):
            return ExtractionResult([], [], ran=False)
        if not any(isinstance(m, AIMessage) for m in messages):
            return ExtractionResult([], [], ran=False)
        if not self._lock.acquire(blocking=False):
            return ExtractionResult([], [], ran=False)  # the running one's cursor covers these next time
        try:
            return self._extract(list(messages))
        finally:
            self._lock.release()

    def _extract(self, messages: list[BaseMessage]) -> ExtractionResult:
        new = conversation(self._new_messages(messages))
        if not new:
            return ExtractionResult([], [], ran=False)
        cfg = self.settings.memory
        known = memory.memory_file("global").active() + memory.memory_file(
            "project", self.project_root, index_max_lines=cfg.index_max_lines, home=local_home(self.settings)).active()
        remembered = "\n".join(f"- {f}" for f in known) or "(nothing yet)"
        transcript = render_transcript(self._bounded(new), tool_result_chars=self.settings.tool_results.preview_chars)
        request = [
            SystemMessage(content=EXTRACT_SYSTEM_PROMPT.format(max_facts=cfg.extract_max_facts)),
            HumanMessage(content=f"Already remembered:\n{remembered}\n\nRecent conversation:\n"
                                 + frame("transcript", transcript)),
        ]
        reply = self.model.invoke(request)
        text = message_text(reply) if isinstance(reply, BaseMessage) else str(reply)
        self.last_message_id = next((str(m.id) for m in reversed(messages) if m.id is not None), self.last_message_id)
        rules = load_rules(self.project_root, cfg)
        rule_items = [AuthorityItem(f"rule:{r.source}", Authority.PROJECT_RULES, r.text) for r in rules.rules]
        added: list[str] = []
        skipped: list[str] = []
        for fact in parse_proposed_facts(text, cfg.extract_max_facts):
            item = AuthorityItem("proposed", Authority.LONG_TERM_MEMORY, fact)
            if detect_conflicts([*rule_items, item]):
                skipped.append(fact)
                continue
            result = memory.save_memory(fact, "project", self.project_root, home=local_home(self.settings))
            (added if result.added else skipped).append(fact)
        return ExtractionResult(added, skipped, ran=True)


def extract_memories(model: ChatModel, messages: Sequence[BaseMessage],
                     project_root: str | os.PathLike[str], settings: Settings | None = None) -> ExtractionResult:
    """One-shot form of :class:`MemoryExtractor` (no cursor: reads all of ``messages``)."""
    return MemoryExtractor(model, Path(project_root), settings or Settings()).maybe_extract(messages)
