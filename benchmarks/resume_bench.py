"""Resume from a multi-GB transcript vs parsing all of it; append throughput.

    python benchmarks/resume_bench.py [--quick] [--size-mb N] [--dir DIR] [--keep]

Writes a synthetic session through ``TranscriptWriter`` (fsync never): rounds of user text,
assistant tool calls, and tool results whose model-visible content is a bounded preview
(as the tool-result budget produces). As in a real session, a compaction is recorded whenever
the text since the last one passes the auto-compact threshold (98,072 tokens ≈ 392 KB at
4 chars/token), so the last boundary is within one context's worth of the end, and the file
ends mid-way to the next compaction. Then times, on the warm page cache:

* **resume (index)** — ``load_transcript``: sidecar index → read from the last boundary's first
  kept message → build the view;
* **resume (scan)** — the same with the index deleted (backwards block scan);
* **full parse** — read, JSON-decode and validate every line, keeping records since the last
  compaction, then build the view (what a resume without boundary offsets costs).

Also appends small realistic records to a fresh file with fsync never (and, for reference, a
few with ``always``). Prints a table, writes benchmarks/results/resume_bench.md, ends with
``RESULT`` lines (target: resume_speedup ≥ 50, append_records_per_s ≥ 20,000).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from results_file import results_file
from mtagent.config import Settings
from mtagent.context.view import build_resume_view, load_transcript
from mtagent.session import schema
from mtagent.session.index import index_path
from mtagent.session.reader import ReadReport, iter_entries
from mtagent.session.transcript import TranscriptWriter

RESULTS = results_file("resume_bench.md")
WORDS = ("def class import return self value error test path file line result context token "
         "session boundary summary compact grep shell read write edit").split()
CHARS_PER_TOKEN = 4


_CORPUS = " ".join(random.Random(11).choice(WORDS) for _ in range(60_000))


def _text(rng: random.Random, chars: int) -> str:
    """``chars`` characters of code-like words (a random window of a fixed corpus)."""
    start = rng.randrange(0, len(_CORPUS) - 1)
    out = _CORPUS[start:start + chars]
    while len(out) < chars:
        out += " " + _CORPUS[: chars - len(out) - 1]
    return out


def _round(rng: random.Random, n: int) -> list[dict[str, Any]]:
    records = [schema.message_to_record(HumanMessage(_text(rng, rng.randint(20, 400)), id=f"u{n}"))]
    calls = [{"id": f"c{n}_{k}", "name": rng.choice(["grep", "read_file", "shell"]),
              "args": {"pattern": _text(rng, 20)}} for k in range(rng.randint(1, 3))]
    records.append(schema.message_to_record(AIMessage(
        _text(rng, rng.randint(0, 300)), id=f"a{n}", tool_calls=calls,
        usage_metadata={"input_tokens": 30_000, "output_tokens": 200, "total_tokens": 30_200})))
    for call in calls:
        original = rng.randint(200, 60_000)
        preview = min(original, 4_000)
        artifact = f"tool-results/{call['id']}.txt" if original > preview else None
        records.append(schema.message_to_record(ToolMessage(
            _text(rng, preview), tool_call_id=call["id"], name=call["name"], id=f"t{call['id']}",
            artifact={"kind": "text", "artifact": artifact, "original_chars": original, "preview_chars": preview,
                      "truncated": original > preview, "artifact_truncated": False})))
    return records


def generate(path: Path, target_bytes: int, seed: int = 7) -> dict[str, Any]:
    """Write the session, compacting every threshold's worth of text; stop half-way to the next."""
    rng = random.Random(seed)
    compact_every = Settings().auto_compact_threshold_tokens() * CHARS_PER_TOKEN
    written = n = boundaries = 0
    last_boundary_size = 0
    began = time.perf_counter()
    with TranscriptWriter(path, fsync="never") as writer:
        writer.append(schema.session_start_record(path.stem, "/bench", "bench-model", "0.1.0"))
        while True:
            since = writer.size - last_boundary_size
            if writer.size >= target_bytes and since >= compact_every // 2:
                break
            n += 1
            for record in _round(rng, n):
                writer.append(record)
                written += 1
            if since >= compact_every and writer.size < target_bytes:
                writer.append(schema.boundary_record(summary=_text(rng, 3_000), first_kept_id=f"u{max(1, n - 3)}",
                                                     pre_tokens=98_072, post_tokens=14_000, boundary_id=f"cb{n}"))
                boundaries += 1
                last_boundary_size = writer.size
        size = writer.size
    return {"records": written, "boundaries": boundaries, "bytes": size, "seconds": time.perf_counter() - began}


def full_parse_resume(path: Path) -> tuple[int, float]:
    """The baseline: decode and validate every line, keep what follows the last compaction."""
    began = time.perf_counter()
    window: list[dict[str, Any]] = []
    for entry in iter_entries(path, report=ReadReport()):
        record = entry.record
        if record["type"] == schema.COMPACT_BOUNDARY:
            kept = record.get("first_kept_id")
            cut = next((i for i in range(len(window) - 1, -1, -1) if window[i].get("id") == kept), len(window))
            window = window[cut:]
        window.append(record)
    view = build_resume_view(window)
    return len(view.messages), time.perf_counter() - began


