"""Many concurrent `mtagent run`s of two tenants in one project, on one real PostgreSQL (issue 25).

Each run is its own process with a scripted model that reads a file and saves a project fact, so a
run opens a session, pulls and pushes the tenant's long-term memory, writes tool-result records
and closes — the paths that once raced: the project's memory folder was shared and renamed per
tenant (``OSError: [Errno 39] Directory not empty: …/memory -> …/memory.<tenant>``, 6 of 40 runs).

Checked: every run exits 0, each tenant lists exactly its own sessions, every session holds all
of its records, and each tenant's memory holds only its own facts. ``MTAGENT_LOAD_RUNS`` sets the
number of runs (default 16 so the suite stays quick; 64 is the acceptance figure).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("psycopg", reason="the postgres extra is not installed: pip install -e '.[dev]'")

from mtagent import paths  # noqa: E402
from mtagent.config import load_settings  # noqa: E402
from mtagent.session import schema  # noqa: E402
from mtagent.session.local import local_home  # noqa: E402
from mtagent.session.postgres.store import PostgresStore  # noqa: E402

RUNS = int(os.environ.get("MTAGENT_LOAD_RUNS", "16"))
PARALLEL = int(os.environ.get("MTAGENT_LOAD_PARALLEL", str(RUNS)))


def _script(folder: Path, who: str) -> str:
    steps = [
        {"tool": "read_file", "args": {"path": "notes.txt"}},
        {"tool": "save_memory", "args": {"fact": f"fact of {who}", "namespace": "project"}},
        f"done for {who}",
    ]
    path = folder / f"script-{who}.json"
    path.write_text(json.dumps(steps), encoding="utf-8")
    return f"scripted:{path}"


def _has_fact(text: str, who: str) -> bool:
    return re.search(rf"fact of {re.escape(who)}(?![\w-])", text) is not None


def _run(project: Path, env: dict[str, str], model: str, task: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mtagent", "run", "--cwd", str(project), "--model", model,
         "--approval", "allow", "--json", task],
        env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def fleet_dsn() -> Iterator[str]:
    """A server of its own: each run holds a pool connection and a checkpointer connection (and one
    more while it migrates), more than the shared test server's 100 allow at 64 runs."""
    from mtagent.testing.pg_server import create_database, find_binaries, temporary_server

    if find_binaries() is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found; install Debian's postgresql (.ci/run does)")
    with temporary_server(max_connections=40 + 4 * RUNS) as server:
        yield create_database(server, "mtagent_fleet")


@pytest.mark.timeout(120 + 20 * RUNS)  # each run is a process; 2 cores run 16 in about a minute
def test_concurrent_runs_of_two_tenants_all_succeed_and_stay_apart(project: Path, tmp_path: Path, fleet_dsn: str,
                                                                   tenant: str) -> None:
    pg_dsn = fleet_dsn
    (project / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    home = paths.mtagent_home()  # the test's own (conftest): the runs share this machine's home
    tenants = [tenant, f"{tenant}-b"]
    base = {**os.environ, "MTAGENT_HOME": str(home), "MTAGENT_STORAGE__BACKEND": "postgres",
            "MTAGENT_STORAGE__DSN": pg_dsn, "MTAGENT_STORAGE__POOL_MAX_SIZE": "1"}
    base.pop("MTAGENT_STORAGE__TENANT", None)
    models = {who: _script(tmp_path, who) for who in tenants}
    jobs = [(tenants[i % 2], f"task {i}") for i in range(RUNS)]

    def one(job: tuple[str, str]) -> tuple[str, subprocess.CompletedProcess[str]]:
        who, task = job
        return who, _run(project, {**base, "MTAGENT_STORAGE__TENANT": who}, models[who], task)

    began = time.perf_counter()
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(one, jobs))
    elapsed = time.perf_counter() - began
    failed = [(who, r.returncode, r.stderr[-2000:]) for who, r in results if r.returncode != 0]
    print(f"RESULT load_runs={RUNS} load_failures={len(failed)} load_seconds={elapsed:.1f}")
    assert not failed, failed[:3]

    started: dict[str, set[str]] = {who: set() for who in tenants}
    for who, result in results:
        out = json.loads(result.stdout)
        assert out["answer"] == f"done for {who}"
        started[who].add(out["session_id"])
    key = paths.project_hash(project)
    for who in tenants:
        assert len(started[who]) == sum(1 for w, _ in jobs if w == who)
        with PostgresStore(pg_dsn, tenant=who, pool_max_size=1) as store:
            assert set(store.sessions(key)) == started[who]  # exactly its own sessions
            for sid in started[who]:
                records = [e.record for e in store.read_entries(key, sid)]
                kinds = [r["type"] for r in records]
                assert kinds[0] == schema.SESSION_START and kinds.count("transcript_message") >= 6, kinds
                answers = {r.get("content") for r in records if r["type"] == "transcript_message"}
                assert f"done for {who}" in answers and not any(f"done for {w}" in answers for w in tenants
                                                                 if w != who)
            stored = store.read_memory(key, "MEMORY.md") or ""
            assert [w for w in tenants if _has_fact(stored, w)] == [who]
        settings = load_settings(project, overrides={"storage": {"backend": "postgres", "dsn": pg_dsn,
                                                                 "tenant": who}})
        local = paths.project_memory_dir(project, local_home(settings)) / "MEMORY.md"
        assert [w for w in tenants if _has_fact(local.read_text(), w)] == [who]
    shared = paths.project_memory_dir(project)
    assert not shared.parent.exists() or not any(p.name.startswith("memory.") for p in shared.parent.iterdir())


def test_workers_setting_up_checkpoints_at_once_take_turns(fresh_db: str) -> None:
    """LangGraph's checkpoint setup on a fresh database, by many workers at the same moment (a fleet
    starting): each gets a connection, none fails on the setup's ledger (1 of 64 runs did, unlocked)."""
    import threading

    from mtagent.agent import storage

    settings = load_settings(Path("."), overrides={"storage": {"backend": "postgres", "dsn": fresh_db,
                                                               "tenant": "setup-race"}})
    store = PostgresStore(fresh_db, tenant="setup-race", pool_max_size=2)
    barrier, errors, conns = threading.Barrier(12), [], []

    def worker() -> None:
        try:
            barrier.wait()
            conns.append(storage._postgres_checkpoints(store, settings.storage.connect_timeout_seconds))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    storage._CHECKPOINT_SCHEMA.discard(fresh_db)
    threads = [threading.Thread(target=worker) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for conn in conns:
        conn.close()
    store.close()
    assert errors == [] and len(conns) == 12
