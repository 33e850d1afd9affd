"""Synthetic coding-agent sessions for engine tests and benchmarks (deterministic per seed).

A session opens with a user goal (and a hard constraint), then alternates API rounds the way a
coding agent does: an assistant message with a short plan and one to three tool calls
(``read_file``, ``grep``, ``edit_file``, ``shell``), their ``ToolMessage`` results (some errors),
an occasional text-only reply and an occasional user follow-up. Assistant messages carry
``usage_metadata`` like a provider's, growing with the conversation.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

TOOLS = ("read_file", "grep", "edit_file", "shell")
WORDS = ("parser", "token", "buffer", "index", "kernel", "cache", "merge", "layout", "vector", "shard", "retry")


@dataclass(slots=True)
class SyntheticSession:
    """Generates rounds one at a time; ``history`` is everything generated so far."""

    seed: int = 0
    result_chars: int = 600
    with_usage: bool = True
    goal: str = "Make the parser handle nested blocks and keep the benchmark green."
    constraint: str = "never edit files under tests/"
    history: list[BaseMessage] = field(default_factory=list)
    _rng: random.Random = field(init=False)
    _n: int = 0
    _usage: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def _id(self, kind: str) -> str:
        self._n += 1
        return f"{kind}-{self.seed}-{self._n}"

    def _text(self, chars: int) -> str:
        rng = self._rng
        out: list[str] = []
        size = 0
        while size < chars:
            word = rng.choice(WORDS)
            line = f"{word}_{rng.randint(0, 999)} = compute({word}, {rng.randint(0, 99)})"
            out.append(line)
            size += len(line) + 1
        return "\n".join(out)

    def start(self) -> list[BaseMessage]:
        first = HumanMessage(f"{self.goal}\n{self.constraint}", id=self._id("user"))
        self.history.append(first)
        return [first]

    def round(self) -> list[BaseMessage]:
        """The next API round (or user follow-up), appended to ``history`` and returned."""
        rng = self._rng
        if not self.history:
            return self.start()
        roll = rng.random()
        if roll < 0.05:
            msgs: list[BaseMessage] = [HumanMessage(f"Also check the {rng.choice(WORDS)} module.", id=self._id("user"))]
        elif roll < 0.12:
            msgs = [self._ai(f"Next I will look at src/{rng.choice(WORDS)}.py.", [])]
        else:
            calls = []
            for _ in range(rng.randint(1, 3)):
                tool = rng.choice(TOOLS)
                path = f"src/{rng.choice(WORDS)}_{rng.randint(0, 40)}.py"
                args = {"command": f"pytest -q tests/test_{rng.choice(WORDS)}.py"} if tool == "shell" else (
                    {"pattern": rng.choice(WORDS), "path": "src"} if tool == "grep" else {"file_path": path})
                calls.append({"id": self._id("call"), "name": tool, "args": args})
            ai = self._ai(f"Checking {len(calls)} things about {rng.choice(WORDS)}.", calls)
            msgs = [ai]
            for call in calls:
                failed = rng.random() < 0.1
                body = f"Error: {rng.choice(WORDS)} failed at line {rng.randint(1, 500)}" if failed else \
                    self._text(rng.randint(self.result_chars // 3, self.result_chars))
                msgs.append(ToolMessage(body, tool_call_id=call["id"], name=call["name"], id=self._id("tool"),
                                        status="error" if failed else "success"))
        self.history.extend(msgs)
        return msgs

    def _ai(self, text: str, calls: list[dict]) -> AIMessage:
        message = AIMessage(text, tool_calls=calls, id=self._id("ai"))
        if self.with_usage:
            self._usage += sum(len(str(m.content)) for m in self.history[-4:]) // 4 + 40
            message.usage_metadata = {"input_tokens": self._usage, "output_tokens": 40,
                                      "total_tokens": self._usage + 40}
        return message

    def grow_to(self, n_messages: int) -> list[BaseMessage]:
        while len(self.history) < n_messages:
            self.round()
        return self.history

    def rounds(self) -> Iterator[list[BaseMessage]]:
        while True:
            yield self.round()
