"""The same exploration done inline vs through a subagent: the parent's cumulative input tokens.

    python benchmarks/subagent_bench.py [--quick] [--files N] [--follow-ups N]

A synthetic code base (``--files`` Python modules of ~150 lines, each holding one planted
``FACT: name = value`` line) is explored by a scripted policy on the real agent loop, engine,
tools and transcript, twice:

* **inline** — the parent itself globs and reads every module, then does ``--follow-ups`` more
  steps of its own task (small ``ls`` calls) and answers;
* **subagent** — the parent hands the same exploration to one ``explore`` child through the
  ``task`` tool (the child globs, reads every module and reports the facts as findings), then
  does the same follow-ups and answers.

Both parents must hold every planted fact in their final view (the messages of their last model
call) — the comparison is at equal facts. The figure is the drop in the parent's cumulative input
tokens (the sum of ``input_tokens`` over its model calls, as recorded in its transcript); the
children's own tokens are reported beside it, since they are spent in their own windows. Prints a
table, writes benchmarks/results/subagent_bench.md, ends with ``RESULT`` lines (target:
parent_input_drop ≥ 0.5 with facts_equal = 1).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from results_file import results_file
from mtagent.agent.scripted import tool_call

RESULTS = results_file("subagent_bench.md")
FACT = re.compile(r"FACT: (\w+) = (\w+)")
LINES_PER_FILE = 150


def make_codebase(root: Path, files: int, seed: int = 7) -> dict[str, str]:
    """``files`` modules of plausible code, one planted fact each; returns the facts."""
    rng = random.Random(seed)
    facts: dict[str, str] = {}
    for i in range(files):
        name, value = f"setting_{i:02d}", f"v{rng.randrange(10**6):06d}"
        facts[name] = value
        lines = [f'"""Module {i}: part of the synthetic service."""', "", "import os", ""]
        for j in range(LINES_PER_FILE // 5):
            lines += [f"def handler_{i}_{j}(request, retries={rng.randrange(9)}):",
                      f"    total = sum(range({rng.randrange(100)})) + len(request.path)",
                      f"    return {{'module': {i}, 'handler': {j}, 'total': total}}", ""]
            if j == LINES_PER_FILE // 10:
                lines.append(f"# FACT: {name} = {value}")
        (root / f"module_{i:02d}.py").write_text("\n".join(lines) + "\n")
    return facts


def _files_from(text: str) -> list[str]:
    return sorted(set(re.findall(r"module_\d+\.py", text)))


@dataclass
class Explorer:
    """Globs and reads every module — the exploration both modes do; as a child it ends with a report."""

    files: list[str] = field(default_factory=list)
    read: int = 0
    facts: dict[str, str] = field(default_factory=dict)
    calls: int = 0

    def step(self, messages: list[Any]) -> Any | None:
        """The next exploration call, or None when the exploration is done."""
        last = messages[-1]
        text = last.content if isinstance(last.content, str) else ""
        self.facts.update(dict(FACT.findall(text)))
        self.calls += 1
        if self.calls == 1:
            return tool_call("glob", {"pattern": "*.py"}, id=f"bench_{self.calls:03d}")
        if self.calls == 2:
            self.files = _files_from(text)
        if self.read < len(self.files):
            self.read += 1
            return tool_call("read_file", {"file_path": self.files[self.read - 1]}, id=f"bench_{self.calls:03d}")
        return None

    def __call__(self, messages: list[Any]) -> Any:
        from langchain_core.messages import AIMessage

        nxt = self.step(messages)
        if nxt is not None:
            return nxt
        findings = [{"claim": f"{k} = {v}", "evidence": [f"FACT line of the module defining {k}"]}
                    for k, v in sorted(self.facts.items())]
        return AIMessage(content=json.dumps({"outcome": "success", "summary": f"read {self.read} modules; "
                                             f"{len(self.facts)} facts", "findings": findings}))


@dataclass
class Parent:
    """The parent's policy: explore (inline or by a task), then follow-ups, then answer."""

    inline: bool
    follow_ups: int
    explorer: Explorer = field(default_factory=Explorer)
    phase: str = "explore"
    done_follow_ups: int = 0
    n: int = 100
    final_view: list[Any] = field(default_factory=list)

    def __call__(self, messages: list[Any]) -> Any:
        from langchain_core.messages import AIMessage

        self.final_view = list(messages)
        self.n += 1
        if self.phase == "explore":
            if self.inline:
                nxt = self.explorer.step(messages)
                if nxt is not None:
                    return nxt
            else:
                self.phase = "delegated"
                return tool_call("task", {"description": "collect the settings", "agent": "explore",
                                          "prompt": "Read every module and report each 'FACT: name = value' line."},
                                 id=f"bench_{self.n:03d}")
            self.phase = "follow"
        if self.phase == "delegated":
            self.phase = "follow"
        if self.done_follow_ups < self.follow_ups:
            self.done_follow_ups += 1
            return tool_call("ls", {"path": "."}, id=f"bench_{self.n:03d}")
        return AIMessage(content="Done: the settings are known.")


