"""Chart axes read in round numbers (0, 50k, 100k …), not 35.4k / 141.6k / 1.97M."""

from __future__ import annotations

import re

import pytest

from mtagent.ui.charts import Series, fmt_tick, line_chart, nice_max


@pytest.mark.parametrize("peak", [7, 950, 37_000, 131_111, 141_600, 1_824_000, 1_970_000, 9_999_999])
def test_the_top_of_the_axis_is_round_and_holds_the_peak(peak):
    top = nice_max(peak)
    assert top >= peak and top < peak * 2.1
    ticks = [fmt_tick(top * i / 4) for i in range(5)]
    for tick in ticks:
        assert re.fullmatch(r"\d+(\.\d)?[kM]?|\d+\.\d\d?[kM]", tick), ticks
        assert not re.search(r"\.0[kM]?$|\.\d0[kM]?$", tick), ticks  # no trailing zeros


def test_a_line_chart_draws_round_ticks():
    svg = line_chart([Series("m", [10_000.0, 141_600.0, 90_000.0], [])], title="t")
    ticks = re.findall(r'class="tick"[^>]*text-anchor="end">([^<]+)<', svg)
    assert ticks == ["0", "40k", "80k", "120k", "160k"], ticks
