"""A writer in another process, for the two-writer and crash tests (run as a script).

``python store_child.py BACKEND HOME DSN TENANT PROJECT SESSION MODE``; MODE ``hold`` opens the
writer, prints ``ready`` and waits for stdin to close; ``crash`` appends numbered records
(some large) forever, printing each acknowledged number, until it is killed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from langchain_core.messages import HumanMessage, ToolMessage

from mtagent.session import schema


def main() -> None:
    backend, home, dsn, tenant, project, session_id, mode = sys.argv[1:8]
    if backend == "files":
        from mtagent.session.files_store import FilesStore

        store = FilesStore(tenant=tenant, home=Path(home), fsync="never")
    else:
        from mtagent.session.postgres.store import PostgresStore

        store = PostgresStore(dsn, tenant=tenant, pool_max_size=1, fsync="never")
    writer = store.open_writer(project, session_id)
    print("ready", flush=True)
    if mode == "hold":
        sys.stdin.read()
        writer.close()
        return
    start = int(sys.argv[8]) if len(sys.argv) > 8 else 0
    n = start
    while True:
        if n % 3 == 2:
            msg = ToolMessage("r" * (200_000 + n), tool_call_id=f"c{n}", name="grep", id=f"m{n}")
        else:
            msg = HumanMessage(f"record {n}", id=f"m{n}")
        writer.append(schema.message_to_record(msg))
        print(n, flush=True)
        n += 1


if __name__ == "__main__":
    main()
