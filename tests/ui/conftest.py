"""A demo session (made once by the real ``mtagent demo`` machinery), a hostile session, and the UI
serving them on a free loopback port."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the UI needs the [ui] extra: pip install -e '.[dev]'")

from browser import chromium_page  # noqa: E402,F401  (the shared headless-Chromium fixture)

from mtagent.session import schema  # noqa: E402
from mtagent.ui.app import UiOptions  # noqa: E402
from mtagent.ui.records import Redactor  # noqa: E402
from mtagent.ui.server import BackgroundServer  # noqa: E402

HOSTILE_PROJECT = "hostile-0123456789ab"
HOSTILE_ID = "20260102T030000000-abcdef"
CHILD_ID = "20260102T030001000-child1"
SECRET = "sk-test-SECRET-value-0123456789"
SCRIPT = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold?</b>'


@dataclass(slots=True, frozen=True)
class DemoSession:
    home: Path
    project: str
    session_id: str
    transcript: Path

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.transcript.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="session")
def demo_session(tmp_path_factory: pytest.TempPathFactory) -> DemoSession:
    """One ``mtagent demo`` run (the scripted policy over mtagent's own source, 16K window)."""
    from mtagent.agent.demo import run_demo
    from mtagent.cli.session_options import demo_root

    home = tmp_path_factory.mktemp("ui-home")
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith("MTAGENT_"):
                mp.delenv(name)
        mp.setenv("MTAGENT_HOME", str(home))
        result = run_demo(demo_root())
        write_hostile_session(home)
    transcript = Path(result.transcript_path)
    return DemoSession(home, transcript.parent.name, transcript.stem, transcript)


def _lines(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(schema.dumps_record(schema.parse_record(r)) for r in records))


def write_hostile_session(home: Path) -> Path:
    """A session whose tool output, ids and artifact carry HTML, script and a secret; with one subagent."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    folder = home / "history" / HOSTILE_PROJECT
    path = folder / f"{HOSTILE_ID}.jsonl"
    call = {"id": "call_x", "name": "shell", "args": {"command": f"echo '{SCRIPT}'"}}
    preview = (f'<persisted-output tool="shell" path="tool-results/call_x.txt" original_chars="9999">\n'
               f"{SCRIPT} key={SECRET}\n</persisted-output>")
    records = [
        schema.session_start_record(HOSTILE_ID, f"/tmp/<b>{SCRIPT}</b>", "fake:model", "0.1.0"),
        schema.message_to_record(HumanMessage(content=f"print {SCRIPT}", id="u-1")),
        schema.message_to_record(AIMessage(content="", id="a-1", tool_calls=[call],
                                           usage_metadata={"input_tokens": 1000, "output_tokens": 20,
                                                           "total_tokens": 1020})),
        schema.tool_result_artifact_record("call_x", "shell", "tool-results/call_x.txt", original_chars=9999,
                                           stored_bytes=9999, truncated=False, sha256="0" * 64),
        schema.message_to_record(ToolMessage(content=preview, tool_call_id="call_x", name="shell", id="t-1")),
        schema.context_plan_record({"turn": 1, "tokens": 1100, "token_limit": 8192, "threshold": 6000,
                                    "buckets": {"system": 500, "messages": 100, "tool_results": 500},
                                    "selected": ["system:1", "u-1..t-1 (3)"], "compressed": [],
                                    "dropped": [{"id": "u-0", "reason": f"dropped {SCRIPT}"}],
                                    "conflicts": [{"key": "style", "winner": "user", "losers": ["project"],
                                                   "reason": SCRIPT}]}),
    ]
    _lines(path, records)
    artifact = folder / "artifacts" / HOSTILE_ID / "tool-results" / "call_x.txt"
    artifact.parent.mkdir(parents=True, exist_ok=True)
    artifact.write_text(f"line one\n{SCRIPT}\nkey={SECRET}\nlast line\n", encoding="utf-8")
    child = folder / HOSTILE_ID / "subagents" / f"{CHILD_ID}.jsonl"
    _lines(child, [schema.session_start_record(CHILD_ID, "/tmp/child", "fake:model", "0.1.0"),
                   schema.message_to_record(HumanMessage(content="explore", id="cu-1"))])
    return path


def ui_options(demo: DemoSession, **extra: object) -> UiOptions:
    return UiOptions(cwd=Path(demo.records()[0]["cwd"]), home=demo.home, redactor=Redactor((SECRET,)),
                     **extra)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def ui_url(demo_session: DemoSession) -> Iterator[str]:
    with BackgroundServer(ui_options(demo_session)) as url:
        yield url
