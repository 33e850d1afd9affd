"""Context benchmark: every strategy over the shared real trajectories, at three windows.

For each recorded session (Claude Code, mini-swe-agent, SWE-agent, OpenHands, aider) and each
strategy (raw, mtagent, mtagent-sm, masking, lc-summarization, lc-clear-tool-uses, threshold-compact) the
open-loop replay measures: cumulative input tokens, ratio to raw, peak view, summary calls,
protocol violations, mean fact retention, and cache-aware cost under an Anthropic-style and
an OpenAI-style prefix cache (input-token equivalents, summary calls included). Files holding
many sessions (aider's history, OpenHands resolver output) are one row, summed over sessions.
For Claude Code sessions the tool's own recorded usage is shown too.

Per window and cache model it also reports each strategy's cost as a share of raw, the summary
calls' share of that cost, the distance from two lower bounds (every token written to the cache
once; that plus re-reading a 10K working context on every call) and pressured retention per probe
kind; the ``RESULT`` lines carry the issue-12 acceptance figures (cost share of raw, the gap to
every peer whose pressured retention is within 0.02 of mtagent's, latest-error retention).

Beside retention, the mtagent row carries the issue-16 **recall probe**: after each of its
compactions, queries built from compacted-away facts (error lines, file paths, identifiers) must
find a message holding the fact in the top 5 (:func:`mtagent.replay.recall_probe.probe_trajectory`,
the probe ``recall_bench`` runs too).

Issue 34's **work-state probe** (:mod:`mtagent.replay.work_state`) runs for every strategy: at each
compaction the recording's hand-off ledger before it (goal, latest request, rules, plan steps,
files changed, last verification …) is checked against the next view; the table per window gives
items checked and lost, the sessions with a loss, and what was lost by kind. The ``RESULT`` lines
add mtagent's summary output tokens per summary call and the work-state counts of mtagent and
each peer.

    python benchmarks/context_bench.py            # 131K, 65K and 32K windows, all files (~5 min on 2 cores)
    python benchmarks/context_bench.py --quick    # a few files, one window (< 1 min)
    python benchmarks/context_bench.py --summary-price 0.25   # summary calls at a quarter of the price

Writes its report to benchmarks/results/local/ (benchmarks/results/context_bench.md with
MTAGENT_BENCH_RECORD=1) and ends with ``RESULT name=value`` lines.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mtagent.config import Settings
from mtagent.replay.cost import ANTHROPIC
from mtagent.replay.formats import load_trajectories
from mtagent.replay.recall_probe import probe_trajectory
from mtagent.replay.report import replay_session
from mtagent.replay.simulate import sum_by_key
from mtagent.replay.strategies import PEERS, STRATEGY_NAMES
from mtagent.replay.work_state import WorkStateCount

ROOT = Path(__file__).resolve().parents[2] / "shared" / "trajectories"
WINDOWS = (131_072, 65_536, 32_768)
QUICK_FILES = (
    "mini-swe-agent/tests__test_data__github_issue.traj.json",
    "mini-swe-agent/deepseek_chat_test_1-100__django__django-14730.traj.json",
    "swe-agent/trajectories__demonstrations__ctf__pwn__warmup.traj",
    "openhands/multi_swe_bench_example__line1__ponylang__ponyc-4595.json",
    "claude-code/tool_heavy.jsonl",
)
CACHE_MODELS = ("anthropic", "openai")
PROBE_KINDS = ("task", "error", "files_changed", "constraints")
# Peers whose pressured retention is within this of mtagent's are compared on cost.
COMPARABLE_RETENTION = 0.02


@dataclass(slots=True)
class Stats:
    """One strategy's totals over the sessions of one file at one window."""

    sessions: int = 0
    turns: int = 0
    cumulative: int = 0
    peak: int = 0
    summary_calls: int = 0
    compactions: int = 0
    violations: int = 0
    overflows: int = 0
    retentions: list[float] = field(default_factory=list)
    pressured_retentions: list[float] = field(default_factory=list)
    cost: dict[str, float] = field(default_factory=lambda: {m: 0.0 for m in CACHE_MODELS})
    summary_cost: dict[str, float] = field(default_factory=lambda: {m: 0.0 for m in CACHE_MODELS})
    bounds: dict[str, list[float]] = field(default_factory=lambda: {m: [0.0, 0.0] for m in CACHE_MODELS})
    kinds: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in PROBE_KINDS})
    pressured_kinds: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in PROBE_KINDS})
    recall_probes: int = 0  # issue 16's recall probe (mtagent only): probes after its compactions
    recall_hits: int = 0  # … whose fact a top-5 hit holds
    summary_output: int = 0  # tokens the summary calls wrote
    work: WorkStateCount = field(default_factory=WorkStateCount)  # issue 34's work-state probe
    work_lost_sessions: list[str] = field(default_factory=list)  # sessions with any work-state item lost

    def add(self, other: Stats) -> None:
        self.sessions += other.sessions
        self.turns += other.turns
        self.cumulative += other.cumulative
        self.peak = max(self.peak, other.peak)
        self.summary_calls += other.summary_calls
        self.compactions += other.compactions
        self.violations += other.violations
        self.overflows += other.overflows
        self.retentions += other.retentions
        self.pressured_retentions += other.pressured_retentions
        self.recall_probes += other.recall_probes
        self.recall_hits += other.recall_hits
        self.summary_output += other.summary_output
        self.work.merge(other.work)
        self.work_lost_sessions += other.work_lost_sessions
        self.cost = sum_by_key((self.cost, other.cost))
        self.summary_cost = sum_by_key((self.summary_cost, other.summary_cost))
        for k, (lb1, lb2) in other.bounds.items():
            mine = self.bounds.setdefault(k, [0.0, 0.0])
            mine[0] += lb1
            mine[1] += lb2
        for k in PROBE_KINDS:
            self.kinds[k] += other.kinds.get(k, [])
            self.pressured_kinds[k] += other.pressured_kinds.get(k, [])

    @property
    def recall_rate(self) -> float | None:
        return self.recall_hits / self.recall_probes if self.recall_probes else None

    def kind_retention(self, kind: str, pressured: bool = False) -> float | None:
        values = (self.pressured_kinds if pressured else self.kinds)[kind]
        return sum(values) / len(values) if values else None

    @property
    def retention(self) -> float | None:
        return sum(self.retentions) / len(self.retentions) if self.retentions else None

    @property
    def pressured_retention(self) -> float | None:
        """Mean retention over the sessions whose raw view reaches the compaction threshold."""
        values = self.pressured_retentions
        return sum(values) / len(values) if values else None


