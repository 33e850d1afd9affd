"""The same long tool-heavy session through LangChain's ``create_agent`` with three context setups.

    python benchmarks/middleware_bench.py [--quick] [--steps N] [--window TOKENS]

A scripted model (no network) asks for N tool calls — pytest-like shell logs (20K–80K chars),
grep hits (5K–40K chars), small file reads — then answers. The model *rejects* any request
larger than the window, like a provider would (a ``ContextLengthExceeded``). Setups:

* ``none`` — no middleware;
* ``langchain`` — LangChain's own ``SummarizationMiddleware(trigger=("tokens", T), keep=("messages",
  20))`` + ``ContextEditingMiddleware(ClearToolUsesEdit(trigger=window/2, keep=3))``, with T the
  same auto-compact threshold mtagent uses and a scripted summarizer;
* ``mtagent`` — ``MTContextMiddleware`` with default settings and the same window.

For each: model calls completed, whether the run finished, the largest request, total input tokens
sent (exact o200k count of every request's messages), how many tool results the model could still
read (not cleared, not summarized away) per request, requests breaking the tool-call protocol,
and wall time. Prints a table, writes benchmarks/results/middleware_bench.md, ends with RESULT lines.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, SummarizationMiddleware
from langchain.agents.middleware.context_editing import DEFAULT_TOOL_PLACEHOLDER
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from results_file import results_file
from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.config import Settings
from mtagent.context.invariants import InvalidView, validate_view
from mtagent.context.compaction.microcompact import CLEARED_PLACEHOLDER
from mtagent.context.tokens import MessageTokenCounter
from mtagent.errors import ContextLengthExceeded
from mtagent.integrations.langchain import MTContextMiddleware

RESULTS = results_file("middleware_bench.md")
SYSTEM = "You are a coding agent. Use the tools to find and fix the failing test."
KEEP_MESSAGES = 20
KEEP_TOOL_RESULTS = 3
CLEARED = {CLEARED_PLACEHOLDER, DEFAULT_TOOL_PLACEHOLDER}


def _pytest_log(rng: random.Random, chars: int) -> str:
    lines: list[str] = []
    size = 0
    while size < chars:
        mod, case = rng.randint(1, 90), rng.randint(1, 400)
        if rng.random() < 0.08:
            line = (f"tests/test_mod_{mod}.py:{case}: AssertionError: expected {rng.randint(0, 999)} "
                    f"got {rng.randint(0, 999)} in check_{case}(payload={{'id': {case}, 'retries': {mod}}})")
        else:
            line = f"tests/test_mod_{mod}.py::test_case_{case} PASSED [{rng.randint(1, 99):3d}%]"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _grep_hits(rng: random.Random, pattern: str, chars: int) -> str:
    lines: list[str] = []
    size = 0
    while size < chars:
        line = (f"src/pkg/mod_{rng.randint(1, 90)}.py:{rng.randint(1, 2000)}:    "
                f"result = {pattern}(value_{rng.randint(0, 99)}, mode='{rng.choice(['fast', 'safe', 'full'])}')")
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def make_tools(seed: int) -> list[Any]:
    rng = random.Random(seed)

    @tool
    def shell(command: str) -> str:
        """Run a shell command and return its output."""
        return _pytest_log(rng, rng.randint(20_000, 80_000))

    @tool
    def grep(pattern: str) -> str:
        """Search the repository for a pattern."""
        return _grep_hits(rng, pattern, rng.randint(5_000, 40_000))

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return "\n".join(f"{i:4d}  def f_{i}(x): return x * {i}" for i in range(rng.randint(60, 250)))

    return [shell, grep, read_file]


def make_script(steps: int, seed: int) -> list[AIMessage]:
    rng = random.Random(seed)
    script: list[AIMessage] = []
    for i in range(steps):
        kind = rng.choices(["shell", "grep", "read_file"], weights=[4, 3, 3])[0]
        args = {"shell": {"command": f"pytest -x tests/test_mod_{i}.py"}, "grep": {"pattern": f"compute_{i}"},
                "read_file": {"path": f"src/pkg/mod_{i}.py"}}[kind]
        script.append(tool_call(kind, args, id=f"call_{i:04d}", content=f"step {i}: checking {kind}"))
    script.append(reply("Found it: compute_17 returns the wrong mode; fixed and the tests pass."))
    return script


@dataclass
class Provider:
    """The scripted agent model: rejects requests over the window, reports exact usage."""

    script: list[AIMessage]
    window: int
    counter: MessageTokenCounter
    cursor: int = 0
    sent: list[int] = field(default_factory=list)
    visible: list[int] = field(default_factory=list)
    invalid: int = 0

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        tokens = self.counter.estimate(messages)
        if tokens > self.window:
            raise ContextLengthExceeded(f"prompt is too long: {tokens} tokens > {self.window} maximum")
        try:
            validate_view(messages)
        except InvalidView:
            self.invalid += 1
        self.sent.append(tokens)
        self.visible.append(sum(1 for m in messages if isinstance(m, ToolMessage) and str(m.content) not in CLEARED))
        message = self.script[self.cursor]
        self.cursor += 1
        return message.model_copy(update={"usage_metadata": {
            "input_tokens": tokens, "output_tokens": 20, "total_tokens": tokens + 20}})


def langchain_middleware(window: int, threshold: int) -> list[Any]:
    summarizer = ScriptedChatModel(policy=lambda _m: reply("## SESSION INTENT\nfix the failing test\n"
                                                           "## SUMMARY\nran the tests and searched the code\n"
                                                           "## NEXT STEPS\nkeep investigating"))
    return [
        SummarizationMiddleware(model=summarizer, trigger=("tokens", threshold), keep=("messages", KEEP_MESSAGES)),
        ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=window // 2, keep=KEEP_TOOL_RESULTS)]),
    ]


def run_setup(name: str, steps: int, window: int, seed: int) -> dict[str, Any]:
    settings = Settings.model_validate({"context": {"token_limit": window}})
    threshold = settings.auto_compact_threshold_tokens()
    counter = MessageTokenCounter(encoding=settings.context.encoding)
    provider = Provider(make_script(steps, seed), window, counter)
    model = ScriptedChatModel(policy=provider)
    project = Path(tempfile.mkdtemp(prefix="middleware-bench-"))
    closer: Callable[[], None] = lambda: None
    if name == "none":
        middleware: list[Any] = []
    elif name == "langchain":
        middleware = langchain_middleware(window, threshold)
    else:
        mt = MTContextMiddleware(settings=settings, project_root=project)
        middleware, closer = [mt], mt.close
    agent = create_agent(model, make_tools(seed), system_prompt=SYSTEM, middleware=middleware,
                         checkpointer=InMemorySaver())
    start = time.perf_counter()
    finished, error = True, ""
    try:
        agent.invoke({"messages": [HumanMessage("The test suite fails; find and fix the cause.")]},
                           {"configurable": {"thread_id": name}, "recursion_limit": 4 * steps + 20})
    except ContextLengthExceeded as exc:
        finished, error = False, str(exc)
    finally:
        closer()
    seconds = time.perf_counter() - start
    sent = provider.sent or [0]
    visible = provider.visible or [0]
    return {"setup": name, "calls": len(provider.sent), "finished": finished, "max": max(sent),
            "total": sum(sent), "visible": sum(visible) / len(visible), "last_visible": visible[-1], "invalid": provider.invalid, "seconds": seconds, "error": error}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 steps (under a minute)")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--window", type=int, default=131_072)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    steps = args.steps or (40 if args.quick else 150)
    rows = [run_setup(name, steps, args.window, args.seed) for name in ("none", "langchain", "mtagent")]

    header = (f"`python benchmarks/middleware_bench.py{' --quick' if args.quick else ''}` — {steps} tool steps, "
              f"window {args.window:,} tokens; the model rejects any request over the window.")
    table = ["| setup | model calls | finished | largest request | total input tokens | tool results visible "
             "per request (mean / last) | protocol errors | seconds |",
             "|---|---:|:---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        table.append(f"| {r['setup']} | {r['calls']} | {'yes' if r['finished'] else 'no'} | {r['max']:,} | "
                     f"{r['total']:,} | {r['visible']:.1f} / {r['last_visible']} | {r['invalid']} | "
                     f"{r['seconds']:.1f} |")
    failures = [f"- `{r['setup']}` stopped: {r['error'][:120]}" for r in rows if not r["finished"]]
    text = "\n".join(["# middleware_bench — one session, three context setups", "", header, "", *table, "",
                      *failures, ""])
    print(text)
    RESULTS.write_text(text, encoding="utf-8")
    by = {r["setup"]: r for r in rows}
    for name, r in by.items():
        print(f"RESULT {name}_calls={r['calls']}")
        print(f"RESULT {name}_finished={int(r['finished'])}")
        print(f"RESULT {name}_max_request_tokens={r['max']}")
        print(f"RESULT {name}_total_input_tokens={r['total']}")
        print(f"RESULT {name}_mean_visible_tool_results={r['visible']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
