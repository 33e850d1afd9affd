"""Which tool calls run on their own, which need the user's yes, and which never run.

Rules come from ``agent.approval``: a tool name (``"write_file": "allow"``), a tool-name glob
(``"mcp__github__*": "allow"``; the longest matching pattern wins) or a shell command glob
(``"shell:git status*": "allow"``, ``"shell:rm *": "deny"``) mapped to ``ask``, ``allow`` or
``deny``. Tools that change things (shell, write_file, edit_file) and every MCP server's tool
(``mcp__<server>__<tool>``, and ``mcp_list_resources`` / ``mcp_read_resource``) default to ``ask``;
the rest to ``allow``.

A shell command is read with a shell lexer (:mod:`shlex` with ``punctuation_chars``). A
``deny`` pattern is checked against every part (``git status && rm -rf x`` is split on its
operators) and denies the whole command. An ``allow`` pattern only ever matches a *simple*
command: one that has no operators (``;`` ``&`` ``&&`` ``|`` ``||``), redirections (``>`` ``<``),
substitutions or expansions (``$(…)``, backticks, ``$VAR``, ``<(…)``), newlines, or unbalanced
quotes — so ``shell:echo *`` does not let ``echo hi & touch x`` or ``echo > ../x`` through
(fail closed: such a command is asked). A command the user approved with "always" is
remembered exactly and matched by equality.

``save_memory`` to the ``global`` or ``user`` namespace (the default; ``scope`` is the older
argument name) writes a file that reaches the system prompt of every later session, so it asks by
default like a write (``deny`` denies it); ``project`` and ``team`` stay inside the project.

``mode`` (``--approval``) shifts the defaults: ``auto`` allows what would be asked (explicit
``deny`` rules still hold), ``never`` denies it — for unattended ``mtagent run``.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mtagent.context.toolset.entries import MCP_SEPARATOR, is_mcp_tool
from mtagent.errors import ConfigError
from mtagent.tools.mcp.resources import RESOURCE_TOOLS

Decision = Literal["ask", "allow", "deny"]
Mode = Literal["ask", "auto", "never"]
DECISIONS: tuple[Decision, ...] = ("ask", "allow", "deny")
MODES: tuple[Mode, ...] = ("ask", "auto", "never")
DEFAULT_ASK_TOOLS = frozenset({"shell", "write_file", "edit_file"})
SHELL_TOOL = "shell"
_SHELL_PREFIX = "shell:"
_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\||&|\n)\s*")
# Anything that makes a command more than one plain program with plain arguments.
_NOT_SIMPLE = re.compile(r"[;&|<>`$\n\r\x00]|\\\n")
MEMORY_TOOL = "save_memory"
# Shell reserved words that can stand before a command in the same list (POSIX 2.4).
_OPENING_WORDS = frozenset({"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time"})


@dataclass(slots=True, frozen=True)
class Verdict:
    """A decision and the rule that made it (shown to the user and to the model on deny)."""

    decision: Decision
    rule: str


def _memory_namespace(args: Mapping[str, Any] | None) -> str:
    args = args or {}
    chosen = args.get("namespace")
    return str(chosen if chosen is not None else (args.get("scope") or "global"))


@dataclass(slots=True)
class ApprovalPolicy:
    tool_rules: dict[str, Decision] = field(default_factory=dict)
    shell_rules: list[tuple[str, Decision]] = field(default_factory=list)
    mode: Mode = "ask"
    remembered: set[str] = field(default_factory=set)
    exact_commands: set[str] = field(default_factory=set)
    sandboxed: bool = False

    @classmethod
    def from_rules(cls, rules: Mapping[str, str], mode: str = "ask", *, sandboxed: bool = False) -> ApprovalPolicy:
        """Parse ``agent.approval``; an unknown decision or mode is a :class:`ConfigError`.
        ``sandboxed``: shell commands run in the sandbox (:mod:`mtagent.tools.sandbox`)."""
        if mode not in MODES:
            raise ConfigError(f"unknown approval mode {mode!r}; use one of {', '.join(MODES)}")
        policy = cls(mode=mode, sandboxed=sandboxed)  # type: ignore[arg-type]
        for key, value in rules.items():
            decision = str(value).lower()
            if decision not in DECISIONS:
                raise ConfigError(f"agent.approval[{key!r}] = {value!r} is not one of {', '.join(DECISIONS)}")
            if key.startswith(_SHELL_PREFIX):
                pattern = key[len(_SHELL_PREFIX):].strip()
                if not pattern:
                    raise ConfigError(f"agent.approval key {key!r} has an empty command pattern")
                policy.shell_rules.append((pattern, decision))  # type: ignore[arg-type]
            else:
                policy.tool_rules[key] = decision  # type: ignore[assignment]
        return policy

    def remember(self, tool: str, args: Mapping[str, Any] | None = None) -> None:
        """The user said "always" for this call: allow the tool (for shell: this exact command)
        for the rest of the session."""
        if tool == SHELL_TOOL:
            command = _remembered_key(args)
            self.exact_commands.add(command)
            self.remembered.add(f"{_SHELL_PREFIX}{command}")
        else:
            self.tool_rules[tool] = "allow"
            self.remembered.add(tool)

    def remember_answers(self, requests: Sequence[Any], answer: Any) -> None:
        """The user's ``answer`` to approval ``requests``: ``remember: true`` on an allow is :meth:`remember`-ed."""
        for request in requests if isinstance(answer, dict) else ():
            decision = answer.get(request.tool_call_id)
            if isinstance(decision, dict) and decision.get("remember") and decision.get("decision") == "allow":
                self.remember(request.tool, request.args)

    def _label(self, key: str) -> str:
        return "allowed by the user for this session" if key in self.remembered else f"approval rule {key!r}"

    def decide(self, tool: str, args: Mapping[str, Any] | None = None) -> Verdict:
        """The verdict for one tool call."""
        if tool == SHELL_TOOL:
            command = str((args or {}).get("command", ""))
            verdict = self._shell_verdict(command, _remembered_key(args))
            if verdict is not None:
                return self._apply_mode(verdict)
            if self.sandboxed and self.mode != "never":  # deny mode asks no one: commands stay denied
                return self._sandbox_verdict(args)
        if tool in self.tool_rules:
            return self._apply_mode(Verdict(self.tool_rules[tool], self._label(tool)))
        glob = _most_specific(tool, self.tool_rules.items())  # ``mcp__github__*``
        if glob is not None:
            return self._apply_mode(Verdict(glob[1], self._label(glob[0])))
        if tool in RESOURCE_TOOLS:  # another program's data, read through it: asked like its tools
            return self._apply_mode(Verdict("ask", f"default for MCP tools (an MCP server's resources; "
                                                   f'agent.approval "{tool}" = "allow" allows it)'))
        if is_mcp_tool(tool):  # another program's code: ask by default; rules may name them by glob
            server = tool.rsplit(MCP_SEPARATOR, 1)[0]
            return self._apply_mode(Verdict("ask", f"default for MCP tools (another program's code; "
                                                   f'agent.approval "{server}__*" = "allow" allows this server\'s)'))
        if tool == MEMORY_TOOL and _memory_namespace(args) not in ("project", "team"):
            return self._apply_mode(Verdict("ask", "default for save_memory to global or user memory (every "
                                                   "later session's system prompt)"))
        default: Decision = "ask" if tool in DEFAULT_ASK_TOOLS else "allow"
        return self._apply_mode(Verdict(default, f"default for {tool}"))

    def _sandbox_verdict(self, args: Mapping[str, Any] | None) -> Verdict:
        """With the sandbox on (``ask`` and ``auto`` modes) a command that stays inside it runs without
        asking; one whose ``needs`` leave it asks, saying why — in ``auto`` mode too."""
        needs = _needs_of(args)
        if not needs:
            return Verdict("allow", "runs in the sandbox (sandbox.mode)")
        return Verdict("ask", "this command asks to leave the sandbox: " + ", ".join(needs))

    def _shell_verdict(self, command: str, remembered: str) -> Verdict | None:
        stripped = command.strip()
        parts = [p for p in _SPLIT.split(stripped) if p]
        tokens = shell_words(stripped)
        if tokens is not None:
            parts += [" ".join(t) for t in _split_tokens(tokens)]
        for candidate in [stripped, *parts]:
            verdict = self._match_part(candidate)
            if verdict and verdict.decision == "deny":
                return verdict
        if remembered in self.exact_commands:
            return Verdict("allow", self._label(f"{_SHELL_PREFIX}{remembered}"))
        if not self.shell_rules or not is_simple_command(stripped):
            return None
        return self._match_part(stripped)

    def _match_part(self, part: str) -> Verdict | None:
        best = _most_specific(part, self.shell_rules)
        return Verdict(best[1], self._label(f"{_SHELL_PREFIX}{best[0]}")) if best else None

    def _apply_mode(self, verdict: Verdict) -> Verdict:
        if verdict.decision != "ask" or self.mode == "ask":
            return verdict
        if self.mode == "auto":
            return Verdict("allow", f"{verdict.rule}; --approval allow")
        return Verdict("deny", f"{verdict.rule}; --approval deny (no one to ask)")