@dataclass(slots=True)
class FileResult:
    rel: str
    fmt: str
    window: int
    stats: dict[str, Stats]
    recorded_input: int | None = None
    recorded_cost: float | None = None
    seconds: float = 0.0


def run_file(rel: str, root: str, window: int, summary_price: float = 1.0) -> FileResult:
    """Replay every session of one file with every strategy (runs in a worker process)."""
    started = time.perf_counter()
    sessions = load_trajectories(Path(root) / rel)
    stats = {name: Stats() for name in STRATEGY_NAMES}
    recorded_input = 0
    recorded_cost = 0.0
    has_recorded = False
    threshold = Settings().auto_compact_threshold_tokens(window)
    for i, traj in enumerate(sessions):
        replay = replay_session(traj, f"{rel}#{i}", STRATEGY_NAMES, window, summary_price=summary_price)
        pressured = replay.raw.peak_tokens >= threshold
        bounds = replay.bounds
        for name, r in replay.results.items():
            kept = [r.retention] if r.retention is not None else []
            kinds = {k: [v] for k in PROBE_KINDS if (v := r.retention_of(k)) is not None}
            s = Stats(sessions=1, turns=len(r.turns), cumulative=r.cumulative_tokens, peak=r.peak_tokens,
                      summary_calls=r.summary_calls, compactions=r.compactions, violations=r.violations,
                      overflows=r.overflows, retentions=kept, pressured_retentions=kept if pressured else [],
                      cost=dict(r.cached_cost), summary_cost=dict(r.summary_cost), bounds=bounds,
                      kinds=kinds, pressured_kinds=kinds if pressured else {},
                      summary_output=r.summary_output_tokens, work=r.work_state,
                      work_lost_sessions=[f"{rel}#{i}"] if r.work_state.lost else [])
            stats[name].add(s)
        probe = probe_trajectory(traj, label=f"{rel}#{i}", window=window)
        stats["mtagent"].add(Stats(recall_probes=probe.probes, recall_hits=probe.hits))
        for usage in traj.recorded_usage:
            if usage is not None:
                has_recorded = True
                recorded_input += usage.total_input
                recorded_cost += (usage.input_tokens + usage.cache_write_tokens * ANTHROPIC.write_ratio
                                  + usage.cache_read_tokens * ANTHROPIC.read_ratio)
    return FileResult(rel, sessions[0].format, window, stats,
                      recorded_input if has_recorded else None, recorded_cost if has_recorded else None,
                      time.perf_counter() - started)


