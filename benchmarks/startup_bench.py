"""Startup benchmark: how long the first seconds of each command take, against bare Python.

Every command runs N times in a fresh interpreter, round-robin (a load spike hits all of them);
the table shows the median wall time and the time above the two floors no change of ours can
remove, measured in the same run:

* ``python -c pass`` — the interpreter's own start;
* ``python -c "import langchain_openai"`` — the provider SDK a real model call needs.

Measured (issue #28's targets, on an idle machine):

* ``--version``, ``--help``, ``run --help``, ``config path``, ``sessions list`` and one shell
  completion call (``mtagent sessions sh<TAB>``) — completion ≤ bare + 0.3 s;
* the REPL: time until the prompt is on screen, in a pseudo-terminal — ≤ bare + 0.6 s — and until
  its session is open (the agent stack imported in the background meanwhile);
* ``mtagent run``: time from start to the first chat request at a local OpenAI-compatible stub
  (tests/stub_openai.py) — ≤ bare provider import + 0.6 s — and to its exit.

    python benchmarks/startup_bench.py           # 9 runs each
    python benchmarks/startup_bench.py --quick   # 3 runs each

The machine's load average is printed with the figures: on a busy machine every figure grows,
the floors too. Ends with ``RESULT name=value`` lines (seconds, median).

Bytecode: an installed copy has its ``.pyc`` files (pip compiles them), so every command runs with
a private ``PYTHONPYCACHEPREFIX`` (``PYTHONDONTWRITEBYTECODE`` removed) and one untimed round first;
otherwise a checkout run under ``PYTHONDONTWRITEBYTECODE=1`` would compile mtagent's 400 modules on
every start (about 0.15 s here) while the bare import reads site-packages' bytecode.

``--cold`` adds ``run`` and the bare provider import with the page cache dropped before each run
(root only: ``/proc/sys/vm/drop_caches``) — the first start after a reboot, when reading files ahead
(:mod:`mtagent.cli.read_ahead`) can overlap the imports.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the stub server

PY = sys.executable
MODEL = "openai:gpt-4o-mini"
TARGETS = {"repl_prompt_over_bare_s": 0.6, "run_first_request_over_provider_s": 0.6,
           "completion_over_bare_s": 0.3, "resume_prompt_over_provider": 0.5}


BYTECODE: dict[str, str] = {}  # PYTHONPYCACHEPREFIX, set by main()


def _env(home: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTAGENT_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(BYTECODE)
    if home is not None:
        env.update({"MTAGENT_HOME": str(home), "OPENAI_API_KEY": "sk-bench-not-a-key", "NO_COLOR": "1"})
    env.update(extra)
    return env


def drop_page_cache() -> None:
    """Empty the kernel's page cache (root only): the next start reads every file from the disk."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n", encoding="ascii")


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env, cwd=cwd)
    return time.perf_counter() - start