def _needs_of(args: Mapping[str, Any] | None) -> list[str]:
    """A shell call's ``needs`` (what it asks beyond the sandbox), as plain strings."""
    raw = (args or {}).get("needs") or []
    return [str(n) for n in raw] if isinstance(raw, list | tuple) else [str(raw)]


def _remembered_key(args: Mapping[str, Any] | None) -> str:
    """What an "always" for a shell call remembers: the command, and its needs when it has some —
    so "always" for ``pip install x`` inside the sandbox never lets it run outside."""
    command = str((args or {}).get("command", "")).strip()
    needs = _needs_of(args)
    return command if not needs else f"{command}\x00needs={','.join(sorted(needs))}"


def _most_specific(name: str, rules: Iterable[tuple[str, Decision]]) -> tuple[str, Decision] | None:
    """The most specific (longest) rule whose pattern matches ``name``; deny wins a tie, then the first."""
    matching = [(pattern, decision) for pattern, decision in rules if fnmatch.fnmatchcase(name, pattern)]
    return max(matching, key=lambda rule: (len(rule[0]), rule[1] == "deny"), default=None)


def shell_words(command: str) -> list[str] | None:
    """The command's words and operator tokens as a POSIX shell lexes them; None when it cannot
    be lexed (an unclosed quote)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


def _split_tokens(tokens: list[str]) -> list[list[str]]:
    """The commands of a lexed line; a reserved word that opens a command (``{ rm x; }``,
    ``if …; then rm x; fi``) is dropped so a deny pattern sees the command itself."""
    parts: list[list[str]] = [[]]
    for token in tokens:
        if token and all(c in "();<>|&" for c in token):
            parts.append([])
        elif not parts[-1] and token in _OPENING_WORDS:
            continue
        else:
            parts[-1].append(token)
    return [p for p in parts if p]


def is_simple_command(command: str) -> bool:
    """One program with plain arguments: no operator, redirection, substitution, expansion,
    newline or unbalanced quote anywhere (quoted or not — fail closed)."""
    if not command or _NOT_SIMPLE.search(command):
        return False
    tokens = shell_words(command)
    if not tokens:  # unlexable (None) or empty
        return False
    return not any(t and all(c in "();<>|&" for c in t) for t in tokens) and "(" not in command


def unique_call_ids(calls: list[dict[str, Any]], content: Any = None) -> tuple[list[dict[str, Any]], Any]:
    """Re-key tool calls that share an id (or have none) so each call — and its approval
    decision, which is keyed by id — stands alone; ``content`` blocks of type ``tool_use`` are
    re-keyed the same way so the message stays consistent. The first call keeps its id."""
    seen: dict[str, int] = {}
    renamed: dict[tuple[str, int], str] = {}
    out: list[dict[str, Any]] = []
    taken = {str(c.get("id")) for c in calls if c.get("id")}
    for index, call in enumerate(calls):
        original = str(call.get("id") or "")
        nth = seen.get(original, 0)
        seen[original] = nth + 1
        if original and nth == 0:
            out.append(call)
            continue
        new = f"{original or 'call'}_dup{nth or index}"
        while new in taken:
            new += "_"
        taken.add(new)
        renamed[(original, nth)] = new
        out.append({**call, "id": new})
    if not renamed or not isinstance(content, list):
        return out, content
    counts: dict[str, int] = {}
    blocks = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            bid = str(block.get("id") or "")
            nth = counts.get(bid, 0)
            counts[bid] = nth + 1
            if (bid, nth) in renamed:
                block = {**block, "id": renamed[(bid, nth)]}
        blocks.append(block)
    return out, blocks
