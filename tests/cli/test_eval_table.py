"""`mtagent eval`'s report at 80 and 60 columns: policy names and numbers whole, what is left out said."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from mtagent.cli import eval_cmd

LONG = "microcompact-aggressive"  # a policy file's stem: what the user passes back with -p


def _policy(name: str, solved: int, cost: float, tokens: int, calls: int, wall: float) -> dict:
    return {"policy": name, "solved": solved, "tasks": 40, "cost_usd": cost, "side_cost_usd": 0.5123,
            "tokens": tokens, "side_tokens": 12_000, "calls": calls, "compactions": 17, "recalls": 3,
            "wall_s": wall, "unpriced": 0, "errors": 0}


DATA = {
    "ran": 120, "skipped": 0, "results": "results.jsonl",
    "policies": [_policy("mtagent", 31, 12.3456, 5_615_578, 1_234, 4_321.0),
                 _policy(LONG, 29, 123.4567, 9_876_543, 12_345, 54_321.0),
                 _policy("lc-summarization", 22, 7.0001, 812_345, 987, 765.0)],
    "paired": [{"a": "mtagent", "b": LONG, "n": 40, "only_a": 6, "only_b": 4, "diff": 0.05, "ci_low": -0.08,
                "ci_high": 0.18, "p_value": 0.75, "verdict": "no clear difference"},
               {"a": LONG, "b": "lc-summarization", "n": 40, "only_a": 9, "only_b": 2, "diff": 0.175,
                "ci_low": 0.03, "ci_high": 0.32, "p_value": 0.07, "verdict": f"{LONG} solves more"}],
}


@pytest.mark.parametrize("width", [80, 60])
def test_the_eval_table_keeps_policy_names_and_numbers_whole(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    out = Console(width=width, record=True, color_system=None)
    err = Console(width=width, record=True, color_system=None)
    monkeypatch.setattr(eval_cmd, "console", out)
    monkeypatch.setattr(eval_cmd, "err_console", err)
    eval_cmd.print_report(DATA)
    text = out.export_text()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in text
    for name in ("mtagent", LONG, "lc-summarization"):  # whole, on one line, in the policy table
        assert any(re.search(rf"^\s*{re.escape(name)}\s", line) for line in lines), name
    for number in ("31/40", "29/40", "22/40", "12.3456", "123.4567", "7.0001"):
        assert re.search(rf"(?<![\d.]){re.escape(number)}(?![\d.])", text), number
    words = set(text.split())
    assert {"5.6M", "9.9M", "824.3k"} <= words and {"+0.05", "6", "9"} <= words
    said = " ".join(text.split())
    for column in ("side $", "tokens", "calls", "cmp", "recall", "wall s", "95% CI", "p", "verdict"):
        header = re.compile(rf"(?<!\S){re.escape(column)}(?!\S)")
        assert any(header.search(line) for line in lines if not line.startswith("(")) or column in said, column
    if width == 60:
        assert "not shown" in said  # a dropped column is said, not hidden


def test_builtin_policy_names_show_every_column_at_80(monkeypatch: pytest.MonkeyPatch) -> None:
    out = Console(width=80, record=True, color_system=None)
    monkeypatch.setattr(eval_cmd, "console", out)
    monkeypatch.setattr(eval_cmd, "err_console", Console(width=80, record=True, color_system=None))
    typical = [_policy(name, 31, 1.2345, 815_578, 1_234, 4_321.0) for name in ("mtagent", "masking",
                                                                               "lc-summarization")]
    eval_cmd.print_report({**DATA, "policies": typical, "paired": []})
    text = out.export_text()
    assert "not shown" not in text and {"1234", "4321", "827.6k", "1.2345"} <= set(text.split())


def _printed(monkeypatch: pytest.MonkeyPatch, data: dict) -> str:
    out = Console(width=80, record=True, color_system=None)
    err = Console(width=80, record=True, color_system=None)
    monkeypatch.setattr(eval_cmd, "console", out)
    monkeypatch.setattr(eval_cmd, "err_console", err)
    eval_cmd.print_report(data)
    return " ".join((out.export_text() + err.export_text()).split())


def test_the_report_says_what_diff_ci_and_p_mean_and_when_a_verdict_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    said = _printed(monkeypatch, {**DATA, "models": ["gpt-4o-mini"]})
    assert "diff = A's solve rate minus B's" in said
    assert "95% CI: Newcombe's interval for diff" in said and "p: McNemar's exact test" in said
    assert "p < 0.05 and a 95% CI that excludes 0" in said
    assert "illustrative" not in said
    alone = _printed(monkeypatch, {**DATA, "paired": [], "models": ["gpt-4o-mini"]})
    assert "McNemar" not in alone  # nothing to explain without a paired table


def test_dollars_of_the_local_test_model_are_called_illustrative(monkeypatch: pytest.MonkeyPatch) -> None:
    said = _printed(monkeypatch, {**DATA, "models": ["context-test"]})
    assert "dollars are illustrative" in said and "context-test" in said


def test_tasks_that_ended_at_the_step_limit_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    looped = [{**DATA["policies"][0], "step_limit": ["x01-huge-file"]}, *DATA["policies"][1:]]
    said = _printed(monkeypatch, {**DATA, "policies": looped, "models": []})
    assert "1 task(s) ended at the step limit" in said and "x01-huge-file (mtagent)" in said
    assert "step limit" not in _printed(monkeypatch, {**DATA, "models": []})
