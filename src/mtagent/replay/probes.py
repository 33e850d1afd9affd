"""Fact retention: which facts of the session so far are still visible in a strategy's view.

Probes are computed once from the full recording, before and independent of any strategy:

* ``task`` — distinctive identifiers of the task (with a digit, dot, slash, underscore, hyphen
  or inner capital): file paths, ``backticked`` names, called functions and issue ids / slugs
  from the first user message that has any;
* ``error`` — the latest error line seen so far in a tool result (one probe at a time): a
  line naming an ``…Error``/``…Exception``, ``Error:``, a traceback, ``FAILED``, ``error:``,
  ``fatal:`` or ``panic:``; lines of numbered file listings, grep hits, comments and tables
  are source text, not errors — but Elixir's and Erlang's ``** (RuntimeError) …`` /
  ``** exception error: …`` are how those report every exception, not comments;
* ``files_changed`` — every file an edit/write call (or a shell redirect / ``sed -i``) touched
  so far, as ``parent/name``;
* ``constraints`` — user sentences that say must / never / do not / only / always / make sure.

A probe is visible when its text is a substring of a view message (constraints compare
case- and whitespace-insensitively). Retention at a turn is the mean, over the categories that have probes
by then, of the share of that category's probes visible — so 40 template sentences do not
outweigh one error line. Injected user content (reminders, command echoes) is not a source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.context.compaction import facts as F
from mtagent.context.tokens import message_text
from mtagent.replay.trajectory import Trajectory
from mtagent.replay.work_state import WorkStateProbe

CATEGORIES = ("task", "error", "files_changed", "constraints")
MAX_TASK_PROBES = 12
MIN_PROBE_CHARS = 4
MAX_ERROR_CHARS = 160

_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.[A-Za-z]{1,6}|[\w-]+\.(?:py|js|ts|tsx|go|rs|c|h|cc|cpp|java|rb|ex|exs|md|toml|yaml|yml|json|cfg|ini|sh|pony|sql))\b")
_BACKTICK = re.compile(r"`([^`\n]{3,60})`")
_CODE_NAME = re.compile(r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")
_CALLED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]{3,}(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\(")
_ISSUE = re.compile(r"(?<![\w#/.-])(#\d{2,}|[A-Z][A-Z0-9]+-\d+|[a-z][a-z0-9]+-[a-z0-9]*\d[a-z0-9]*|[a-z][a-z0-9]+-[a-z0-9]{3})(?![\w/-]|\.\w)")
_DISTINCTIVE = re.compile(r"[._/#(\-\d]|[a-z][A-Z]|^[A-Z]{2,}")
_CONSTRAINT = re.compile(r"\b(must|never|do not|don't|dont|always|only|make sure|should not|shouldn't|avoid)\b", re.IGNORECASE)
_EDIT_TOOL = re.compile(r"(edit|write|str_replace|create|insert|patch|multiedit)", re.IGNORECASE)
_PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path")
_SHELL_WRITE = re.compile(r"(?:(?<![|=\-<>])>>?|\btee(?:\s+-a)?)\s*['\"]?([\w./-]+\.\w{1,6})\b|\bsed\s+-i[^\n|;&]*?\s['\"]?([\w./-]+\.\w{1,6})['\"]?\s*(?:$|[;&|\n])")
_INJECTED_PREFIXES = (
    "<system-reminder>", "<command-", "<local-command", "<task-notification>", "Caveat:", "[Request interrupted",
)


@dataclass(slots=True)
class Probe:
    category: str
    text: str
    ignore_case: bool = False


@dataclass(slots=True)
class ProbeSet:
    """All probes of a recording and, per model call, the mask of those active by then."""

    probes: list[Probe]
    active: list[int]
    category_masks: dict[str, int]
    work: WorkStateProbe | None = None  # the work-state ledger per model call (replay.work_state)
    _memo: dict[tuple[object, ...], int] = field(default_factory=dict)

    def visible_mask(self, view: Sequence[BaseMessage]) -> int:
        mask = 0
        for m in view:
            mask |= self._contains(m)
        return mask

    def _contains(self, m: BaseMessage) -> int:
        content = m.content
        key = (m.id, m.type, hash(content) if isinstance(content, str) else id(content), len(getattr(m, "tool_calls", None) or ()))
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        text = message_text(m)
        folded = " ".join(text.lower().split())
        mask = 0
        for i, p in enumerate(self.probes):
            if p.text in (folded if p.ignore_case else text):
                mask |= 1 << i
        self._memo[key] = mask
        return mask

    def retention(self, turn: int, view: Sequence[BaseMessage]) -> float | None:
        """Mean per-category share of active probes visible at ``turn``; None if none active."""
        shares = self.retention_by_kind(turn, view)
        return sum(shares.values()) / len(shares) if shares else None

    def retention_by_kind(self, turn: int, view: Sequence[BaseMessage]) -> dict[str, float]:
        """Per probe kind with active probes at ``turn``, the share of them visible in ``view``."""
        active = self.active[turn]
        if not active:
            return {}
        seen = self.visible_mask(view) & active
        shares: dict[str, float] = {}
        for category, cat_mask in self.category_masks.items():
            want = active & cat_mask
            if want:
                shares[category] = (seen & cat_mask).bit_count() / want.bit_count()
        return shares


def _is_injected(m: BaseMessage) -> bool:
    meta = (m.response_metadata or {}).get("mtagent") or {}
    return bool(meta.get("injected")) or str(m.content).lstrip().startswith(_INJECTED_PREFIXES)


def task_identifiers(text: str) -> list[str]:
    found: list[str] = []
    for pattern in (_PATH, _BACKTICK, _CALLED, _ISSUE, _CODE_NAME):
        for match in pattern.finditer(text):
            token = match.group(1).strip()
            if (
                len(token) >= MIN_PROBE_CHARS
                and _DISTINCTIVE.search(token)
                and f"<{token}>" not in text
                and token not in found
            ):
                found.append(token)
    found.sort(key=text.find)
    return found[:MAX_TASK_PROBES]


def latest_error_line(text: str) -> str | None:
    for line in reversed(text.splitlines()):  # the engine's error line (facts.error_line), cut but not clipped
        stripped = line.strip()
        if len(stripped) >= F.MIN_ERROR_CHARS and F.STRICT_ERROR_LINE.search(stripped) \
                and not F.SOURCE_LINE.match(line):
            return stripped[:MAX_ERROR_CHARS]
    return None


def constraint_sentences(text: str) -> list[str]:
    out: list[str] = []
    for piece in re.split(r"(?<=[.!?])\s+|\n+", text):
        sentence = " ".join(piece.split())
        if 20 <= len(sentence) <= 200 and _CONSTRAINT.search(sentence):
            out.append(sentence.lower())
    return out


def changed_files(m: AIMessage) -> list[str]:
    paths: list[str] = []
    for call in m.tool_calls:
        args = call.get("args") or {}
        command = str(args.get("command", ""))
        if _EDIT_TOOL.search(call["name"]) or command in ("create", "str_replace", "insert", "edit"):
            for key in _PATH_KEYS:
                if isinstance(args.get(key), str) and args[key].strip():
                    paths.append(args[key].strip())
                    break
        for value in args.values():
            if isinstance(value, str):
                for match in _SHELL_WRITE.finditer(value):
                    paths.append(match.group(1) or match.group(2))
    return [_short_path(p) for p in paths if p and not p.startswith("/dev/")]


def _short_path(path: str) -> str:
    parts = [p for p in path.split("/") if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else path


def build_probes(traj: Trajectory) -> ProbeSet:
    """Probes of ``traj`` and the active set at each of its model calls."""
    probes: list[Probe] = []
    index: dict[tuple[str, str], int] = {}
    born: list[tuple[int, int, str]] = []  # (message index, probe index, category)
    latest_error: list[tuple[int, int]] = []

    def add(category: str, text: str, at: int, ignore_case: bool = False) -> int:
        key = (category, text)
        if key not in index:
            index[key] = len(probes)
            probes.append(Probe(category, text, ignore_case))
        born.append((at, index[key], category))
        return index[key]

    task_seen = False
    for i, m in enumerate(traj.messages):
        if isinstance(m, HumanMessage) and not _is_injected(m):
            text = message_text(m)
            if not task_seen:
                ids = task_identifiers(text)
                if ids:
                    task_seen = True
                    for token in ids:
                        add("task", token, i)
            for sentence in constraint_sentences(text):
                add("constraints", sentence, i, ignore_case=True)
        elif isinstance(m, ToolMessage):
            line = latest_error_line(message_text(m))
            if line:
                latest_error.append((i, add("error", line, i)))
        elif isinstance(m, AIMessage):
            for path in changed_files(m):
                if len(path) >= MIN_PROBE_CHARS:
                    add("files_changed", path, i)
    active: list[int] = []
    for call_index in traj.model_calls:
        mask = 0
        for at, p_index, category in born:
            if at < call_index and category != "error":
                mask |= 1 << p_index
        current = [p for at, p in latest_error if at < call_index]
        if current:
            mask |= 1 << current[-1]
        active.append(mask)
    category_masks = {c: 0 for c in CATEGORIES}
    for i, p in enumerate(probes):
        category_masks[p.category] |= 1 << i
    return ProbeSet(probes=probes, active=active, category_masks=category_masks, work=WorkStateProbe(traj.messages))
