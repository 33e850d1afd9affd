"""Repeated tool output as a reference: a run of lines the model already has is not sent twice.

Agents re-run the same test suite, re-read the same file, re-print the same log: replayed on the
shared trajectories, about a tenth of all tool-output tokens are runs of five or more lines that an
earlier result of the same session already holds, line for line. Each of those tokens is written
to the prompt cache again and re-read on every later call. When a result arrives, each maximal run
of at least ``min_lines`` lines that an earlier result *still in the view* holds in the same order
becomes one line naming it::

    [lines 12–40 repeat lines 3–31 of the result of call_7 (shell) above]

Error lines (:data:`~mtagent.context.compaction.facts.STRICT_ERROR_LINE`) are never folded: they
split a run and stay, so the latest error stays verbatim where it happened. Blank lines never
start a match. A reference is only made to a result the previous request still carried
unchanged (:meth:`RepeatIndex.retain` runs on every prepared request), so a compaction or a
cleared result drops its lines from the index and the model is never pointed at output it can no
longer see; should a compaction remove the earlier result later, the reference says to re-run.

The decision is taken once, as the result arrives, and recorded like the budget's (a resumed
session reads the recorded text). The index holds hashes, not text, and is bounded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from langchain_core.messages import ToolMessage

from mtagent.context.compaction.facts import STRICT_ERROR_LINE

MIN_RUN_LINES = 5  # shorter repeats are left alone: a reference line would save little
MAX_INDEXED_WINDOWS = 500_000  # ≈ 40 MB of hashes at most; later results are simply not indexed
REFERENCE = "[lines {first}–{last} repeat lines {src_first}–{src_last} of the result of {call} ({tool}) above; re-run it if that result is gone]"


def _window_key(lines: list[str], start: int, size: int) -> int:
    return hash(tuple(lines[start:start + size]))


@dataclass(slots=True)
class _Source:
    tool: str
    content_hash: int
    keys: list[int] = field(default_factory=list)


@dataclass(slots=True)
class RepeatIndex:
    """Windows of ``min_lines`` lines of the results in the view → (call id, first line); 0 = off."""

    min_lines: int = MIN_RUN_LINES
    _windows: dict[int, tuple[str, int]] = field(default_factory=dict)
    _sources: dict[str, _Source] = field(default_factory=dict)

    def fold(self, message: ToolMessage) -> ToolMessage:
        """``message`` with each run an earlier result in the view holds folded into a reference."""
        content = message.content
        if self.min_lines <= 0 or not isinstance(content, str) or not self._windows:
            return message
        lines = content.split("\n")
        folded = self._fold(lines) if len(lines) >= self.min_lines else None
        return message if folded is None else message.model_copy(update={"content": "\n".join(folded)})

    def add(self, message: ToolMessage) -> None:
        """Index a result as the model sees it (after folding and budgeting)."""
        if self.min_lines > 0 and isinstance(message.content, str) and message.tool_call_id not in self._sources:
            self._index(message.tool_call_id, str(message.name or "tool"), message.content)

    def _fold(self, lines: list[str]) -> list[str] | None:
        n = self.min_lines
        keep_error = [bool(STRICT_ERROR_LINE.search(line)) for line in lines]
        covered: list[tuple[str, int] | None] = [None] * len(lines)
        for i in range(len(lines) - n + 1):
            if not lines[i].strip():
                continue
            hit = self._windows.get(_window_key(lines, i, n))
            if hit is None:
                continue
            for j in range(n):
                if covered[i + j] is None:
                    covered[i + j] = (hit[0], hit[1] + j)
        out: list[str] = []
        i = 0
        changed = False
        while i < len(lines):
            if covered[i] is None or keep_error[i]:
                out.append(lines[i])
                i += 1
                continue
            start = i
            call = covered[i][0]  # type: ignore[index]
            while i < len(lines) and covered[i] is not None and not keep_error[i] and covered[i][0] == call:  # type: ignore[index]
                i += 1
            if i - start < n:
                out += lines[start:i]
                continue
            src_first = covered[start][1]  # type: ignore[index]
            src_last = covered[i - 1][1]  # type: ignore[index]
            tool = self._sources[call].tool if call in self._sources else "tool"
            out.append(REFERENCE.format(first=start + 1, last=i, src_first=src_first + 1, src_last=src_last + 1,
                                        call=call, tool=tool))
            changed = True
        return out if changed else None

    def _index(self, call_id: str, tool: str, text: str) -> None:
        source = _Source(tool, hash(text))
        lines = text.split("\n")
        n = self.min_lines
        for i in range(len(lines) - n + 1):
            if len(self._windows) >= MAX_INDEXED_WINDOWS:
                break
            if not lines[i].strip():
                continue
            key = _window_key(lines, i, n)
            if key not in self._windows:
                self._windows[key] = (call_id, i)
                source.keys.append(key)
        self._sources[call_id] = source

    def retain(self, results: Iterable[ToolMessage]) -> None:
        """Keep only the sources that ``results`` (the tool results of the request just prepared)
        still carry unchanged; a compacted-away or cleared result leaves the index."""
        if not self._sources:
            return
        present = {m.tool_call_id: m.content for m in results}
        for call_id in [c for c, s in self._sources.items()
                        if not isinstance(present.get(c), str) or hash(present[c]) != s.content_hash]:
            source = self._sources.pop(call_id)
            for key in source.keys:
                if self._windows.get(key, ("",))[0] == call_id:
                    del self._windows[key]
