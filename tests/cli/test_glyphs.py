"""ASCII fallback of the grid: automatic off UTF-8, forced by --ascii; free and buffer differ by shape."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from typer.testing import CliRunner

from mtagent.cli import glyphs
from mtagent.cli.app import app
from mtagent.cli.context_render import WindowUsage, render_context_grid


@pytest.fixture(autouse=True)
def _reset():
    yield
    glyphs.use_ascii(False)


def _grid_text() -> str:
    usage = WindowUsage(10_000, 6_000, {"messages": 3_000}, "m")
    out = Console(file=io.StringIO(), width=120, color_system=None)
    out.print(render_context_grid(usage))
    return out.file.getvalue()


def test_non_utf8_stream_gets_ascii_with_distinct_free_and_buffer_cells():
    latin = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    assert glyphs.glyphs(latin) == glyphs.ASCII and glyphs.glyphs(io.TextIOWrapper(io.BytesIO(), encoding="utf-8")) \
        == glyphs.UNICODE
    kinds = glyphs.ASCII
    assert len({kinds.used, kinds.free, kinds.buffer}) == 3 and all(c.isascii() for c in kinds.used + kinds.free + kinds.buffer)


def test_forced_ascii_grid_has_no_unicode_cells():
    glyphs.use_ascii()
    text = _grid_text()
    assert "⛁" not in text and "⛶" not in text and "⛝" not in text
    first_column = "".join(line[:19] for line in text.splitlines()[:10])
    assert {"#", ".", "x"} <= set(first_column)


def test_root_ascii_flag_reaches_subcommands_and_is_not_refused():
    result = CliRunner().invoke(app, ["--ascii", "tokens", "--help"])
    assert result.exit_code == 0, result.output
    assert glyphs.glyphs() == glyphs.ASCII
