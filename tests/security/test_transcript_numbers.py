"""A transcript line whose token counts are not counts is one clear error, never a traceback (#27).

``"input_tokens": Infinity`` (or NaN, a negative number, a string) in an assistant message's usage
made ``sessions show --view`` print a traceback and ``run --resume`` a 9-line pydantic error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_script import script
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent.session import schema
from mtagent import paths
from mtagent.session.files_store import FilesStore

runner = CliRunner()


def _session_with_usage(project: Path, tmp_path: Path, usage_text: str) -> tuple[str, str]:
    model = script(tmp_path, ["first answer"])
    ran = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "hello"])
    assert ran.exit_code == 0, ran.output
    path = FilesStore().session_infos(paths.project_hash(project))[0].path
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        rec = json.loads(line)
        if rec.get("role") == "assistant" and rec.get("usage"):
            rec["usage"]["input_tokens"] = "__N__"
            lines[i] = json.dumps(rec).replace('"__N__"', usage_text)
            break
    else:
        pytest.fail("no assistant usage to poison")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path.stem, model


def _one_clean_line(result, what: str) -> None:
    assert result.exit_code != 0, (what, result.output)
    assert "Traceback" not in result.output and not isinstance(result.exception, (ValueError, TypeError)), what
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "validation error" not in result.output, (what, result.output)
    assert "For further information visit" not in result.output, what


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "-5", "1.5", "1e999", '"many"'])
def test_a_usage_count_that_is_not_a_count_is_one_line(project, tmp_path, number):
    sid, model = _session_with_usage(project, tmp_path, number)
    _one_clean_line(runner.invoke(app, ["sessions", "show", sid, "--view", "--cwd", str(project)]), "show --view")
    _one_clean_line(runner.invoke(app, ["run", "--resume", sid, "--cwd", str(project), "--model",
                                        model, "again"]), "run --resume")
    skipped = runner.invoke(app, ["sessions", "show", sid, "--skip-corrupt", "--cwd", str(project)])
    assert skipped.exit_code == 0 and "Traceback" not in skipped.output, skipped.output


def test_real_usage_shapes_stay_valid():
    record = schema.message_to_record(schema.record_to_message({
        "type": "transcript_message", "role": "assistant", "id": "a", "content": "x",
        "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12,
                  "input_token_details": {"cache_read": 4, "audio": 0}, "output_token_details": {}}}))
    assert schema.parse_record(record)["usage"]["input_tokens"] == 10
    odd = schema.record_to_message({"type": "transcript_message", "role": "assistant", "id": "b", "content": "",
                                    "usage": {"prompt_tokens": 3}})  # another writer's shape: left out
    assert odd.usage_metadata is None
