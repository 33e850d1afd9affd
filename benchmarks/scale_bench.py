"""Replay throughput (sessions/s) on 1 worker, the local process pool and Ray, and how well it scales.

Every configuration replays the same shared trajectories through ``raw`` and the chosen
strategies via :func:`mtagent.replay.units.replay_parallel` — the code path of ``mtagent replay
--executor …`` — and checks that each produces the same rows as one worker. Ray's start-up is
timed apart from its replay (a long-lived cluster pays it once). Scaling efficiency is
speed-up ÷ workers. Point it at a multi-node cluster with ``--ray-address auto`` (on a node of
the cluster) or ``ray://HEAD:10001``; the nodes need mtagent installed and, for files above the
inline limit, the trajectories at the same path.

    python benchmarks/scale_bench.py --quick
    python benchmarks/scale_bench.py --ray-address ray://head:10001 --workers 64
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mtagent.config import Settings
from mtagent.replay.executors import make_executor
from mtagent.replay.executors.local import default_workers
from mtagent.replay.report import rows
from mtagent.replay.units import replay_parallel

ROOT = Path(__file__).resolve().parents[2] / "shared" / "trajectories"
QUICK_DIRS = ("mini-swe-agent",)
FULL_DIRS = ("mini-swe-agent", "swe-agent", "openhands", "claude-code")
WINDOW = 65_536


def pick_files(root: Path, quick: bool) -> list[Path]:
    files = [p for d in (QUICK_DIRS if quick else FULL_DIRS) for p in sorted((root / d).glob("*")) if p.is_file()
             and not p.name.endswith(".md")]
    files.sort(key=lambda p: p.stat().st_size)
    return files[:6] if quick else files


def warm(_: int) -> bool:
    """Import the replay stack in a worker (a long-lived cluster's workers already have)."""
    import mtagent.replay.units  # noqa: F401

    return True


def timed(executor, files: list[Path], strategies: list[str], settings: Settings) -> tuple[float, int, list]:
    started = time.perf_counter()
    sessions, failures = replay_parallel(files, strategies, WINDOW, None, settings, executor)
    elapsed = time.perf_counter() - started
    if failures:
        raise SystemExit(f"{len(failures)} unit(s) failed, e.g. {failures[0].as_dict()}")
    return elapsed, len(sessions), rows(sessions, ["raw", *strategies])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="six small sessions, one strategy (< 1 minute)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the shared trajectories folder")
    parser.add_argument("--workers", type=int, default=default_workers(), help="pool size / local Ray num_cpus")
    parser.add_argument("--ray-address", default=None, help="auto or ray://HEAD:10001 (default: a local instance)")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray row")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        print(f"trajectories not found at {args.root}; pass --root", file=sys.stderr)
        return 2
    files = pick_files(args.root, args.quick)
    strategies = ["mtagent"] if args.quick else ["mtagent", "masking", "lc-summarization"]
    settings = Settings()
    table: list[tuple[str, int, float, int]] = []
    one = make_executor("local", workers=1)
    t1, n, reference = timed(one, files, strategies, settings)
    table.append(("1 worker", 1, t1, n))
    with make_executor("local", workers=args.workers) as pool:  # type: ignore[attr-defined]
        list(pool.map(warm, range(pool.workers * 4)))  # as for Ray: workers import the stack before the clock
        tp, _, got = timed(pool, files, strategies, settings)
    assert got == reference, "the local pool's rows differ from one worker's"
    table.append(("local pool", pool.workers, tp, n))
    ray_start = None
    if not args.no_ray:
        started = time.perf_counter()
        ray_exec = make_executor("ray", workers=args.workers, address=args.ray_address)
        list(ray_exec.map(warm, range(ray_exec.workers)))
        ray_start = time.perf_counter() - started
        try:
            tr, _, got = timed(ray_exec, files, strategies, settings)
        finally:
            ray_exec.close()
        assert got == reference, "Ray's rows differ from one worker's"
        table.append(("ray", ray_exec.workers, tr, n))
    print(f"{n} sessions from {len(files)} files × raw + {', '.join(strategies)} at a {WINDOW:,}-token window")
    print(f"{'executor':<12} {'workers':>7} {'seconds':>8} {'sessions/s':>10} {'speed-up':>8} {'efficiency':>10}")
    for name, workers, seconds, count in table:
        speed = t1 / seconds
        print(f"{name:<12} {workers:>7} {seconds:8.2f} {count / seconds:10.2f} {speed:8.2f} {speed / workers:10.2f}")
    if ray_start is not None:
        print(f"(Ray start-up and worker warm-up {ray_start:.1f} s, not in its row)")
    print(f"RESULT sessions_per_s_1_worker={n / t1:.3f}")
    print(f"RESULT sessions_per_s_local_pool={n / tp:.3f}")
    print(f"RESULT scaling_efficiency_local_pool={t1 / tp / table[1][1]:.3f}")
    if ray_start is not None:
        print(f"RESULT sessions_per_s_ray={n / tr:.3f}")
        print(f"RESULT scaling_efficiency_ray={t1 / tr / table[2][1]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
