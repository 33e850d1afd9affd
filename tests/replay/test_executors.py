"""The executor seam: the same replay, tuning and outcomes on one process, a local pool and Ray.

Inputs are synthetic mini-swe-agent files written here (CI has no shared trajectories). Ray
starts once for the module (``num_cpus=2``, no dashboard, loopback) and is skipped with the
reason when it is not installed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from interrupts import sigint_default_in_child, wait_for

from mtagent.config import Settings
from mtagent.errors import UsageError
from mtagent.replay.executors import RAY_INSTALL_HINT, make_executor
from mtagent.replay.executors.local import LocalExecutor
from mtagent.replay.report import overall_rows, rows
from mtagent.replay.tune import GRID, to_json, best, tune
from mtagent.replay.units import ReplayUnit, SessionRef, refs_for, replay_parallel, run_replay_unit

STRATEGIES = ["mtagent", "masking"]
WINDOW = 8_192
TIGHT = Settings.model_validate({"context": {
    "summary_reserved_tokens": 1_000, "autocompact_buffer_tokens": 1_000,
    "compression_preserve_min_tokens": 1_000, "compression_preserve_max_tokens": 3_000,
}})


def write_session(path: Path, turns: int, chars: int) -> Path:
    messages: list[dict] = [{"role": "system", "content": "You are a coding agent."},
                            {"role": "user", "content": f"Fix src/core_{turns}.py; never edit tests."}]
    for i in range(turns):
        messages.append({"role": "assistant", "content": f"step {i}", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": f"cat f{i}"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i} of f{i} " * (chars // 12)})
    messages.append({"role": "assistant", "content": "done"})
    path.write_text(json.dumps({"info": {}, "messages": messages, "trajectory_format": "mini-swe-agent-1.1",
                                "instance_id": path.stem}))
    return path


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("trajs")
    return [write_session(root / f"s{i}.traj.json", turns, chars)
            for i, (turns, chars) in enumerate([(30, 900), (12, 400), (40, 1500)])]


def _report(executor, sessions: list[Path]) -> tuple[list[dict], list]:
    done, failures = replay_parallel(sessions, STRATEGIES, WINDOW, None, TIGHT, executor)
    table = rows(done, ["raw", *STRATEGIES])
    return table + overall_rows(table, ["raw", *STRATEGIES]), failures


def test_local_pool_equals_the_serial_replay(sessions: list[Path]) -> None:
    serial = rows(replay_parallel(sessions, STRATEGIES, WINDOW, None, TIGHT, LocalExecutor(1))[0], ["raw", *STRATEGIES])
    with LocalExecutor(2) as pool:
        parallel, failures = _report(pool, sessions)
    assert failures == []
    assert parallel[: len(serial)] == serial
    assert any(r["compactions"] for r in serial)  # the window is tight enough that strategies differ


def test_ray_gives_the_same_replay_and_tuning_as_local(sessions: list[Path], ray_cluster: None) -> None:
    with LocalExecutor(2) as pool:
        local, _ = _report(pool, sessions)
        refs = [r for p in sessions for r in refs_for(p, 1, None, inline=False)]
        local_tune = to_json(scores := tune(refs, TIGHT, window=WINDOW, grid=GRID[:3], executor=pool), best(scores))
    ray_exec = make_executor("ray")
    assert ray_exec.name == "ray" and ray_exec.workers == 2
    remote, failures = _report(ray_exec, sessions)
    assert failures == [] and remote == local
    inline = [r for p in sessions for r in refs_for(p, 1, None, inline=True)]  # bytes travel with the unit
    assert inline[0].data is not None
    ray_tune = to_json(scores := tune(inline, TIGHT, window=WINDOW, grid=GRID[:3], executor=ray_exec), best(scores))
    assert ray_tune == local_tune
    serial = to_json(scores := tune(refs, TIGHT, window=WINDOW, grid=GRID[:3]), best(scores))
    assert serial == local_tune
    ray_exec.close()  # joined an existing instance: leaves it running
    import ray

    assert ray.is_initialized()


FLAKY_MARK = "MTAGENT_TEST_FLAKY_DIR"


def flaky_then_ok(unit: ReplayUnit):
    """Fails the first attempt of every unit (a marker file per unit), then replays normally."""
    marker = Path(os.environ[FLAKY_MARK]) / f"{Path(unit.session.path).name}-{unit.strategy}"
    if not marker.exists():
        marker.touch()
        raise RuntimeError("transient")
    return run_replay_unit(unit)


def always_fails(unit: ReplayUnit):
    if unit.strategy == "masking" and unit.session.path.endswith("s1.traj.json"):
        raise ValueError("this unit is broken")
    return run_replay_unit(unit)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failed_unit_is_retried_once_then_succeeds(sessions, tmp_path, monkeypatch, workers) -> None:
    monkeypatch.setenv(FLAKY_MARK, str(tmp_path))
    with LocalExecutor(workers) as pool:
        outcomes = list(pool.map(flaky_then_ok, [ReplayUnit(ref, "s", "raw", WINDOW, TIGHT)
                                                  for p in sessions[:2] for ref in refs_for(p, 1, None, inline=False)]))
    assert [o.index for o in outcomes] == [0, 1]
    assert all(o.ok and o.attempts == 2 for o in outcomes)


def test_a_unit_that_keeps_failing_is_reported_not_dropped(sessions: list[Path]) -> None:
    with LocalExecutor(2) as pool:
        done, failures = replay_parallel(sessions, STRATEGIES, WINDOW, None, TIGHT, pool, run=always_fails)
    assert [f.as_dict()["file"] for f in failures] == ["s1.traj.json"]
    assert failures[0].attempts == 2 and "this unit is broken" in str(failures[0].error)
    assert [s.label for s in done] == ["s0.traj.json", "s2.traj.json"]


def test_a_failing_unit_on_ray_is_retried_and_reported(sessions, ray_cluster: None) -> None:
    ray_exec = make_executor("ray")
    units = [ReplayUnit(SessionRef(str(p)), p.name, s, WINDOW, TIGHT) for p in sessions[:2] for s in ("raw", "masking")]
    outcomes = list(ray_exec.map(always_fails, units))
    assert [o.ok for o in outcomes] == [True, True, True, False]
    assert outcomes[3].attempts == 2 and outcomes[3].error.type == "ValueError"


def test_unknown_executor_and_missing_ray_are_one_line_usage_errors(monkeypatch) -> None:
    with pytest.raises(UsageError, match="choose from local, ray"):
        make_executor("dask")
    with pytest.raises(UsageError, match="--ray-address goes with --executor ray"):
        make_executor("local", address="auto")
    import mtagent.replay.executors.ray_exec as ray_exec

    monkeypatch.setattr(ray_exec, "ray_available", lambda: False)
    with pytest.raises(UsageError) as info:
        make_executor("ray")
    assert str(info.value) == RAY_INSTALL_HINT and "pip install 'mtagent[ray]'" in str(info.value)


def test_ctrl_c_stops_the_local_pool_workers(tmp_path: Path) -> None:
    """SIGINT to the driver: it exits 130-ish at once and no worker process outlives it."""
    script = tmp_path / "drive.py"
    script.write_text(
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from mtagent.replay.executors.local import LocalExecutor\n"
        "def slow(x):\n    Path(f'started-{x}').touch()\n    time.sleep(60)\n    return x\n"
        "if __name__ == '__main__':\n"
        "    ex = LocalExecutor(2)\n"
        "    it = ex.map(slow, range(6))\n"
        "    try:\n        next(it)\n"
        "    except KeyboardInterrupt:\n"
        "        print('PIDS', ' '.join(str(p) for p in ex.last_pids), flush=True)\n        sys.exit(130)\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path,
                            preexec_fn=sigint_default_in_child)  # Ctrl-C works even if pytest ignores SIGINT
    try:
        wait_for(lambda: len(list(tmp_path.glob("started-*"))) == 2, "both workers to start their unit")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    pids = [int(p) for p in out.split("PIDS", 1)[1].split()]
    assert len(pids) == 2

    def gone(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_for(lambda: all(gone(pid) for pid in pids), "the pool's workers to exit")


def slow_unless_first(unit: tuple[int, str]) -> int:
    """Unit 0 returns at once; the others sleep, then leave a marker (which a cancel must prevent)."""
    index, folder = unit
    if index:
        time.sleep(8)
        (Path(folder) / f"finished-{index}").touch()
    return index


def test_ctrl_c_cancels_the_running_ray_tasks(tmp_path: Path, ray_cluster: None) -> None:
    import ray

    ray_exec = make_executor("ray")

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        list(ray_exec.map(slow_unless_first, [(i, str(tmp_path)) for i in range(3)], interrupt))
    time.sleep(9)
    assert list(tmp_path.iterdir()) == []  # the slow tasks were killed, not left to run
    assert ray.available_resources().get("CPU") == 2
