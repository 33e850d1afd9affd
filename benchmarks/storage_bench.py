"""Storage backends side by side: append throughput, resume latency, and a fleet of 8 writers.

    python benchmarks/storage_bench.py [--quick] [--dsn postgresql://…]

Without ``--dsn`` a throw-away PostgreSQL server is started (``initdb`` + ``pg_ctl``, fsync on;
the writers commit asynchronously under the default ``transcript.fsync = "turn"``, like the files
backend, which does not fsync per record either).

* **append**: one writer appends a realistic mix of records (short messages, 20 kB tool results).
* **resume**: a long session with a boundary every 500 records; resume reads only what follows
  the last one. Reported as milliseconds and as a ratio to reading the whole session.
* **fleet**: 8 worker processes share 12 sessions. Each repeatedly takes a random session (the
  writer lock may say "in use": counted, not an error) and appends a block of numbered records.
  Afterwards every session must be a sequence of whole blocks, each contiguous and in order
  (nothing interleaved), holding exactly the blocks the workers acknowledged (nothing lost).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent.errors import SessionLocked
from mtagent.session import schema
from mtagent.session.files_store import FilesStore

PROJECT = "bench-000000000000"
WORKERS = 8
FLEET_SESSIONS = 12


def _store(backend: str, home: Path, dsn: str | None, tenant: str) -> Any:
    if backend == "files":
        return FilesStore(tenant=tenant, home=home)
    from mtagent.session.postgres.store import PostgresStore

    return PostgresStore(dsn or "", tenant=tenant, pool_max_size=2)


def _records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            msg: Any = HumanMessage(f"step {i}: " + "please look at the parser " * rng.randint(1, 8), id=f"u{i}")
        elif kind == 1:
            msg = AIMessage("reading", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "grep", "args": {"q": "x"}}])
        elif kind == 2:
            msg = ToolMessage("match line\n" * rng.randint(100, 2_000), tool_call_id=f"c{i - 1}", name="grep",
                              id=f"t{i}")
        else:
            msg = AIMessage("found it " * rng.randint(5, 50), id=f"a{i}")
        out.append(schema.message_to_record(msg))
    return out


def bench_append(store: Any, records: list[dict[str, Any]]) -> tuple[float, float]:
    size = sum(len(schema.dumps_record(r)) for r in records)
    start = time.perf_counter()
    with store.open_writer(PROJECT, f"append-{uuid.uuid4().hex[:8]}") as writer:
        for i, record in enumerate(records):
            writer.append(record)
            if i % 50 == 49:
                writer.end_turn()
    elapsed = time.perf_counter() - start
    return len(records) / elapsed, size / elapsed / 1e6


def bench_resume(store: Any, n: int, repeats: int) -> tuple[float, float, int]:
    sid = f"resume-{uuid.uuid4().hex[:8]}"
    records = _records(n, seed=1)
    with store.open_writer(PROJECT, sid) as writer:
        for i, record in enumerate(records):
            writer.append(record)
            if i % 500 == 499 and records[i - 9].get("id"):
                writer.append(schema.boundary_record(summary=f"summary {i}", first_kept_id=records[i - 9]["id"]))
    resume, full = [], []
    kept = 0
    for _ in range(repeats):
        t = time.perf_counter()
        kept = len(store.read_since_boundary(PROJECT, sid).entries)
        resume.append(time.perf_counter() - t)
        t = time.perf_counter()
        store.read_entries(PROJECT, sid)
        full.append(time.perf_counter() - t)
    return statistics.median(resume) * 1000, statistics.median(full) * 1000, kept


def _fleet_worker(args: tuple[str, str, str | None, str, int, int, int]) -> tuple[list[tuple[str, str]], int]:
    backend, home, dsn, tenant, worker, rounds, block = args
    store = _store(backend, Path(home), dsn, tenant)
    rng = random.Random(worker)
    acknowledged: list[tuple[str, str]] = []
    conflicts = 0
    try:
        for b in range(rounds):
            sid = f"fleet-{rng.randrange(FLEET_SESSIONS)}"
            try:
                writer = store.open_writer(PROJECT, sid)
            except SessionLocked:
                conflicts += 1
                continue
            with writer:
                tag = f"w{worker}-b{b}"
                for i in range(block):
                    writer.append(schema.message_to_record(HumanMessage(f"{tag} {i} " + "x" * 300,
                                                                        id=f"{tag}-i{i}")))
                writer.end_turn()
            acknowledged.append((sid, tag))
    finally:
        store.close()
    return acknowledged, conflicts


def bench_fleet(backend: str, home: Path, dsn: str | None, rounds: int, block: int) -> dict[str, float]:
    tenant = f"fleet-{uuid.uuid4().hex[:6]}"
    jobs = [(backend, str(home), dsn, tenant, w, rounds, block) for w in range(WORKERS)]
    start = time.perf_counter()
    with mp.get_context("spawn").Pool(WORKERS) as pool:
        results = pool.map(_fleet_worker, jobs)
    elapsed = time.perf_counter() - start
    acknowledged = {(sid, tag) for acks, _ in results for sid, tag in acks}
    conflicts = sum(c for _, c in results)
    store = _store(backend, home, dsn, tenant)
    found: set[tuple[str, str]] = set()
    interleaved = duplicated = total = 0
    try:
        for sid in [s for s in store.sessions(PROJECT) if s.startswith("fleet-")]:
            ids = [str(e.record.get("id")) for e in store.read_entries(PROJECT, sid)]
            total += len(ids)
            for at in range(0, len(ids), block):
                chunk = ids[at:at + block]
                tag = chunk[0].rsplit("-i", 1)[0]
                if chunk != [f"{tag}-i{i}" for i in range(block)]:
                    interleaved += 1
                    continue
                duplicated += (sid, tag) in found
                found.add((sid, tag))
    finally:
        store.close()
    return {"records": total, "acknowledged_blocks": len(acknowledged), "lost_blocks": len(acknowledged - found),
            "unacknowledged_blocks": len(found - acknowledged), "interleaved_blocks": interleaved,
            "duplicated_blocks": duplicated, "lock_conflicts": conflicts, "records_per_s": total / elapsed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (well under a minute)")
    parser.add_argument("--dsn", help="use this PostgreSQL server instead of starting one")
    args = parser.parse_args(argv)
    n_append, n_resume, repeats = (500, 2_000, 3) if args.quick else (4_000, 40_000, 5)
    rounds, block = (8, 20) if args.quick else (60, 50)
    results: dict[str, dict[str, float]] = {}
    with ExitStack() as stack:
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mtagent-bench-")))
        dsn = args.dsn
        backends = ["files", "postgres"]
        if dsn is None:
            from mtagent.testing.pg_server import create_database, find_binaries, temporary_server

            if find_binaries() is None:
                print("postgres: skipped (no initdb/pg_ctl in PATH or /usr/lib/postgresql/*/bin)", file=sys.stderr)
                backends = ["files"]
            else:
                dsn = create_database(stack.enter_context(temporary_server(fsync=True)), "bench")
        records = _records(n_append)
        for backend in backends:
            store = _store(backend, home, dsn, "bench")
            try:
                rps, mbps = bench_append(store, records)
                resume_ms, full_ms, kept = bench_resume(store, n_resume, repeats)
            finally:
                store.close()
            fleet = bench_fleet(backend, home, dsn, rounds, block)
            results[backend] = {"append_records_per_s": rps, "append_mb_per_s": mbps, "resume_ms": resume_ms,
                                "full_read_ms": full_ms, "resume_records": kept,
                                **{f"fleet_{k}": v for k, v in fleet.items()}}
    keys = list(next(iter(results.values())))
    print(f"{'figure':<32}" + "".join(f"{b:>14}" for b in results))
    for key in keys:
        print(f"{key:<32}" + "".join(f"{results[b][key]:>14.1f}" for b in results))
    for backend, row in results.items():
        print(f"RESULT {backend}_append_records_per_s={row['append_records_per_s']:.0f}")
        print(f"RESULT {backend}_resume_ms={row['resume_ms']:.2f}")
        print(f"RESULT {backend}_resume_vs_full_read={row['resume_ms'] / row['full_read_ms']:.4f}")
        print(f"RESULT {backend}_fleet_records={row['fleet_records']:.0f}")
        print(f"RESULT {backend}_fleet_lost_blocks={row['fleet_lost_blocks']:.0f}")
        print(f"RESULT {backend}_fleet_interleaved_blocks={row['fleet_interleaved_blocks']:.0f}")
        print(f"RESULT {backend}_fleet_lock_conflicts={row['fleet_lock_conflicts']:.0f}")
    if "postgres" in results:
        pg, files = results["postgres"], results["files"]
        print(f"RESULT postgres_vs_files_append={pg['append_records_per_s'] / files['append_records_per_s']:.3f}")
        print(f"RESULT postgres_vs_files_resume={pg['resume_ms'] / files['resume_ms']:.3f}")
    bad = sum(r["fleet_lost_blocks"] + r["fleet_interleaved_blocks"] + r["fleet_duplicated_blocks"]
              + r["fleet_unacknowledged_blocks"] for r in results.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