def timed_resume(path: Path, repeat: int) -> tuple[float, Any]:
    best = float("inf")
    resumed = None
    for _ in range(repeat):
        began = time.perf_counter()
        resumed = load_transcript(path)
        best = min(best, time.perf_counter() - began)
    return best, resumed


def append_throughput(folder: Path, count: int, policy: str, batches: int = 3) -> tuple[float, float]:
    """Records per second through ``TranscriptWriter.append``, best batch: (wall clock, CPU time).

    Best of a few batches, because on a shared machine one batch may be starved of CPU.
    """
    rng = random.Random(3)
    records = [r for n in range(count // 3 + 1) for r in _small_round(rng, n)][:count]
    best_wall = best_cpu = 0.0
    for batch in range(batches):
        path = folder / f"append-{policy}-{batch}.jsonl"
        with TranscriptWriter(path, fsync=policy) as writer:  # type: ignore[arg-type]
            began, cpu = time.perf_counter(), time.process_time()
            for record in records:
                writer.append(record)
            elapsed, cpu_elapsed = time.perf_counter() - began, time.process_time() - cpu
        path.unlink()
        best_wall = max(best_wall, count / elapsed)
        best_cpu = max(best_cpu, count / max(cpu_elapsed, 1e-9))
    return best_wall, best_cpu


def _small_round(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Typical per-turn records: a user line, an assistant call, a short tool result."""
    ai = AIMessage("", id=f"a{n}", tool_calls=[{"id": f"c{n}", "name": "read_file", "args": {"path": "src/x.py"}}],
                   usage_metadata={"input_tokens": 1000, "output_tokens": 20, "total_tokens": 1020})
    tool = ToolMessage(_text(rng, rng.randint(50, 600)), tool_call_id=f"c{n}", name="read_file", id=f"t{n}",
                       artifact={"kind": "text", "artifact": None, "original_chars": 300, "preview_chars": 300,
                                 "truncated": False, "artifact_truncated": False})
    return [schema.message_to_record(HumanMessage(_text(rng, 80), id=f"u{n}")),
            schema.message_to_record(ai), schema.message_to_record(tool)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="~100 MB instead of ~1 GB")
    parser.add_argument("--size-mb", type=int, default=None, help="transcript size to generate")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the transcript (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated transcript")
    args = parser.parse_args(argv)
    size_mb = args.size_mb or (100 if args.quick else 1024)
    folder = Path(tempfile.mkdtemp(prefix="resume-bench-", dir=args.dir))
    free = shutil.disk_usage(folder).free
    if free < size_mb * 1024 * 1024 * 2:
        print(f"not enough disk in {folder}: need ~{2 * size_mb} MB, have {free // 2**20} MB", file=sys.stderr)
        return 2
    path = folder / "bench-session.jsonl"
    try:
        gen = generate(path, size_mb * 1024 * 1024)
        resume_s, resumed = timed_resume(path, repeat=10)
        index_path(path).unlink()
        scan_s, scanned = timed_resume(path, repeat=10)
        assert scanned.messages == resumed.messages, "scan and index resumes disagree"
        full_messages, full_s = full_parse_resume(path)
        assert full_messages == len(resumed.messages), "full parse and resume disagree"
        append_never, append_never_cpu = append_throughput(folder, 20_000 if args.quick else 100_000, "never")
        append_always, _ = append_throughput(folder, 300, "always", batches=1)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)

    speedup = full_s / resume_s
    rows = [
        ("transcript size", f"{gen['bytes'] / 2**20:,.0f} MB"),
        ("records / compactions", f"{gen['records']:,} / {gen['boundaries']:,}"),
        ("written in (through TranscriptWriter)", f"{gen['seconds']:.1f} s ({gen['records'] / gen['seconds']:,.0f} rec/s)"),
        ("resumed view", f"{len(resumed.messages)} messages, {resumed.stats.bytes_read / 1024:,.0f} KB read "
                         f"from offset {resumed.stats.start_offset:,}"),
        ("resume via index (best of 10)", f"{resume_s * 1000:.1f} ms"),
        ("resume via backwards scan, index deleted (best of 10)", f"{scan_s * 1000:.1f} ms"),
        ("full parse + view", f"{full_s:.2f} s"),
        ("speedup, index / scan", f"{speedup:,.0f}x / {full_s / scan_s:,.0f}x"),
        ("append, fsync=never, best of 3 batches (wall clock / per CPU-second)",
         f"{append_never:,.0f} / {append_never_cpu:,.0f} records/s"),
        ("append, fsync=always", f"{append_always:,.0f} records/s"),
    ]
    width = max(len(k) for k, _ in rows)
    table = "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
    print(table)
    md = ["# resume_bench", "", f"`python benchmarks/resume_bench.py{' --quick' if args.quick else ''}`"
          f" — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, warm page cache, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at the end", "",
          "| measure | value |", "| --- | --- |", *(f"| {k} | {v} |" for k, v in rows), ""]
    RESULTS.write_text("\n".join(md))
    print(f"RESULT resume_speedup={speedup:.0f}")
    print(f"RESULT resume_ms={resume_s * 1000:.1f}")
    print(f"RESULT scan_resume_ms={scan_s * 1000:.1f}")
    print(f"RESULT full_parse_s={full_s:.2f}")
    print(f"RESULT append_records_per_s={append_never:.0f}")
    print(f"RESULT append_records_per_cpu_s={append_never_cpu:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
