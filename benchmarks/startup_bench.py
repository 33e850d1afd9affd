"""Startup benchmark: how long `mtagent --version`, `--help` and `python -m mtagent --version` take.

Each command runs N times in a fresh interpreter; the table shows the median wall time and the
time above a bare ``python -c pass`` (the interpreter's own start, which no change of ours can
remove). The issue's aim: ``--version`` and ``--help`` within 0.3 s.

    python benchmarks/startup_bench.py           # 15 runs each
    python benchmarks/startup_bench.py --quick   # 5 runs each (a few seconds)

Ends with ``RESULT name=value`` lines (seconds, median).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "mtagent --version": [sys.executable, "-m", "mtagent", "--version"],
    "mtagent --help": [sys.executable, "-m", "mtagent", "--help"],
    "mtagent run --help": [sys.executable, "-m", "mtagent", "run", "--help"],
}
SCRIPT = shutil.which("mtagent")
if SCRIPT:
    COMMANDS["mtagent --version (script)"] = [SCRIPT, "--version"]


def timed(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 runs per command instead of 15")
    args = parser.parse_args()
    runs = 5 if args.quick else 15
    medians = {name: timed(cmd, runs) for name, cmd in COMMANDS.items()}
    bare = medians["python -c pass"]
    print(f"{'command':32} {'median s':>9} {'above bare python s':>20}")
    for name, value in medians.items():
        print(f"{name:32} {value:9.3f} {value - bare:20.3f}")
    print(f"RESULT startup_bare_python_s={bare:.3f}")
    print(f"RESULT startup_version_s={medians['mtagent --version']:.3f}")
    print(f"RESULT startup_help_s={medians['mtagent --help']:.3f}")
    print(f"RESULT startup_version_over_bare_s={medians['mtagent --version'] - bare:.3f}")
    print(f"RESULT startup_help_over_bare_s={medians['mtagent --help'] - bare:.3f}")


if __name__ == "__main__":
    main()
