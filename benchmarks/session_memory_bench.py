"""Session-memory compaction vs. full compaction, replayed over real recorded sessions.

    python benchmarks/session_memory_bench.py [--quick] [--window TOKENS]

Each recording (``../shared/trajectories`` beside the repository, or ``$MTAGENT_TRAJECTORIES``)
is fed to the real engine one model call at a time
(:class:`mtagent.replay.mtagent_strategy.MTAgentStrategy`: tool-result budget, microcompact,
auto compaction), twice:

* ``full``   — session memory off: every auto compaction is a full (extractive) compaction;
* ``notes``  — session memory on (extractive updater, no model): the notes are tried first.

A small window (default 65,536 tokens; auto-compact threshold 32,536) makes the sessions compact many times. Per mode we report
compactions, how many the notes served, the mean context right after a compaction, fact
retention over the session (:mod:`mtagent.replay.probes`: task identifiers, latest error, files
changed, user constraints visible in the view), the user constraints still visible at the end,
and the time spent in notes updates and in the whole replay.

Prints a table, writes benchmarks/results/session_memory_bench.md (``…_quick.md`` with
``--quick``), ends with RESULT lines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from results_file import results_file
from mtagent.config import Settings
from mtagent.context.session_memory.manager import SessionMemoryManager
from mtagent.context.tokens import MessageTokenCounter
from mtagent.replay.formats import load_trajectory
from mtagent.replay.mtagent_strategy import MTAgentStrategy
from mtagent.replay.probes import build_probes
from mtagent.replay.simulate import system_prefix
from mtagent.replay.strategies import StrategyContext
from mtagent.replay.trajectory import Trajectory
from mtagent.session.reader import read_records

HERE = Path(__file__).resolve().parent
RESULTS = results_file("session_memory_bench.md")
TRAJ = Path(os.environ.get("MTAGENT_TRAJECTORIES") or HERE.parents[1] / "shared" / "trajectories")
QUICK = ("claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
         "mini-swe-agent/deepseek_chat_test_1-100__django__django-13964.traj.json")
FULL = (
    "claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
    "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "claude-code/tool_heavy.jsonl",
    "mini-swe-agent/deepseek_chat_test_1-100__django__django-13964.traj.json",
    "mini-swe-agent/deepseek_chat_test_1-100__django__django-12589.traj.json",
    "openhands/multi_swe_bench_example__line3__ponylang__ponyc-4588.json",
)


@dataclass
class RunOutcome:
    compactions: int = 0
    by_notes: int = 0
    post_tokens: list[int] = field(default_factory=list)
    retention: list[float] = field(default_factory=list)
    constraints_end: float | None = None
    update_seconds: float = 0.0
    updates: int = 0
    seconds: float = 0.0


def _timed(manager: SessionMemoryManager, out: RunOutcome) -> None:
    """Count and time the notes updates the engine triggers (on the opened session's own manager)."""
    update = manager.update_session_memory

    def timed(*args: Any, **kw: Any) -> Any:
        start = time.perf_counter()
        try:
            return update(*args, **kw)
        finally:
            out.update_seconds += time.perf_counter() - start
            out.updates += 1

    manager.update_session_memory = timed  # type: ignore[method-assign]


def replay(traj: Trajectory, window: int, with_notes: bool) -> RunOutcome:
    """One recording through the engine as shipped: a session opened by the opener (the replay
    strategy's), fed call by call; its transcript gives the compactions."""
    settings = Settings(session_memory={"enabled": with_notes})
    counter = MessageTokenCounter(encoding=settings.context.encoding,
                                  overhead_tokens=settings.context.message_overhead_tokens)
    probes = build_probes(traj)
    out = RunOutcome()
    with tempfile.TemporaryDirectory(prefix="mtagent-smbench-") as tmp:
        ctx = StrategyContext(system=system_prefix(traj), window=window, counter=counter, settings=settings,
                              workdir=Path(tmp))
        strat = MTAgentStrategy(ctx, session_memory=with_notes)
        strat._session = session = strat._open()
        if session.session_memory is not None:
            _timed(session.session_memory, out)
        last = len(ctx.system)
        view: list[Any] = []
        start = time.perf_counter()
        for turn, call_index in enumerate(traj.model_calls):
            step = strat.step(traj.messages[last:call_index])
            last = call_index
            view = step.view
            value = probes.retention(turn, view)
            if value is not None:
                out.retention.append(value)
        out.seconds = time.perf_counter() - start
        final_turn = len(traj.model_calls) - 1
        if final_turn >= 0:
            active = probes.active[final_turn] & probes.category_masks.get("constraints", 0)
            if active:
                seen = probes.visible_mask(view) & active
                out.constraints_end = seen.bit_count() / active.bit_count()
        records = list(read_records(session.transcript_path))
        strat.close()
    for rec in records:
        if rec.get("type") == "compact_boundary":
            out.compactions += 1
            out.by_notes += rec.get("summary_source") == "session_memory"
            out.post_tokens.append(int(rec.get("post_tokens", 0)))
    return out


def _fmt(value: float | None, pattern: str = "{:.3f}") -> str:
    return "–" if value is None else pattern.format(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two recordings (under a minute)")
    parser.add_argument("--window", type=int, default=65_536, help="model window in tokens")
    args = parser.parse_args(argv)
    if not TRAJ.is_dir():
        print(f"skipped: trajectories not found at {TRAJ}; set MTAGENT_TRAJECTORIES to their folder",
              file=sys.stderr)
        return 2
    names = QUICK if args.quick else FULL
    rows: list[dict[str, Any]] = []
    totals: dict[str, list[RunOutcome]] = {"full": [], "notes": []}
    for name in names:
        traj = load_trajectory(TRAJ / name)
        calls = len(traj.model_calls)
        tokens = MessageTokenCounter().estimate(traj.messages)
        for mode in ("full", "notes"):
            o = replay(traj, args.window, mode == "notes")
            totals[mode].append(o)
            rows.append({
                "recording": name.split("/")[-1][:44], "calls": calls, "tokens": tokens, "mode": mode,
                "compactions": o.compactions, "by_notes": o.by_notes,
                "post": statistics.mean(o.post_tokens) if o.post_tokens else None,
                "retention": statistics.mean(o.retention) if o.retention else None,
                "constraints_end": o.constraints_end,
                "update_ms": 1000 * o.update_seconds / o.updates if o.updates else None,
                "seconds": o.seconds,
            })
    header = ("| recording | calls | tokens | mode | compactions | by notes | mean post-compact tokens "
              "| retention | constraints visible at end | ms per notes update | replay s |")
    lines = [header, "|" + "---|" * 11]
    for r in rows:
        lines.append(
            f"| {r['recording']} | {r['calls']} | {r['tokens']:,} | {r['mode']} | {r['compactions']} | {r['by_notes']} "
            f"| {_fmt(r['post'], '{:,.0f}')} | {_fmt(r['retention'])} | {_fmt(r['constraints_end'], '{:.2f}')} "
            f"| {_fmt(r['update_ms'], '{:.1f}')} | {r['seconds']:.2f} |"
        )
    table = "\n".join(lines)
    print(table)

    def agg(mode: str, key: str) -> float | None:
        values = [r[key] for r in rows if r["mode"] == mode and r[key] is not None]
        return statistics.mean(values) if values else None

    comp = {m: sum(o.compactions for o in totals[m]) for m in totals}
    served = sum(o.by_notes for o in totals["notes"])
    results = {
        "session_memory_compactions": comp["notes"],
        "session_memory_served_share": served / comp["notes"] if comp["notes"] else 0.0,
        "retention_full": agg("full", "retention"),
        "retention_notes": agg("notes", "retention"),
        "constraints_end_full": agg("full", "constraints_end"),
        "constraints_end_notes": agg("notes", "constraints_end"),
        "post_compact_tokens_full": agg("full", "post"),
        "post_compact_tokens_notes": agg("notes", "post"),
        "notes_update_ms": agg("notes", "update_ms"),
    }
    target = RESULTS.with_name(RESULTS.stem + "_quick.md") if args.quick else RESULTS
    target.write_text(
        f"# Session memory vs. full compaction (window {args.window:,} tokens"
        f"{', quick' if args.quick else ''})\n\n{table}\n\n"
        + "\n".join(f"- {k}: {_fmt(v) if isinstance(v, float) else v}" for k, v in results.items()) + "\n"
    )
    for key, value in results.items():
        print(f"RESULT {key}={_fmt(value, '{:.4g}') if isinstance(value, float) else value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
