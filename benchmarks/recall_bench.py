"""Recall benchmark: indexing throughput, search latency, and the recall probe on real sessions.

    python benchmarks/recall_bench.py [--quick] [--root DIR]

* **indexing** — every message of the shared trajectories (``shared/trajectories``) is fed to
  :class:`~mtagent.context.recall.RecallIndexer` one record at a time, as a live session's sink
  does (one transaction per record, an on-disk index). The corpus is repeated under new session
  ids until the index holds at least 1M tokens (the table says how many passes that took).
  Throughput is indexed text (UTF-8 bytes) per CPU second of this process (SQLite runs in it);
  the machine is shared, so wall-clock figures are shown beside them. Target ≥ 5 MB/s.
* **search** — queries built from the corpus itself (paths, code names, error lines a session
  mentions, sampled with a fixed seed) against that index; p50/p95/max latency, CPU time per
  query (wall time beside it). Target p95 ≤ 50 ms.
* **recall probe** — :mod:`mtagent.replay.recall_probe`: every session is replayed through the
  real engine at a 65,536-token window; after each compaction, facts of compacted-away messages
  are queried and must find their message in the top 5. Target ≥ 90%. (``context_bench`` reports
  retention; this figure sits beside it here.)

* **compacted facts** — :mod:`recall_facts` (beside this file): context-test sessions at a 12K
  window on tasks whose fact compaction removes (a constant in a 60–110-line file among other
  constants, a line of a 900-line log, a value the user stated in a long task); afterwards the
  fact's name is recalled as the model's ``recall(query=NAME)`` is — its own call already in the
  index — and the top 5 must show ``NAME = value``. Share of tasks (target ≥ 90%) and mean
  reciprocal rank. ``--facts N`` tasks (24; 6 with ``--quick``), ``--facts 0`` skips it.

Prints a table, writes benchmarks/results/recall_bench.md, ends with ``RESULT`` lines.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

from results_file import results_file
from mtagent.context.recall import Recaller, RecallIndexer
from mtagent.context.recall.query import identifiers
from mtagent.context.tokens import count_text_tokens, message_text
from mtagent.replay.formats import load_trajectories
from mtagent.replay.recall_probe import probe_trajectory
from mtagent.replay.trajectory import Trajectory
from mtagent.session.schema import message_to_record

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = HERE.parents[1] / "shared" / "trajectories"
MIN_TOKENS = 1_000_000
PROBE_WINDOW = 65_536
QUICK_PROBE_FILES = 4


def load_corpus(root: Path) -> list[tuple[str, Trajectory]]:
    out: list[tuple[str, Trajectory]] = []
    for path in sorted(p for p in root.glob("*/*") if p.is_file() and p.name not in ("README.md", "FORMATS.md")):
        try:
            sessions = load_trajectories(path)
        except Exception as exc:  # noqa: BLE001 - one unreadable file does not stop the benchmark
            print(f"skipping {path.name}: {exc}", file=sys.stderr)
            continue
        out += [(f"{path.parent.name}/{path.name}#{i}", t) for i, t in enumerate(sessions)]
    return out


def build_index(corpus: list[tuple[str, Trajectory]],
                home: Path) -> tuple[RecallIndexer, float, float, int, int, int]:
    """(indexer, CPU seconds and wall seconds spent indexing, bytes indexed, tokens indexed, passes)."""
    os.environ["MTAGENT_HOME"] = str(home)
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    indexer = RecallIndexer(project)
    seconds, wall, tokens, passes = 0.0, 0.0, 0, 0
    while tokens < MIN_TOKENS:
        passes += 1
        records = [(f"p{passes}-s{i:03d}", message_to_record(m.model_copy()))
                   for i, (_, traj) in enumerate(corpus) for m in traj.messages]
        start, start_wall = time.process_time(), time.perf_counter()
        for session, record in records:
            indexer.add_record(record, session)
        indexer.flush()
        seconds += time.process_time() - start
        wall += time.perf_counter() - start_wall
        if passes == 1:
            first_pass = sum(count_text_tokens(str(t)) for (t,) in indexer.store.execute("SELECT text FROM items"))
            if first_pass == 0:
                raise SystemExit("the trajectories produced no indexable text")
        tokens = first_pass * passes
    (size,) = indexer.store.execute("SELECT sum(length(CAST(text AS BLOB))) FROM items")[0]
    return indexer, seconds, wall, int(size or 0), tokens, passes


def sample_queries(corpus: list[tuple[str, Trajectory]], count: int) -> list[str]:
    rng = random.Random(16)
    pool: list[str] = []
    for _, traj in corpus:
        for m in traj.messages:
            pool += identifiers(message_text(m), limit=4)
    pool = sorted(set(pool))
    rng.shuffle(pool)
    return pool[:count]


def time_queries(recaller: Recaller, queries: list[str]) -> tuple[list[float], list[float]]:
    """(CPU ms, wall ms) per query."""
    cpu: list[float] = []
    wall: list[float] = []
    for q in queries:
        start, start_wall = time.process_time(), time.perf_counter()
        recaller.search(q, k=5)
        cpu.append((time.process_time() - start) * 1000)
        wall.append((time.perf_counter() - start_wall) * 1000)
    return cpu, wall


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(round(share * len(ordered))) - 1)]


def run_probe(corpus: list[tuple[str, Trajectory]], quick: bool) -> tuple[int, int, int, list[str]]:
    chosen = corpus
    if quick:
        chosen = sorted(corpus, key=lambda pair: -len(pair[1].messages))[:QUICK_PROBE_FILES]
    probes = hits = compactions = 0
    rows: list[str] = []
    for label, traj in chosen:
        result = probe_trajectory(traj, label=label, window=PROBE_WINDOW)
        if result.compactions:
            rows.append(f"| {label} | {result.compactions} | {result.probes} | {result.hits} |")
        probes, hits, compactions = probes + result.probes, hits + result.hits, compactions + result.compactions
    return probes, hits, compactions, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries, the recall probe on a few sessions")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="folder of trajectories")
    parser.add_argument("--facts", type=int, default=None, help="compacted-fact tasks (24; --quick: 6; 0: skip)")
    parser.add_argument("--facts-only", action="store_true", help="only the compacted-facts section")
    args = parser.parse_args(argv)
    facts = args.facts if args.facts is not None else (6 if args.quick else 24)
    if args.facts_only:
        return _facts_section(facts, args.quick)
    if not args.root.is_dir():
        print(f"trajectories not found at {args.root}; pass --root", file=sys.stderr)
        return 2
    corpus = load_corpus(args.root)
    with tempfile.TemporaryDirectory(prefix="mtagent-recall-bench-") as tmp:
        indexer, seconds, wall, size, tokens, passes = build_index(corpus, Path(tmp))
        recaller = Recaller(indexer)
        queries = sample_queries(corpus, 100 if args.quick else 500)
        time_queries(recaller, queries[:10])  # warm the page cache, as a live session's index is
        times, walls = time_queries(recaller, queries)
        items = indexer.store.count()
        indexer.close()
    mb_per_s = size / 1e6 / seconds if seconds else 0.0
    wall_mb_per_s = size / 1e6 / wall if wall else 0.0
    p50, p95, worst = statistics.median(times), percentile(times, 0.95), max(times)
    wall_p95 = percentile(walls, 0.95)
    load = os.getloadavg()[0]
    probes, hits, compactions, rows = run_probe(corpus, args.quick)
    rate = hits / probes if probes else 0.0
    lines = [
        "# recall_bench" + (" (--quick)" if args.quick else ""),
        "",
        "| figure | value | target |",
        "| --- | --- | --- |",
        f"| sessions (files × sessions) | {len(corpus)} | |",
        f"| corpus passes to reach 1M tokens | {passes} | |",
        f"| indexed items | {items:,} | |",
        f"| indexed tokens | {tokens:,} | ≥ 1,000,000 |",
        f"| machine load (1-min average, {os.cpu_count()} cores) | {load:.1f} | |",
        f"| indexed text | {size / 1e6:.1f} MB in {seconds:.2f} CPU s ({wall:.2f} s wall) | |",
        f"| indexing throughput (CPU) | {mb_per_s:.1f} MB/s (wall: {wall_mb_per_s:.1f} MB/s) | ≥ 5 MB/s |",
        f"| queries | {len(times)} | |",
        f"| search p50 / p95 / max (CPU) | {p50:.2f} / {p95:.2f} / {worst:.2f} ms (wall p95 {wall_p95:.2f} ms) "
        "| p95 ≤ 50 ms |",
        f"| recall probe (top 5) | {hits}/{probes} = {rate:.1%} over {compactions} compactions | ≥ 90% |",
        "",
        "| session | compactions | probes | found in top 5 |",
        "| --- | --- | --- | --- |",
        *rows,
    ]
    text = "\n".join(lines)
    print(text)
    out = results_file("recall_bench_quick.md" if args.quick else "recall_bench.md")
    out.write_text(text + "\n")
    print(f"RESULT recall_index_mb_per_s={mb_per_s:.2f}")
    print(f"RESULT recall_index_tokens={tokens}")
    print(f"RESULT recall_p95_ms={p95:.2f}")
    print(f"RESULT recall_p95_wall_ms={wall_p95:.2f}")
    print(f"RESULT recall_index_wall_mb_per_s={wall_mb_per_s:.2f}")
    print(f"RESULT recall_probe_top5={rate:.4f}")
    return _facts_section(facts, args.quick) if facts else 0


def _facts_section(count: int, quick: bool) -> int:
    """The compacted-facts figure (see the module docstring): its own table and RESULT lines."""
    import recall_facts

    with (tempfile.TemporaryDirectory(prefix="mtagent-recall-facts-") as tmp,
          mock.patch.dict(os.environ, {"MTAGENT_HOME": str(Path(tmp) / "home")})):
        rows = recall_facts.run(Path(tmp) / "run", count)
    hits = sum(r["hit"] for r in rows)
    mrr = sum(1 / r["rank"] for r in rows if r["rank"]) / max(1, len(rows))
    lines = ["", f"## compacted facts at a {recall_facts.WINDOW:,}-token window" + (" (--quick)" if quick else ""),
             "", "| shape | tasks | value in recall's top 5 | mean reciprocal rank |", "| --- | --- | --- | --- |"]
    for shape in recall_facts.SHAPES:
        part = [r for r in rows if r["shape"] == shape]
        if part:
            share = sum(r["hit"] for r in part)
            shape_mrr = sum(1 / r["rank"] for r in part if r["rank"]) / len(part)
            lines.append(f"| {shape} | {len(part)} | {share}/{len(part)} | {shape_mrr:.2f} |")
    lines.append(f"| all | {len(rows)} | {hits}/{len(rows)} = {hits / max(1, len(rows)):.1%} | {mrr:.2f} |")
    text = "\n".join(lines)
    print(text)
    out = results_file("recall_bench_quick.md" if quick else "recall_bench.md")
    with out.open("a", encoding="utf-8") as fh:
        fh.write(text + "\n")
    print(f"RESULT recall_compacted_fact_top5={hits / max(1, len(rows)):.4f}")
    print(f"RESULT recall_compacted_fact_mrr={mrr:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