def run_mode(root: Path, *, inline: bool, follow_ups: int) -> dict[str, Any]:
    from mtagent.agent.scripted import ScriptedChatModel
    from mtagent.agent.session import AgentSession
    from mtagent.agent.subagents.tree import children_usage, subagent_tree
    from mtagent.config import Settings
    from mtagent.session.reader import read_records

    parent = Parent(inline=inline, follow_ups=follow_ups)
    settings = Settings.model_validate({"agent": {"max_steps": 400}, "subagents": {"max_steps": 400}})
    began = time.perf_counter()
    with AgentSession.create(root, model=ScriptedChatModel(policy=parent, model_name="scripted:bench"),
                             settings=settings, approval="auto") as session:
        session.subagents.model_factory = lambda profile, request: (
            ScriptedChatModel(policy=Explorer(), model_name="scripted:bench-child"), "scripted:bench-child")
        session.run_turn("Find every setting planted in this code base, then carry on with the task.")
        transcript = session.transcript_path
    seconds = time.perf_counter() - began
    calls = [r for r in read_records(transcript) if r["type"] == "transcript_message" and r["role"] == "assistant"]
    children = children_usage(subagent_tree(transcript))
    final_text = "\n".join(m.content if isinstance(m.content, str) else json.dumps(m.content)
                           for m in parent.final_view)
    return {"parent_calls": len(calls), "parent_input": sum(int((r.get("usage") or {}).get("input_tokens") or 0)
                                                            for r in calls),
            "children": children["children"], "child_input": children["input_tokens"],
            "final_view": final_text, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer modules (under a minute)")
    parser.add_argument("--files", type=int, default=None, help="modules in the code base (default 24, quick 10)")
    parser.add_argument("--follow-ups", type=int, default=None, help="parent steps after the exploration (default 6)")
    args = parser.parse_args(argv)
    files = args.files or (10 if args.quick else 24)
    follow_ups = 6 if args.follow_ups is None else args.follow_ups
    with tempfile.TemporaryDirectory(prefix="subagent-bench-") as tmp:
        os.environ.setdefault("MTAGENT_HOME", str(Path(tmp) / "home"))
        root = Path(tmp) / "code"
        root.mkdir()
        facts = make_codebase(root, files)
        inline = run_mode(root, inline=True, follow_ups=follow_ups)
        sub = run_mode(root, inline=False, follow_ups=follow_ups)
    held = {name: all(v in r["final_view"] and k in r["final_view"] for k, v in facts.items())
            for name, r in (("inline", inline), ("subagent", sub))}
    drop = 1 - sub["parent_input"] / inline["parent_input"] if inline["parent_input"] else 0.0
    rows = [("mode", "parent calls", "parent input tokens", "children", "child input tokens", "all facts in final view"),
            ("inline", inline["parent_calls"], f"{inline['parent_input']:,}", 0, "0", held["inline"]),
            ("subagent", sub["parent_calls"], f"{sub['parent_input']:,}", sub["children"], f"{sub['child_input']:,}",
             held["subagent"])]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    table = ["  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in rows]
    print(f"subagent bench: {files} modules, {len(facts)} planted facts, {follow_ups} follow-up steps")
    print("\n".join(table))
    RESULTS.write_text("# subagent_bench\n\n```\n" + "\n".join(table) + "\n```\n\n"
                       f"parent input drop: {drop:.3f} (target ≥ 0.5 at equal facts)\n")
    print(f"RESULT parent_input_tokens_inline={inline['parent_input']}")
    print(f"RESULT parent_input_tokens_subagent={sub['parent_input']}")
    print(f"RESULT child_input_tokens_subagent={sub['child_input']}")
    print(f"RESULT parent_input_drop={drop:.3f}")
    print(f"RESULT facts_equal={int(held['inline'] and held['subagent'])}")
    return 0 if held["inline"] and held["subagent"] else 1


if __name__ == "__main__":
    sys.exit(main())
