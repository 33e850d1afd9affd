"""``mtagent recall`` and ``/recall`` print nothing of a secret configured after the session was
written (#33, round-two residue) — in any field of any hit (snippet, reference, path, stale reason,
the JSON of a hit, a rehydrated item), not only the snippet: every line goes out through today's
redactor."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from rich.console import Console
from typer.testing import CliRunner

from mtagent import paths
from mtagent.cli.app import app
from mtagent.cli.recall_cmd import print_recall
from mtagent.session import schema
from mtagent.session.transcript import TranscriptWriter

LATER = "corp-late-passphrase-5521"  # no key shape: unknown until configured
runner = CliRunner()


def _write(root: Path) -> None:
    sid = "s1"
    with TranscriptWriter(paths.session_transcript_path(root, sid), session_id=sid) as writer:
        for m in (HumanMessage(f"deploy with {LATER} please", id="u1"),
                  AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "read_file",
                                                      "args": {"file_path": f"notes/{LATER}.txt"}}]),
                  ToolMessage(f"deploy key file notes/{LATER}.txt holds {LATER}", tool_call_id="c1", id="t1",
                              name="read_file")):
            writer.append(schema.message_to_record(m))


def test_every_recall_output_is_redacted_with_todays_secrets(project: Path) -> None:
    _write(project)
    before = runner.invoke(app, ["recall", "deploy", "--json", "--cwd", str(project)])
    assert before.exit_code == 0 and LATER in before.output, "indexed before the secret was configured"
    paths.global_config_path().parent.mkdir(parents=True, exist_ok=True)
    paths.global_config_path().write_text(f'[security]\nredact_values = ["{LATER}"]\n')
    outputs = []
    for scope in ("all", "history"):
        for extra in ([], ["--json"]):
            result = runner.invoke(app, ["recall", f"deploy {LATER}", "--scope", scope, *extra, "--cwd", str(project)])
            assert result.exit_code == 0, result.output
            outputs.append(result.output)
    refs = [hit["ref"] for hit in json.loads(outputs[1])]
    assert refs
    for ref in refs:
        for extra in ([], ["--json"]):
            outputs.append(runner.invoke(app, ["recall", "--ref", ref, *extra, "--cwd", str(project)]).output)
    console = Console(record=True, width=200)
    print_recall(console, project, f"deploy {LATER}")
    print_recall(console, project, f"--ref {refs[0]}")
    outputs.append(console.export_text())
    for out in outputs:
        assert LATER not in out and LATER[::-1] not in out, out
