"""Sandbox benchmark (issue 37): what the sandbox costs per command, and how many questions it saves.

1. **Added time per command.** The shell tool runs ``true`` through its whole path — settings,
   policy, proxy, runner, bubblewrap — with the sandbox off and on, alternating (a load spike hits
   both); the figure is the median of the paired differences (target: ≤ 20 ms).
2. **Approval questions in a scripted 40-command session** (``--approval ask``): a scripted model
   calls the shell tool 40 times in one turn — reading, searching, editing, testing, committing, four
   commands that say they need more (three hosts, one write outside) — and every question is
   answered "allow". Counted with the sandbox off and on, with no approval rules and with a common
   set (``git status*``, ``ls*``, ``cat *`` allowed).

The shell tool's own per-call work (a watchdog that scans ``/proc`` at the end, the tree sweep) is
the same with and without the sandbox and grows with the machine's load; so the runner alone, as a
plain child and inside bubblewrap (proxy included), is timed too, and the sandbox's own parts alone:
bubblewrap around ``/bin/true`` with the sandbox's command line, and the proxy's start and stop.

    python benchmarks/sandbox_bench.py           # 60 + 100 paired runs, both rule sets
    python benchmarks/sandbox_bench.py --quick   # 10 + 20 paired runs, no rules only

Needs bubblewrap (``bwrap``) where user namespaces work; without it the script says why and exits 0
after the questions with the sandbox off. Ends with ``RESULT name=value`` lines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from results_file import results_file

RESULTS = results_file("sandbox_bench.md")
COMMON_RULES = {"shell:git status*": "allow", "shell:ls*": "allow", "shell:cat *": "allow"}


def _session_commands() -> list[dict[str, Any]]:
    """40 shell calls of an ordinary fix-a-bug session; four say they need more than the sandbox."""
    plain = [
        "ls", "ls -la src", "cat README.md", "git status", "git log --oneline -5", "grep -rn TODO src || true",
        "cat src/app.py", "python3 -c 'import sys; print(sys.version)'", "wc -l src/app.py",
        "sed -n 1,20p src/app.py", "mkdir -p tests", "printf 'def test_x():\\n    assert True\\n' > tests/test_x.py",
        "python3 -m py_compile src/app.py", "git diff --stat", "ls tests", "cat tests/test_x.py",
        "sed -i 's/return 1/return 2/' src/app.py", "git diff", "python3 src/app.py", "git add -A",
        "git status", "git commit -qm fix", "git log --oneline -1", "find . -name '*.py' | head",
        "grep -c def src/app.py", "python3 -c 'print(2 + 2)'", "echo build > build.log", "tail -1 build.log",
        "rm build.log", "ls -la", "git status --short", "head -3 src/app.py", "python3 src/app.py > out.txt",
        "cat out.txt", "rm out.txt", "git show --stat HEAD | head -5",
    ]
    needing = [
        ("python3 -c 'print(\"pip install requests\")'", ["network:pypi.org"]),
        ("python3 -c 'print(\"npm ci\")'", ["network:registry.npmjs.org"]),
        ("python3 -c 'print(\"curl the docs\")'", ["network:docs.python.org"]),
        ("python3 -c 'print(\"warm the cache\")'", ["write:~/.cache"]),
    ]
    calls = [{"command": c} for c in plain]
    for index, (command, needs) in zip((5, 15, 25, 35), needing):
        calls.insert(index, {"command": command, "needs": needs})
    assert len(calls) == 40
    return calls


def _project(base: Path) -> Path:
    import subprocess

    root = base / "project"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# demo\n")
    (root / "src" / "app.py").write_text("def answer():\n    return 1\n\n\nprint(answer())  # TODO\n")
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "start"]):
        subprocess.run(argv, cwd=root, check=True)  # as the identity questions() put in the environment
    return root


def questions(mode: str, rules: dict[str, str]) -> tuple[int, int]:
    """(questions asked, commands run) in the scripted session under ``sandbox.mode = mode``."""
    from mtagent.agent.scripted import ScriptedChatModel, tool_call
    from mtagent.agent.session import AgentSession
    from mtagent.config import Settings

    with tempfile.TemporaryDirectory(prefix="mtagent-sandbox-bench-") as scratch:
        os.environ["MTAGENT_HOME"] = str(Path(scratch) / "home")
        os.environ.setdefault("GIT_AUTHOR_NAME", "bench")
        os.environ.setdefault("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        os.environ.setdefault("GIT_COMMITTER_NAME", "bench")
        os.environ.setdefault("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        project = _project(Path(scratch))
        steps: list[Any] = [tool_call("shell", args, id=f"c{i}") for i, args in enumerate(_session_commands())]
        settings = Settings.model_validate({"sandbox": {"mode": mode}, "agent": {"approval": rules,
                                            "retry_base_seconds": 0.0}, "session_memory": {"enabled": False}})
        asked = ran = 0
        with AgentSession.create(project, model=ScriptedChatModel([*steps, "done"]), settings=settings,
                                 approval="ask") as session:
            result = session.run_turn("fix the bug and commit")
            ran += result.tool_executions
            while result.status == "approval_required":
                asked += len(result.approvals)
                result = session.resume_approval("allow")
                ran += result.tool_executions
        return asked, ran


def added_time(runs: int) -> tuple[float, float, float]:
    """(median ms off, median ms on, median of the paired differences ms) for ``true`` via the tool."""
    from langchain_core.messages import ToolMessage

    from mtagent.config import Settings
    from mtagent.tools import ToolSession, default_tools

    with tempfile.TemporaryDirectory(prefix="mtagent-sandbox-bench-") as scratch:
        root = Path(scratch) / "ws"
        root.mkdir()
        tools = {}
        for mode in ("off", "on"):
            found = default_tools(root, ToolSession(), Settings.model_validate({"sandbox": {"mode": mode}}),
                                  include_memory=False)
            tools[mode] = next(t for t in found if t.name == "shell")
        times: dict[str, list[float]] = {"off": [], "on": []}
        for i in range(runs + 2):  # two warm-up rounds
            for mode in ("off", "on") if i % 2 else ("on", "off"):
                started = time.perf_counter()
                msg = tools[mode].invoke({"name": "shell", "args": {"command": "true"}, "id": f"t{i}", "type": "tool_call"})
                took = time.perf_counter() - started
                assert isinstance(msg, ToolMessage) and msg.artifact["sandboxed"] is (mode == "on"), msg.content
                if i >= 2:
                    times[mode].append(took * 1000)
        diffs = [on - off for on, off in zip(times["on"], times["off"])]
        return statistics.median(times["off"]), statistics.median(times["on"]), statistics.median(diffs)


def bare_start(runs: int) -> tuple[float, float, float]:
    """(median ms, median ms, median paired difference ms): the runner running ``true`` as a plain child,
    and the same inside bubblewrap with a proxy — the sandbox's own cost without the shell tool's
    watchdog and tree sweep around it (which are the same with and without the sandbox)."""
    import subprocess

    from mtagent.config import Settings
    from mtagent.tools import proctree, sandbox

    with tempfile.TemporaryDirectory(prefix="mtagent-sandbox-bench-") as scratch:
        root = Path(scratch)
        inner = proctree.contained(["/bin/true"], 1.0)
        times: dict[str, list[float]] = {"off": [], "on": []}
        for i in range(runs + 2):
            for mode in ("off", "on") if i % 2 else ("on", "off"):
                started = time.perf_counter()
                if mode == "off":
                    subprocess.run(inner, check=True)
                else:
                    call = sandbox.call_for(Settings.model_validate({"sandbox": {"mode": "on"}}), [root])
                    assert call is not None
                    with call:
                        subprocess.run(call.argv(proctree.contained(["/bin/true"], 1.0, bridge=call.bridge)), check=True)
                if i >= 2:
                    times[mode].append((time.perf_counter() - started) * 1000)
        diffs = [on - off for on, off in zip(times["on"], times["off"])]
        return statistics.median(times["off"]), statistics.median(times["on"]), statistics.median(diffs)


def bwrap_alone(runs: int) -> tuple[float, float, float]:
    """(median ms of ``/bin/true``, of the same in bubblewrap with the sandbox's command line, of the
    proxy's start and stop): the sandbox's own parts, without Python's start in the runner."""
    import subprocess

    from mtagent.config import Settings
    from mtagent.tools import sandbox

    with tempfile.TemporaryDirectory(prefix="mtagent-sandbox-bench-") as scratch:
        call = sandbox.call_for(Settings.model_validate({"sandbox": {"mode": "on"}}), [Path(scratch)])
        assert call is not None
        plain: list[float] = []
        wrapped: list[float] = []
        proxy: list[float] = []
        with call:
            argv = call.argv(["/bin/true"])
            for i in range(runs + 2):
                for which in ("plain", "wrapped") if i % 2 else ("wrapped", "plain"):
                    started = time.perf_counter()
                    subprocess.run(["/bin/true"] if which == "plain" else argv, check=True)
                    if i >= 2:
                        (plain if which == "plain" else wrapped).append((time.perf_counter() - started) * 1000)
        for _ in range(runs):
            started = time.perf_counter()
            with sandbox.NetworkProxy(()):
                pass
            proxy.append((time.perf_counter() - started) * 1000)
        return statistics.median(plain), statistics.median(wrapped), statistics.median(proxy)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs; the session without approval rules only")
    args = parser.parse_args()
    from mtagent.tools import sandbox

    reason = sandbox.probe()
    lines = [f"# Sandbox benchmark ({'quick' if args.quick else 'full'})", "",
             f"load average {os.getloadavg()[0]:.2f}; bubblewrap: {reason or 'works'}", ""]
    results: dict[str, str] = {}
    if reason is None:
        off, on, added = added_time(10 if args.quick else 60)
        true_ms, bwrap_ms, proxy_ms = bwrap_alone(30 if args.quick else 200)
        bare_off, bare_on, bare_added = bare_start(20 if args.quick else 100)
        lines += ["| `true` | sandbox off, median ms | sandbox on, median ms | added (median of paired differences) |",
                  "|---|---|---|---|",
                  f"| through the shell tool | {off:.1f} | {on:.1f} | {added:.1f} |",
                  f"| the runner alone (no watchdog, no sweep) | {bare_off:.1f} | {bare_on:.1f} | {bare_added:.1f} |",
                  f"| `/bin/true` bare vs in bubblewrap (the sandbox's command line) | {true_ms:.1f} | {bwrap_ms:.1f} | "
                  f"{bwrap_ms - true_ms:.1f} |", f"| the proxy's start and stop | | {proxy_ms:.1f} | {proxy_ms:.1f} |", ""]
        results.update(sandbox_added_ms=f"{added:.1f}", command_ms_off=f"{off:.1f}", command_ms_on=f"{on:.1f}",
                       sandbox_added_runner_ms=f"{bare_added:.1f}", bwrap_added_ms=f"{bwrap_ms - true_ms:.1f}",
                       proxy_start_stop_ms=f"{proxy_ms:.2f}")
    lines += ["| 40-command session, --approval ask | rules | questions | commands run |", "|---|---|---|---|"]
    rule_sets = [("none", {})] + ([] if args.quick else [("git status/ls/cat allowed", COMMON_RULES)])
    for label, rules in rule_sets:
        for mode in ("off", "on") if reason is None else ("off",):
            asked, ran = questions(mode, rules)
            lines.append(f"| sandbox {mode} | {label} | {asked} | {ran} |")
            key = "no_rules" if not rules else "common_rules"
            results[f"questions_{key}_sandbox_{mode}"] = str(asked)
    if reason is None:
        base = int(results["questions_no_rules_sandbox_off"])
        fewer = 1 - int(results["questions_no_rules_sandbox_on"]) / base if base else 0.0
        results["fewer_questions_pct"] = f"{fewer * 100:.0f}"
        lines += ["", f"The sandbox asks {fewer:.0%} fewer questions (no rules)."]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        RESULTS.write_text(text, encoding="utf-8")
    for name, value in results.items():
        print(f"RESULT {name}={value}")
    if reason is not None:
        print(f"sandbox cannot run here: {reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
