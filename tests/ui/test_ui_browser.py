"""The explain UI in a real browser (system headless Chromium via Playwright) over a demo session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .conftest import CHILD_ID, HOSTILE_ID, HOSTILE_PROJECT, SCRIPT, SECRET, DemoSession

from mtagent.ui.screenshots import LAYOUT_CHECK_JS


def _session_path(demo: DemoSession) -> str:
    return f"/p/{demo.project}/s/{demo.session_id}"


def test_sessions_page_lists_the_demo_session_and_searches(chromium_page: Any, ui_url: str,
                                                          demo_session: DemoSession) -> None:
    page = chromium_page
    page.goto(ui_url + "/")
    row = page.locator("tr.session-row", has_text=demo_session.session_id)
    assert row.count() == 1
    cells = row.locator("td").all_inner_texts()
    assert cells[5] == str(sum(1 for r in demo_session.records() if r["type"] == "context_plan"))  # calls
    assert "ended" in cells[8] and "scripted:demo-policy" in cells[9]
    # the subagent of the hostile session is shown under its parent
    child = page.locator("tr.session-row.depth-1", has_text=CHILD_ID)
    assert child.count() == 1 and "subagent" in child.inner_text()
    children = sorted((demo_session.transcript.parent / demo_session.session_id / "subagents").glob("*.jsonl"))
    for path in children:  # the demo's own subagent, when the demo starts one
        assert page.locator("tr.session-row.depth-1", has_text=path.stem).count() == 1
        page.goto(ui_url + f"/p/{demo_session.project}/s/{demo_session.session_id}~{path.stem}")
        assert page.locator("h1").inner_text().endswith(path.stem)
        page.goto(ui_url + "/")
    page.fill("#session-filter", "scripted")  # the live filter hides what does not match
    assert page.locator("tr.session-row", has_text=HOSTILE_ID).is_hidden()
    page.goto(ui_url + "/?q=no-such-session-anywhere")
    assert page.locator("tr.session-row").count() == 0


def test_timeline_draws_one_point_per_call_with_compactions_marked(chromium_page: Any, ui_url: str,
                                                                  demo_session: DemoSession) -> None:
    records = demo_session.records()
    plans = [r for r in records if r["type"] == "context_plan"]
    boundaries = sum(1 for r in records if r["type"] == "compact_boundary")
    assert boundaries >= 1 and len(plans) > 10
    page = chromium_page
    page.goto(ui_url + _session_path(demo_session))
    assert page.locator("svg.timeline a.call").count() == len(plans)
    assert page.locator("svg.timeline circle.point").count() == len(plans)
    assert page.locator("svg.timeline .marker.compaction").count() == boundaries
    assert page.locator("svg.timeline .marker.microcompact").count() >= 1
    assert page.locator("svg.timeline .window-label").text_content() == f"window {plans[-1]['token_limit']:,}"
    assert page.locator("svg.timeline .threshold-label").text_content() == f"threshold {plans[-1]['threshold']:,}"
    # a point's height follows its tokens: the tallest point is the call with the most tokens
    ys = [float(page.locator("svg.timeline circle.point").nth(i).get_attribute("cy")) for i in range(len(plans))]
    tallest = max(range(len(plans)), key=lambda i: plans[i]["tokens"])
    assert ys[tallest] <= min(ys) + 0.1  # cy is drawn to 0.1 px: calls a few tokens apart may share the top
    assert all(ys[i] > ys[tallest] for i in range(len(plans)) if plans[i]["tokens"] < plans[tallest]["tokens"] * 0.98)
    page.locator("svg.timeline a.call").nth(2).click()
    page.wait_for_url("**/call/3")
    assert page.locator("h1").inner_text() == "Model call 3"


def test_call_page_shows_the_plan_with_dropped_items_and_the_view(chromium_page: Any, ui_url: str,
                                                                 demo_session: DemoSession) -> None:
    plans = [r for r in demo_session.records() if r["type"] == "context_plan"]
    number = next(i for i, p in enumerate(plans, 1) if p["dropped"])
    page = chromium_page
    page.goto(ui_url + _session_path(demo_session) + f"/call/{number}")
    dropped = page.locator("table.dropped tbody tr")
    assert dropped.count() == len(plans[number - 1]["dropped"])
    assert plans[number - 1]["dropped"][0]["reason"] in dropped.first.inner_text()
    assert page.locator("p.ok").count() == 1  # the rebuilt view is the one the plan selected
    assert page.locator("section.view .msg.user").first.inner_text().count("conversation_history_summary") >= 1
    assert page.locator("section.diff").inner_text().count("Left") == 1
    assert page.locator("table.selected tbody tr").count() == page.locator("section.view .msg:not(.system)").count()


def test_artifact_link_from_a_call_opens_the_full_text(chromium_page: Any, ui_url: str,
                                                      demo_session: DemoSession) -> None:
    records = demo_session.records()
    artifact = next(r for r in records if r["type"] == "tool_result_artifact")
    full = (demo_session.transcript.parent / "artifacts" / demo_session.session_id / artifact["path"]).read_text()
    plans = [i for i, r in enumerate(records) if r["type"] == "context_plan"]
    after = next(n for n, i in enumerate(plans, 1) if i > records.index(artifact))
    page = chromium_page
    page.goto(ui_url + _session_path(demo_session) + f"/call/{after}")
    page.locator("a.artifact").first.click()
    page.wait_for_url("**/artifact?path=*")
    lines = full.splitlines()
    assert f"of {len(lines):,}" in page.locator("p.headline").inner_text()
    shown = page.locator("table.lines tr").count()
    while page.locator("a[rel=next]").count():  # long artifacts page by line ranges
        page.locator("a[rel=next]").click()
        page.wait_for_load_state()
        shown += page.locator("table.lines tr").count()
    assert shown == len(lines)
    assert page.locator("table.lines tr").last.inner_text().split("\t", 1)[-1].strip() == lines[-1].strip()
    page.locator("a", has_text="raw text").click()
    assert page.locator("body").inner_text().strip() == full.strip()


def test_html_and_script_in_a_transcript_render_as_text_and_secrets_stay_redacted(
        chromium_page: Any, ui_url: str) -> None:
    page = chromium_page
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(ui_url + "/")  # the hostile session's folder (with markup) is listed
    assert page.locator("main script, main img, main b").count() == 0 and page.evaluate("window.__pwned") is None
    assert SCRIPT in page.locator("section.project", has_text=HOSTILE_ID).inner_text()
    base = f"{ui_url}/p/{HOSTILE_PROJECT}/s/{HOSTILE_ID}"
    for path in ("", "/call/1", "/artifacts", "/artifacts?q=script", "/artifact?path=tool-results/call_x.txt",
                 "/memory"):
        page.goto(base + path)
        assert page.evaluate("window.__pwned") is None, path
        assert page.locator("main script, main img, main b").count() == 0, path
        assert SECRET not in page.content(), path
    page.goto(base + "/call/1")
    view = page.locator("section.view").inner_text()
    assert SCRIPT in view and "[redacted]" in view
    assert SCRIPT in page.locator("table.dropped").inner_text()
    assert SCRIPT in page.locator("table.conflicts").inner_text()
    page.goto(base + "/raw?path=tool-results/call_x.txt")
    assert SCRIPT in page.locator("body").inner_text() and SECRET not in page.content()
    assert errors == []


def _layout(page: Any) -> dict:
    return page.evaluate(LAYOUT_CHECK_JS)


def test_layout_no_overlapping_text_and_every_series_drawn(chromium_page: Any, ui_url: str,
                                                          demo_session: DemoSession) -> None:
    page = chromium_page
    base = _session_path(demo_session)
    plans = [r for r in demo_session.records() if r["type"] == "context_plan"]
    ref = f"session:{demo_session.project}:{demo_session.session_id}"
    for path in ("/", base, f"{base}/call/{len(plans)}", f"{base}/artifacts?q=def", f"{base}/memory",
                 f"/replay?source={ref}&strategy=mtagent&strategy=masking&window={plans[-1]['token_limit']}"):
        page.goto(ui_url + path)
        found = _layout(page)
        assert found["overlaps"] == [], path
        assert found["missing"] == [], path
        legend = page.locator("ul.legend li[data-series]").count()
        assert legend > 0 or path in ("/",) or "/call/" in path or "artifacts" in path or "memory" in path
    # the timeline legend names exactly the buckets that hold tokens in some call
    page.goto(ui_url + base)
    used = {b for p in plans for b, v in p["buckets"].items() if v}
    assert {li.get_attribute("data-series") for li in page.locator("#timeline-legend li[data-series]").all()} == used


def test_layout_check_catches_overlapping_text_and_a_missing_series(chromium_page: Any) -> None:
    page = chromium_page
    page.set_content('<p style="position:absolute;top:10px;left:10px">first words</p>'
                     '<p style="position:absolute;top:12px;left:14px">second words</p>'
                     '<ul class="legend"><li data-series="ghost">ghost</li></ul>')
    found = _layout(page)
    assert found["overlaps"] and found["missing"] == ["ghost"]


def test_screenshot_command_writes_every_page(tmp_path: Path, demo_session: DemoSession) -> None:
    from browser import skip_reason

    import pytest

    if reason := skip_reason():
        pytest.skip(reason)
    from mtagent.ui.screenshots import take

    problems = take(tmp_path / "shots", demo_session.home, tmp_path / "ui.png")
    names = sorted(p.name for p in (tmp_path / "shots").iterdir())
    assert names == ["artifact.png", "artifacts.png", "call.png", "memory.png", "replay.png", "sessions.png",
                     "timeline.png"]
    assert (tmp_path / "ui.png").stat().st_size > 10_000
    assert problems == []


def test_the_replay_form_says_at_once_that_it_runs(chromium_page: Any, ui_url: str,
                                                   demo_session: DemoSession) -> None:
    """A replay answers only when done (seconds); the page says right away what runs and for how long."""
    page = chromium_page
    page.goto(ui_url + "/replay")
    assert page.locator("#replay-status").is_hidden()
    page.select_option("select[name=source]", index=1)
    # a synthetic submit event runs the page's handler without sending the form
    text = page.evaluate("() => { document.querySelector('form.replay').dispatchEvent("
                         "new Event('submit', {cancelable: true}));"
                         " return document.getElementById('replay-status').textContent; }")
    assert text.startswith("replaying ") and " … 0 s" in text and "strateg" in text
    assert page.locator("#replay-status").is_visible()
    assert page.locator("form.replay button[type=submit]").is_disabled()