def list_files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.glob("*/*")
        if p.is_file() and p.name not in ("README.md", "FORMATS.md")
    )


def _fmt_ret(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "–"


def file_table(results: list[FileResult], window: int) -> list[str]:
    lines = [
        f"### Window {window:,}",
        "",
        ("| trajectory | strategy | turns | cumulative input | × raw | peak | summaries | violations | overflows"
         " | retention | cost anthropic | cost openai |"),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fr in sorted((r for r in results if r.window == window), key=lambda r: r.rel):
        raw = fr.stats["raw"].cumulative
        name = fr.rel if fr.stats["raw"].sessions == 1 else f"{fr.rel} ({fr.stats['raw'].sessions} sessions)"
        for strategy in STRATEGY_NAMES:
            s = fr.stats[strategy]
            lines.append(
                f"| {name} | {strategy} | {s.turns} | {s.cumulative:,} | {s.cumulative / raw:.3f} | {s.peak:,} | "
                f"{s.summary_calls} | {s.violations} | {s.overflows} | {_fmt_ret(s.retention)} | "
                f"{s.cost['anthropic']:,.0f} | {s.cost['openai']:,.0f} |"
            )
        if fr.recorded_input is not None:
            lines.append(
                f"| {name} | *recorded ({fr.fmt})* | {fr.stats['raw'].turns} | {fr.recorded_input:,} | "
                f"{fr.recorded_input / raw:.3f} | | | | | | {fr.recorded_cost:,.0f} | |"
            )
    return lines


def totals(results: list[FileResult], window: int | None) -> dict[str, Stats]:
    out = {name: Stats() for name in STRATEGY_NAMES}
    for fr in results:
        if window is None or fr.window == window:
            for name, s in fr.stats.items():
                out[name].add(s)
    return out


def totals_table(tot: dict[str, Stats], label: str) -> list[str]:
    raw = tot["raw"].cumulative
    lines = [
        f"### Totals — {label}",
        "",
        ("| strategy | sessions | cumulative input | × raw | peak | summaries | violations | overflows | mean retention"
         " | retention (pressured) | recall top-5 | cost anthropic | vs raw | cost openai | vs raw |"),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in STRATEGY_NAMES:
        s = tot[name]
        lines.append(
            f"| {name} | {s.sessions} | {s.cumulative:,} | {s.cumulative / raw:.3f} | {s.peak:,} | {s.summary_calls} | "
            f"{s.violations} | {s.overflows} | {_fmt_ret(s.retention)} | {_fmt_ret(s.pressured_retention)} | "
            f"{_fmt_recall(s)} | {s.cost['anthropic']:,.0f} | "
            f"{s.cost['anthropic'] / tot['raw'].cost['anthropic']:.3f} | {s.cost['openai']:,.0f} | "
            f"{s.cost['openai'] / tot['raw'].cost['openai']:.3f} |"
        )
    return lines


def _fmt_recall(s: Stats) -> str:
    rate = s.recall_rate
    return "—" if rate is None else f"{rate:.3f} ({s.recall_hits}/{s.recall_probes})"


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.3f}" if whole else "–"


def cost_table(tot: dict[str, Stats], label: str) -> list[str]:
    """Per cache model: cost vs raw, the summary calls' share, distance from the two lower bounds,
    and pressured retention per probe kind."""
    lines = [f"### Cost and retention per cache model — {label}", "",
             ("| cache model | strategy | cost vs raw | summary share | × bound 1 (written once) "
              "| × bound 2 (+10K re-read) | pressured retention | " + " | ".join(PROBE_KINDS) + " |"),
             "|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(PROBE_KINDS)]
    for model in CACHE_MODELS:
        lb1, lb2 = tot["raw"].bounds[model]
        lines.append(f"| {model} | *bounds* | {_share(lb1, tot['raw'].cost[model])} / "
                     f"{_share(lb2, tot['raw'].cost[model])} | | | | | " + "| " * len(PROBE_KINDS))
        for name in STRATEGY_NAMES:
            st = tot[name]
            kinds = " | ".join(_fmt_ret(st.kind_retention(k, pressured=True)) for k in PROBE_KINDS)
            lines.append(
                f"| {model} | {name} | {_share(st.cost[model], tot['raw'].cost[model])} | "
                f"{_share(st.summary_cost[model], st.cost[model])} | {_share(st.cost[model], lb1)} | "
                f"{_share(st.cost[model], lb2)} | {_fmt_ret(st.pressured_retention)} | {kinds} |"
            )
    return lines


def work_state_table(tot: dict[str, Stats], label: str) -> list[str]:
    """Issue 34's work-state probe per strategy: ledger items checked at compactions, lost, where."""
    lines = [f"### Work state at compactions — {label}", "",
             "| strategy | compactions | items checked | lost | sessions with a loss | lost by kind |",
             "|---|---:|---:|---:|---:|---|"]
    for name in STRATEGY_NAMES:
        st = tot[name]
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(st.work.lost_by_kind.items(), key=lambda kv: -kv[1]))
        lines.append(f"| {name} | {st.compactions} | {st.work.checked:,} | {st.work.lost:,} | "
                     f"{len(st.work_lost_sessions)} | {kinds or '–'} |")
    lost = tot["mtagent"].work_lost_sessions
    if lost:
        lines += ["", "mtagent lost work state in: " + ", ".join(sorted(lost)[:20])
                  + (f" (+{len(lost) - 20} more)" if len(lost) > 20 else "")]
    return lines


def comparable_peers(tot: dict[str, Stats]) -> list[str]:
    """Peers whose pressured retention is within COMPARABLE_RETENTION of mtagent's."""
    mine = tot["mtagent"].pressured_retention
    if mine is None:
        return list(PEERS)
    return [p for p in PEERS if tot[p].pressured_retention is not None
            and abs(tot[p].pressured_retention - mine) <= COMPARABLE_RETENTION]


QUARTER = 0.25


def acceptance_lines(tot: dict[str, Stats], w: int, summary_price: float = 1.0) -> list[str]:
    """The issue's figures for one window: cost share of raw, the gap to comparable peers, the
    summary share, the distance from the bounds, pressured retention (all kinds, latest error)."""
    out: list[str] = []
    mt = tot["mtagent"]
    for model in CACHE_MODELS:
        raw = tot["raw"].cost[model]
        out.append(f"RESULT mtagent_cost_share_of_raw_{model}_{w}={mt.cost[model] / raw:.4f}")
        peers = comparable_peers(tot)
        if peers:
            worst = max(mt.cost[model] / tot[p].cost[model] - 1 for p in peers)
            out.append(f"RESULT mtagent_cost_vs_comparable_peers_{model}_{w}={worst:+.4f}")
        else:
            out.append(f"RESULT mtagent_cost_vs_comparable_peers_{model}_{w}=none")
        out.append(f"RESULT mtagent_summary_share_{model}_{w}={mt.summary_cost[model] / mt.cost[model]:.4f}")
        lb1, lb2 = tot["raw"].bounds[model]
        out.append(f"RESULT mtagent_vs_bound1_{model}_{w}={mt.cost[model] / lb1:.3f}")
        out.append(f"RESULT mtagent_vs_bound2_{model}_{w}={mt.cost[model] / lb2:.3f}")
        # Summary calls are priced after the fact (the replayed trigger is not told), so the cost at
        # a quarter-price summary model is exact from this run: what --summary-price 0.25 prints.
        if summary_price > 0:
            full_summary = mt.summary_cost[model] / summary_price
            quarter = mt.cost[model] - mt.summary_cost[model] + QUARTER * full_summary
            out.append(f"RESULT mtagent_vs_bound2_{model}_{w}_summary_price_0.25={quarter / lb2:.3f}")
    out.append(f"RESULT mtagent_retention_pressured_{w}={mt.pressured_retention or 0.0:.4f}")
    out.append(f"RESULT mtagent_summary_output_per_summary_{w}="
               f"{mt.summary_output / mt.summary_calls if mt.summary_calls else 0.0:.1f}")
    for name in ("mtagent", *PEERS):
        st = tot[name]
        out.append(f"RESULT work_state_lost_{name}_{w}={st.work.lost}/{st.work.checked}"
                   f" sessions={len(st.work_lost_sessions)}")
    error = mt.kind_retention("error", pressured=True)
    out.append(f"RESULT mtagent_error_retention_pressured_{w}={error if error is not None else 0.0:.4f}")
    out.append(f"RESULT mtagent_recall_probe_top5_{w}={_fmt_rate(mt.recall_rate)}")
    out.append(f"RESULT comparable_peers_{w}={','.join(comparable_peers(tot)) or 'none'}")
    return out


def _fmt_rate(rate: float | None) -> str:
    """``none`` when no compaction happened (nothing to probe) — never a made-up 0 or 1."""
    return "none" if rate is None else f"{rate:.4f}"


def result_lines(results: list[FileResult], windows: tuple[int, ...], summary_price: float = 1.0) -> list[str]:
    out: list[str] = []
    for w in windows:
        out += acceptance_lines(totals(results, w), w, summary_price)
    for w in windows:
        tot = totals(results, w)
        out.append(f"RESULT mtagent_ratio_to_raw_{w}={tot['mtagent'].cumulative / tot['raw'].cumulative:.4f}")
        for model in CACHE_MODELS:
            best = min(tot[p].cost[model] for p in PEERS)
            out.append(f"RESULT mtagent_cost_vs_best_peer_{model}_{w}={tot['mtagent'].cost[model] / best - 1:+.4f}")
    tot = totals(results, None)
    for model in CACHE_MODELS:
        best_name = min(PEERS, key=lambda p: tot[p].cost[model])
        out.append(f"RESULT mtagent_cost_vs_best_peer_{model}={tot['mtagent'].cost[model] / tot[best_name].cost[model] - 1:+.4f}")
    for model in CACHE_MODELS:
        best = min(tot[p].cost[model] for p in PEERS)
        out.append(f"RESULT mtagent_sm_cost_vs_best_peer_{model}={tot['mtagent-sm'].cost[model] / best - 1:+.4f}")
    best_peer_ret = max((tot[p].retention or 0.0) for p in PEERS)
    out.append(f"RESULT mtagent_retention={tot['mtagent'].retention or 0.0:.4f}")
    out.append(f"RESULT best_peer_retention={best_peer_ret:.4f}")
    best_pressured = max((tot[p].pressured_retention or 0.0) for p in PEERS)
    out.append(f"RESULT mtagent_retention_pressured={tot['mtagent'].pressured_retention or 0.0:.4f}")
    out.append(f"RESULT mtagent_recall_probe_top5={_fmt_rate(tot['mtagent'].recall_rate)}")
    out.append(f"RESULT mtagent_recall_probes={tot['mtagent'].recall_probes}")
    out.append(f"RESULT best_peer_retention_pressured={best_pressured:.4f}")
    out.append(f"RESULT mtagent_violations={tot['mtagent'].violations}")
    out.append(f"RESULT mtagent_overflows={tot['mtagent'].overflows}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a few small files at one window (< 1 minute)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the shared trajectories folder")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    parser.add_argument("--out", type=Path, default=None, help="the report (default: benchmarks/results/local/"
                        "context_bench.md; benchmarks/results/ with MTAGENT_BENCH_RECORD=1)")
    parser.add_argument("--summary-price", type=float, default=1.0,
                        help="price summary calls at this share of the main model (0.25: a compact model at a quarter)")
    args = parser.parse_args(argv)
    if args.out is None:
        from results_file import results_file  # beside this file: on sys.path when it runs as a script

        args.out = results_file("context_bench_quick.md" if args.quick else "context_bench.md")
    if not args.root.is_dir():
        print(f"trajectories not found at {args.root}; pass --root", file=sys.stderr)
        return 2
    files = list(QUICK_FILES) if args.quick else list_files(args.root)
    windows = (65_536,) if args.quick else WINDOWS
    jobs = sorted(((f, w) for f in files for w in windows), key=lambda j: -(args.root / j[0]).stat().st_size)
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_file, f, str(args.root), w, args.summary_price) for f, w in jobs]
        results = [fut.result() for fut in futures]
    elapsed = time.perf_counter() - started
    lines = [
        "# Context benchmark",
        "",
        (f"Open-loop replay of {len(files)} files at windows {', '.join(f'{w:,}' for w in windows)}; "
         f"{elapsed:.0f} s with {args.jobs} worker(s). Reproduce: `python benchmarks/context_bench.py"
         f"{' --quick' if args.quick else ''}"
         f"{f' --summary-price {args.summary_price:g}' if args.summary_price != 1.0 else ''}`."
         + (f" Summary calls priced at {args.summary_price:g}× the main model." if args.summary_price != 1.0 else "")),
        ("Cost = input-token equivalents (uncached input = 1; Anthropic-style cache read 0.1 / write 1.25, "
         "OpenAI-style cached 0.1 from 1,024 tokens; summary calls: output 5 (Anthropic) / 4 (OpenAI), input "
         "uncached unless the request shares the previous request's prefix, which is then priced as cache reads)."),
        ("Bound 1 = every token written to the cache once, never re-read; bound 2 = bound 1 + re-reading a 10K "
         "working context on every call. A final model call whose tool call has no recorded result counts."),
        ("Retention = mean share of probe facts visible in the view (per-session mean, then mean over sessions); "
         "*pressured* = only the sessions whose raw view reaches the compaction threshold at that window."),
        ("Recall top-5 (mtagent) = after each compaction, queries built from compacted-away facts (error "
         "lines, file paths, identifiers) that find a message holding the fact among the top 5 hits (issue 16)."),
        "",
    ]
    for w in windows:
        tot, label = totals(results, w), f"window {w:,}"
        lines += [*totals_table(tot, label), "", *cost_table(tot, label), "", *work_state_table(tot, label), ""]
    if len(windows) > 1:
        lines += totals_table(totals(results, None), "all windows") + [""]
    for w in windows:
        lines += file_table(results, w) + [""]
    results_text = result_lines(results, windows, args.summary_price)
    report = "\n".join(lines)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join([report, "```", *results_text, "```"]) + "\n", encoding="utf-8")
    print(report)
    for line in results_text:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
