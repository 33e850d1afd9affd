"""Per-call cost of ``ContextWindowManager.prepare()`` as a session grows.

    python benchmarks/window_bench.py [--quick] [--turns N]

For synthetic coding-agent sessions of 100, 1,000 and 10,000 messages
(:mod:`mtagent.testing.synthetic`: tool rounds with results, errors, user follow-ups, provider
usage on assistant messages), one manager is warmed on the whole history, then each timed turn
appends one API round (an assistant message with its tool results) and calls ``prepare()`` —
exact offline token counting of the new round included; the window is large enough that no
compaction or clearing fires in the timed turns. Also times one full (cold) ``prepare()`` of each
history for reference (after a warm-up run that builds the tokenizer).

Prints a table, writes benchmarks/results/window_bench.md, and ends with RESULT lines.
Targets: median ≤ 1 ms at 10,000 messages and a 10,000/100 ratio ≤ 2 (per-call cost independent
of the session's length).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

from langchain_core.messages import BaseMessage, SystemMessage

from results_file import results_file
from mtagent.config import Settings
from mtagent.testing.synthetic import SyntheticSession
from mtagent.context.window import ContextWindowManager

RESULTS = results_file("window_bench.md")
SIZES = (100, 1_000, 10_000)
# Large enough that neither size-triggered clearing nor auto compaction fires while timing.
BENCH_WINDOW = 100_000_000


def run_size(n: int, turns: int) -> dict[str, float]:
    sess = SyntheticSession(seed=n)
    base = list(sess.grow_to(n))
    rounds: list[list[BaseMessage]] = []
    for _ in range(turns):
        before = len(sess.history)
        sess.round()
        rounds.append(sess.history[before:])
    # The cost trigger is evaluated on every call (its O(1) estimate is part of the overhead) but
    # priced so that it never fires: a compaction is not the per-turn cost being measured.
    settings = Settings(context={"token_limit": BENCH_WINDOW, "price_cache_read": 0.0})
    manager = ContextWindowManager(settings, sink=[])  # records land in memory, as in a transcript writer's buffer
    system = [SystemMessage("You are mtagent, a coding agent.", id="system")]
    history = list(base)
    start = time.perf_counter()
    manager.prepare(history, system=system, tools_tokens=1_500)
    cold_ms = (time.perf_counter() - start) * 1_000
    times: list[float] = []
    gc.collect()
    for new in rounds:
        history.extend(new)
        start = time.perf_counter()
        prepared = manager.prepare(history, system=system, tools_tokens=1_500)
        times.append((time.perf_counter() - start) * 1_000)
        if prepared.compaction is not None or prepared.plan.compressed:
            raise SystemExit("a compaction or clearing fired during timing; raise BENCH_WINDOW")
    return {
        "messages": n,
        "median_ms": statistics.median(times),
        "p90_ms": sorted(times)[int(len(times) * 0.9)],
        "cold_ms": cold_ms,
        "tokens": manager.last_plan.tokens if manager.last_plan else 0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer timed turns (well under a minute)")
    parser.add_argument("--turns", type=int, default=None, help="timed turns per size")
    args = parser.parse_args(argv)
    turns = args.turns or (60 if args.quick else 300)
    run_size(SIZES[0], 20)  # warm-up: builds the tokenizer, fills caches; not reported
    rows = [run_size(n, turns) for n in SIZES]
    by_n = {int(r["messages"]): r for r in rows}
    ratio = by_n[10_000]["median_ms"] / by_n[100]["median_ms"]
    header = "| messages | median prepare (ms) | p90 (ms) | cold prepare (ms) | context tokens |"
    lines = [header, "|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {int(r['messages']):,} | {r['median_ms']:.3f} | {r['p90_ms']:.3f} | "
                     f"{r['cold_ms']:.1f} | {int(r['tokens']):,} |")
    table = "\n".join(lines)
    print(table)
    print(f"\nratio 10,000 / 100 (median): {ratio:.2f}  ({turns} timed turns per size, one round appended per turn)")
    RESULTS.write_text(
        "# window_bench — per-call `prepare()` cost\n\n"
        f"`python benchmarks/window_bench.py{' --quick' if args.quick else ''}` — {turns} timed turns per size; "
        "each appends one API round and calls `prepare()` (exact token counting of the new round included).\n\n"
        f"{table}\n\nratio 10,000 / 100 (median): {ratio:.2f}\n"
    )
    print(f"RESULT prepare_median_ms_100={by_n[100]['median_ms']:.4f}")
    print(f"RESULT prepare_median_ms_1000={by_n[1_000]['median_ms']:.4f}")
    print(f"RESULT prepare_median_ms_10000={by_n[10_000]['median_ms']:.4f}")
    print(f"RESULT prepare_ratio_10000_over_100={ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
