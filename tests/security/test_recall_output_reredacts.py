"""``mtagent recall`` and ``/recall`` print nothing of a secret configured after the session was
written (#33, round-two residue) — in any field of any hit (snippet, reference, path, stale reason,
the JSON of a hit, a rehydrated item), not only the snippet: every line goes out through today's
redactor."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from transcripts import write_exchange
from typer.testing import CliRunner

from mtagent import paths
from mtagent.cli.app import app
from mtagent.cli.recall_cmd import print_recall

LATER = "corp-late-passphrase-5521"  # no key shape: unknown until configured
runner = CliRunner()


def _write(root: Path) -> None:
    write_exchange(root, f"deploy with {LATER} please", "read_file", {"file_path": f"notes/{LATER}.txt"},
                   f"deploy key file notes/{LATER}.txt holds {LATER}")


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