def repl_times(project: Path, home: Path, base_url: str, *extra: str) -> tuple[float, float]:
    """(seconds to the prompt, seconds to the open session) of the interactive mtagent in a pty."""
    import pexpect

    env = _env(home, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
    start = time.perf_counter()
    child = pexpect.spawn(PY, ["-m", "mtagent", "--cwd", str(project), "--model", MODEL, "--base-url", base_url,
                               *extra], env=env, encoding="utf-8", timeout=120, dimensions=(40, 120))
    try:
        child.expect("›")
        prompt = time.perf_counter() - start
        child.expect(r"session \d{8}T")
        ready = time.perf_counter() - start
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    return prompt, ready


def _mcp_home(home: Path) -> Path:
    """A home whose config has five MCP servers: four real ones (mcp-server-time, from PyPI) and one
    that never answers (``sleep``), as a hung or first-run ``npx -y`` server would."""
    home.mkdir()
    time_server = Path(PY).with_name("mcp-server-time")
    lines = ["[mcp.servers.hung]", 'command = "sleep"', 'args = ["3600"]']
    for i in range(4):
        lines += [f"[mcp.servers.time{i}]", f"command = {json.dumps(str(time_server))}"]
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return home


def run_times(project: Path, home: Path, stub: object, cold: bool = False) -> tuple[float, float]:
    """(seconds to the first chat request at the stub, seconds to exit) of one ``mtagent run``."""
    first: list[float] = []
    lock = threading.Lock()

    def respond(body: dict) -> dict:
        with lock:
            first.append(time.perf_counter())
        return {"content": "done"}

    stub.responder = respond  # type: ignore[attr-defined]
    cmd = [PY, "-m", "mtagent", "run", "--cwd", str(project), "--model", MODEL, "--base-url",
           stub.base_url, "--approval", "deny", "say done"]  # type: ignore[attr-defined]
    if cold:
        drop_page_cache()
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=_env(home))
    end = time.perf_counter()
    return min(first) - start, end - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs per command instead of 9")
    parser.add_argument("--cold", action="store_true", help="also measure run and the provider import with "
                        "the page cache dropped before each run (root only)")
    args = parser.parse_args()
    runs = 3 if args.quick else 9
    if args.cold and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        parser.error("--cold drops the page cache: run it as root on Linux")
    from stub_openai import StubOpenAI

    with tempfile.TemporaryDirectory() as tmp, StubOpenAI(responder=lambda body: {"content": "done"}) as stub:
        BYTECODE["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        (project / "notes.txt").write_text("alpha\n", encoding="utf-8")
        env = _env(home)
        mcp_home = _mcp_home(Path(tmp) / "mcp-home")
        mt = [PY, "-m", "mtagent"]
        completion = _env(home, _MTAGENT_COMPLETE="complete_bash", COMP_WORDS="mtagent sessions sh", COMP_CWORD="2")
        as_script = [PY, "-c", "import sys; sys.argv = ['mtagent']; from mtagent.cli.entry import main; main()"]
        check = subprocess.run(as_script, env=completion, capture_output=True, text=True, check=True)
        assert check.stdout.split() == ["show"], check.stdout[:200]  # the shell's completion protocol, answered
        one: dict[str, Callable[[], object]] = {
            "python -c pass": lambda: timed([PY, "-c", "pass"], _env()),
            "python -c 'import langchain_openai'": lambda: timed([PY, "-c", "import langchain_openai"], _env()),
            "mtagent --version": lambda: timed([*mt, "--version"], env),
            "mtagent --help": lambda: timed([*mt, "--help"], env),
            "mtagent run --help": lambda: timed([*mt, "run", "--help"], env),
            "mtagent config path": lambda: timed([*mt, "config", "path", "--cwd", str(project)], env),
            "completion (sessions sh<TAB>)": lambda: timed(as_script, completion),
            "run": lambda: run_times(project, home, stub),
            "mtagent sessions list": lambda: timed([*mt, "sessions", "list", "--cwd", str(project)], env),
            "REPL": lambda: repl_times(project, home, stub.base_url),
            "REPL --resume latest": lambda: repl_times(project, home, stub.base_url, "--resume", "latest"),
            "REPL, 5 MCP servers (1 hung)": lambda: repl_times(project, mcp_home, stub.base_url),
        }
        if args.cold:
            one["cold: python -c 'import langchain_openai'"] = lambda: _cold(lambda: timed(
                [PY, "-c", "import langchain_openai"], _env()))
            one["cold run"] = lambda: run_times(project, home, stub, cold=True)
        for measure in one.values():  # untimed: compiles the bytecode an installed copy ships with
            measure()
        samples: dict[str, list[object]] = {name: [] for name in one}
        for _ in range(runs):  # round-robin: a load spike hits every command, not one of them
            for name, measure in one.items():
                samples[name].append(measure())
        m: dict[str, float] = {}
        for name, values in samples.items():
            if name in ("run", "cold run"):
                m[f"{name}: first request at the stub"] = statistics.median(v[0] for v in values)  # type: ignore[index]
                m[f"{name}: to exit"] = statistics.median(v[1] for v in values)  # type: ignore[index]
            elif name.startswith("REPL"):
                m[f"{name}: prompt on screen"] = statistics.median(v[0] for v in values)  # type: ignore[index]
                m[f"{name}: session open"] = statistics.median(v[1] for v in values)  # type: ignore[index]
            else:
                m[name] = statistics.median(values)  # type: ignore[arg-type]

    bare, provider = m["python -c pass"], m["python -c 'import langchain_openai'"]
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs; {runs} runs each")
    print(f"{'command':38} {'median s':>9} {'- bare s':>9} {'- provider s':>13}")
    for name, value in m.items():
        print(f"{name:38} {value:9.3f} {value - bare:9.3f} {value - provider:13.3f}")
    over = {"repl_prompt_over_bare_s": m["REPL: prompt on screen"] - bare,
            "resume_prompt_over_provider": m["REPL --resume latest: prompt on screen"] / provider,
            "run_first_request_over_provider_s": m["run: first request at the stub"] - provider,
            "completion_over_bare_s": m["completion (sessions sh<TAB>)"] - bare}
    for name, value in over.items():
        verdict = "met" if value <= TARGETS[name] else "missed"
        unit = "" if name.endswith("_provider") else " s"  # a ratio, not seconds
        print(f"{name}: {value:.3f}{unit} (target ≤ {TARGETS[name]}{unit} on an idle machine: {verdict})")
    print(f"RESULT startup_load_average_1min={load[0]:.2f}")
    print(f"RESULT startup_bare_python_s={bare:.3f}")
    print(f"RESULT startup_bare_provider_import_s={provider:.3f}")
    print(f"RESULT startup_version_s={m['mtagent --version']:.3f}")
    print(f"RESULT startup_help_s={m['mtagent --help']:.3f}")
    print(f"RESULT startup_version_over_bare_s={m['mtagent --version'] - bare:.3f}")
    print(f"RESULT startup_help_over_bare_s={m['mtagent --help'] - bare:.3f}")
    print(f"RESULT startup_config_path_s={m['mtagent config path']:.3f}")
    print(f"RESULT startup_sessions_list_s={m['mtagent sessions list']:.3f}")
    print(f"RESULT startup_completion_s={m['completion (sessions sh<TAB>)']:.3f}")
    print(f"RESULT startup_run_first_request_s={m['run: first request at the stub']:.3f}")
    print(f"RESULT startup_run_exit_s={m['run: to exit']:.3f}")
    print(f"RESULT startup_repl_prompt_s={m['REPL: prompt on screen']:.3f}")
    print(f"RESULT startup_repl_session_open_s={m['REPL: session open']:.3f}")
    print(f"RESULT startup_resume_prompt_s={m['REPL --resume latest: prompt on screen']:.3f}")
    print(f"RESULT startup_resume_prompt_over_provider={m['REPL --resume latest: prompt on screen'] / provider:.3f}")
    print(f"RESULT startup_resume_session_open_s={m['REPL --resume latest: session open']:.3f}")
    print(f"RESULT startup_mcp5_hung1_session_line_s={m['REPL, 5 MCP servers (1 hung): session open']:.3f}")
    for name, value in over.items():
        print(f"RESULT startup_{name}={value:.3f}")
    if args.cold:
        cold = m["cold run: first request at the stub"] - m["cold: python -c 'import langchain_openai'"]
        print(f"RESULT startup_cold_run_first_request_s={m['cold run: first request at the stub']:.3f}")
        print(f"RESULT startup_cold_run_first_request_over_provider_s={cold:.3f}")


def _cold(measure: Callable[[], float]) -> float:
    drop_page_cache()
    return measure()


if __name__ == "__main__":
    main()
