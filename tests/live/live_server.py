"""Start and stop a real ``llama-server`` on a free loopback port, and run the ``mtagent`` CLI
against it: the helpers of the live tests (tests/live)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from mtagent.testing.pg_server import free_port

START_SECONDS = 180.0  # loading a 98 MB model takes a second or two; a loaded CI machine, far more
CLI_SECONDS = 240.0


def locate(binary: Path, model: Path) -> str | None:
    """What is missing for the live tests, or None when both files are there."""
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        return f"no llama-server binary at {binary}"
    if not model.is_file():
        return f"no SmolLM2 GGUF model at {model}"
    return None


class LlamaServer:
    """A ``llama-server`` child process: one slot, two threads, loopback only, logs to a file."""

    def __init__(self, binary: Path, model: Path, *, log: Path, window: int, jinja: bool) -> None:
        self.port = free_port()
        self.log = log
        self.window = window
        self.args = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                     "-c", str(window), "-np", "1", "-t", "2", "-tb", "2", "-n", "1024",
                     "--jinja" if jinja else "--no-jinja"]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Self:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}:\n{self.log_tail()}")
            if self.healthy():
                return self
            time.sleep(0.25)
        self.__exit__(None, None, None)
        raise RuntimeError(f"llama-server not healthy after {START_SECONDS:.0f} s:\n{self.log_tail()}")

    def __exit__(self, *exc: object) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)

    def healthy(self) -> bool:
        """``/health`` answers 200 once the model is loaded (503 while loading)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as reply:
                return reply.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def chat(self, body: dict[str, Any], timeout: float = 120.0) -> tuple[int, dict[str, Any]]:
        """A raw, unstreamed chat completion, past mtagent: what the server itself answers."""
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")


@dataclass(frozen=True, slots=True)
class CliRun:
    code: int
    stdout: str
    stderr: str
    seconds: float

    def json(self) -> dict[str, Any]:
        return json.loads(self.stdout)


def run_cli(server: LlamaServer, task: str, *, cwd: Path, settings: dict[str, str] | None = None,
            extra: tuple[str, ...] = ()) -> CliRun:
    """``mtagent run --json`` against the server, as a user would start it (MTAGENT_HOME from the
    suite's fixture, settings as ``MTAGENT_<SECTION>__<KEY>`` variables). ``--approval deny``: a
    135M model's shell commands are not run; the denial still goes back as the call's result."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTAGENT_") or k == "MTAGENT_HOME"}
    # The server's 2,048-token window is below the default summary reserve + buffer: without a
    # threshold auto compaction fires at 45 % of it, under the system prompt + tool schemas alone,
    # and every call first tries (and fails) to compact. A user sets this, as docs/servers.md says.
    env["MTAGENT_CONTEXT__AUTO_COMPACT_THRESHOLD"] = "0.9"
    env.update(settings or {})
    env.pop("OPENAI_API_KEY", None)
    args = [sys.executable, "-m", "mtagent", "run", "--json", "--model", "llamacpp:smollm2",
            "--base-url", server.base_url, "--cwd", str(cwd), "--approval", "deny", *extra, task]
    start = time.monotonic()
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=CLI_SECONDS, check=False,
                          stdin=subprocess.DEVNULL)
    return CliRun(done.returncode, done.stdout, done.stderr, time.monotonic() - start)


def transcript_records(home: Path) -> list[dict[str, Any]]:
    """Every record of every session transcript under MTAGENT_HOME (one per CLI run here)."""
    records: list[dict[str, Any]] = []
    for path in sorted(home.glob("history/*/*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "type" in record:  # other JSONL files hold other things
                records.append(record)
    return records
