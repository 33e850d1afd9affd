"""Closed-loop evaluation: solve rate and cost per context policy on the built-in suite.

    python benchmarks/eval_bench.py [--quick] [--suite builtin|extra] [--policy P ...] [--model M]
                                    [--executor local|ray]

Runs ``mtagent eval --suite builtin`` (42 generated tasks, each needing a fact the session saw
earlier, controls among them) or ``--suite extra`` (the second set: 20 tasks of other shapes)
under each policy with the context-test model (``mtagent.agent.context_model``) — it acts only on
what its input shows, looks a lost fact up as a capable model would, and writes its own hand-offs
— through the real agent loop, engine, tools, transcript and checks. ``--quick`` runs 8 tasks.
Cost is cache-aware at the suite's price row (``context-test*`` priced like a mid-size hosted
model: $3 / $15 per million input / output tokens, cache reads $0.30; illustrative — the model
runs locally); side $ is the hand-offs' and session notes' calls. Prints the eval table, writes
benchmarks/results/eval_bench[_extra].md, ends with ``RESULT`` lines per policy (solve rate, cost,
side cost, calls, tasks that ended at the step limit) and the paired comparison of the first
policy with each other one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import results_file

RESULTS = results_file("eval_bench.md")
POLICIES = ["mtagent", "threshold", "masking", "lc-summarization"]
QUICK_TASKS = 8


def _slug(name: str) -> str:
    return name.replace("-", "_").replace(".", "_")


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK_TASKS} tasks only")
    parser.add_argument("--suite", default="builtin", choices=("builtin", "extra"))
    parser.add_argument("--policy", action="append", default=None, help="policies (default: all four built-in)")
    parser.add_argument("--model", default="context-test:")
    parser.add_argument("--executor", default="local")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    policies = args.policy or POLICIES
    with tempfile.TemporaryDirectory(prefix="eval-bench-") as tmp:
        env = {**os.environ, "MTAGENT_HOME": str(Path(tmp) / "home"), "COLUMNS": "80"}
        cmd = [sys.executable, "-m", "mtagent", "eval", "--suite", args.suite, "--scratch", str(Path(tmp) / "s"),
               "--model", args.model, "--executor", args.executor, "--json"]
        cmd += [x for p in policies for x in ("-p", p)]
        cmd += ["--limit", str(QUICK_TASKS)] if args.quick else []
        cmd += ["--workers", str(args.workers)] if args.workers else []
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        wall = time.monotonic() - start
    if done.returncode not in (0, 1):
        print(done.stderr, file=sys.stderr)
        return done.returncode
    data = json.loads(done.stdout)
    lines = ["| policy | solved | solve rate (95% CI) | cost $ | side $ | tokens | calls | compactions | recalls "
             "| step limit |", "|---|---|---|---|---|---|---|---|---|---|"]
    for p in data["policies"]:
        lines.append(f"| {p['policy']} | {p['solved']}/{p['tasks']} | {p['solve_rate']:.3f} ({p['solve_low']:.2f}–"
                     f"{p['solve_high']:.2f}) | {_money(p['cost_usd'])} | {_money(p['side_cost_usd'])} | "
                     f"{p['tokens'] + p['side_tokens']:,} | {p['calls']} | {p['compactions']} | {p['recalls']} | "
                     f"{', '.join(p['step_limit']) or 0} |")
    lines += ["", "| A vs B | solved by A only | by B only | diff | 95% CI (Newcombe) | McNemar p | verdict |",
              "|---|---|---|---|---|---|---|"]
    for c in data["paired"]:
        lines.append(f"| {c['a']} vs {c['b']} | {c['only_a']} | {c['only_b']} | {c['diff']:+.3f} | "
                     f"{c['ci_low']:+.3f} … {c['ci_high']:+.3f} | {c['p_value']:.3f} | {c['verdict']} |")
    failed = {p["policy"]: [t["task"] for t in data["tasks"] if t.get(p["policy"]) != "solved"]
              for p in data["policies"]}
    lines += ["", "| policy | tasks not solved |", "|---|---|"]
    lines += [f"| {name} | {', '.join(tasks) or '-'} |" for name, tasks in failed.items()]
    table = "\n".join(lines)
    print(table)
    results = RESULTS if args.suite == "builtin" else RESULTS.with_name(f"eval_bench_{args.suite}.md")
    results.write_text(f"# eval_bench ({args.suite}; {'quick' if args.quick else 'full'}; {args.model}; "
                       f"wall {wall:.0f} s)\n\n{table}\n", encoding="utf-8")
    for p in data["policies"]:
        name = _slug(p["policy"])
        print(f"RESULT {name}_solve_rate={p['solve_rate']:.4f}")
        print(f"RESULT {name}_cost_usd={_money(p['cost_usd'])}")
        print(f"RESULT {name}_side_cost_usd={_money(p['side_cost_usd'])}")
        print(f"RESULT {name}_errors={p['errors']}")
        print(f"RESULT {name}_calls={p['calls']}")
        print(f"RESULT {name}_step_limit_endings={len(p['step_limit'])}")
    first = _slug(policies[0])
    for c in data["paired"]:
        if _slug(c["a"]) == first:
            print(f"RESULT {first}_minus_{_slug(c['b'])}_solve_diff={c['diff']:+.4f}")
    print(f"RESULT eval_wall_s={wall:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
