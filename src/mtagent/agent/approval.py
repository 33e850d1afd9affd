"""Which tool calls run on their own, which need the user's yes, and which never run.

Rules come from ``agent.approval``: a tool name (``"write_file": "allow"``) or a shell command
glob (``"shell:git status*": "allow"``, ``"shell:rm *": "deny"``) mapped to ``ask``, ``allow`` or
``deny``. Tools that change things (shell, write_file, edit_file) default to ``ask``; the rest
to ``allow``.

A shell command is judged part by part: ``git status && rm -rf x`` is split on ``;``, ``&&``,
``||``, ``|`` and newlines; one denied part denies the whole command, and the command is
allowed only if every part is. Command substitution (``$(…)``, backticks) is never
auto-allowed by a pattern, since the glob cannot see what it will run.

``mode`` (``--approval``) shifts the defaults: ``auto`` allows what would be asked (explicit
``deny`` rules still hold), ``never`` denies it — for unattended ``mtagent run``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mtagent.errors import ConfigError

Decision = Literal["ask", "allow", "deny"]
Mode = Literal["ask", "auto", "never"]
DECISIONS: tuple[Decision, ...] = ("ask", "allow", "deny")
MODES: tuple[Mode, ...] = ("ask", "auto", "never")
DEFAULT_ASK_TOOLS = frozenset({"shell", "write_file", "edit_file"})
SHELL_TOOL = "shell"
_SHELL_PREFIX = "shell:"
_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")
_SUBSTITUTION = re.compile(r"\$\(|`|<\(|>\(")


@dataclass(slots=True, frozen=True)
class Verdict:
    """A decision and the rule that made it (shown to the user and to the model on deny)."""

    decision: Decision
    rule: str


@dataclass(slots=True)
class ApprovalPolicy:
    tool_rules: dict[str, Decision] = field(default_factory=dict)
    shell_rules: list[tuple[str, Decision]] = field(default_factory=list)
    mode: Mode = "ask"
    ask_tools: frozenset[str] = DEFAULT_ASK_TOOLS
    remembered: set[str] = field(default_factory=set)

    @classmethod
    def from_rules(cls, rules: Mapping[str, str], mode: str = "ask") -> ApprovalPolicy:
        """Parse ``agent.approval``; an unknown decision or mode is a :class:`ConfigError`."""
        if mode not in MODES:
            raise ConfigError(f"unknown approval mode {mode!r}; use one of {', '.join(MODES)}")
        policy = cls(mode=mode)  # type: ignore[arg-type]
        for key, value in rules.items():
            decision = str(value).lower()
            if decision not in DECISIONS:
                raise ConfigError(
                    f"agent.approval[{key!r}] = {value!r} is not one of {', '.join(DECISIONS)}"
                )
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
            command = str((args or {}).get("command", "")).strip()
            self.shell_rules.append((command, "allow"))
            self.remembered.add(f"{_SHELL_PREFIX}{command}")
        else:
            self.tool_rules[tool] = "allow"
            self.remembered.add(tool)

    def _label(self, key: str) -> str:
        return "allowed by the user for this session" if key in self.remembered else f"approval rule {key!r}"

    def decide(self, tool: str, args: Mapping[str, Any] | None = None) -> Verdict:
        """The verdict for one tool call."""
        if tool == SHELL_TOOL:
            command = str((args or {}).get("command", ""))
            verdict = self._shell_verdict(command)
            if verdict is not None:
                return self._apply_mode(verdict)
        if tool in self.tool_rules:
            return self._apply_mode(Verdict(self.tool_rules[tool], self._label(tool)))
        default: Decision = "ask" if tool in self.ask_tools else "allow"
        return self._apply_mode(Verdict(default, f"default for {tool}"))

    def _shell_verdict(self, command: str) -> Verdict | None:
        if not self.shell_rules:
            return None
        parts = [p for p in _SPLIT.split(command.strip()) if p]
        per_part: list[Verdict | None] = [self._match_part(p) for p in parts]
        denied = next((v for v in per_part if v and v.decision == "deny"), None)
        if denied:
            return denied
        whole = self._match_part(command.strip())
        if whole and whole.decision == "deny":
            return whole
        if _SUBSTITUTION.search(command):
            return None
        if per_part and all(v and v.decision == "allow" for v in per_part):
            return per_part[0]
        asked = next((v for v in per_part if v and v.decision == "ask"), None)
        return asked

    def _match_part(self, part: str) -> Verdict | None:
        """Most specific (longest) matching pattern wins; deny wins a tie."""
        best: tuple[int, int, Verdict] | None = None
        for pattern, decision in self.shell_rules:
            if fnmatch.fnmatchcase(part, pattern):
                rank = (len(pattern), 1 if decision == "deny" else 0)
                if best is None or rank > best[:2]:
                    best = (*rank, Verdict(decision, self._label(f"{_SHELL_PREFIX}{pattern}")))
        return best[2] if best else None

    def _apply_mode(self, verdict: Verdict) -> Verdict:
        if verdict.decision != "ask" or self.mode == "ask":
            return verdict
        if self.mode == "auto":
            return Verdict("allow", f"{verdict.rule}; --approval allow")
        return Verdict("deny", f"{verdict.rule}; --approval deny (no one to ask)")

