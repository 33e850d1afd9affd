"""Spec M0: the auto-compact threshold and the budget buckets."""

import pytest

from mtagent.config import Settings, auto_compact_threshold, effective_context_limit
from mtagent.context.budget import Bucket, BudgetBuckets


@pytest.mark.parametrize(("window", "threshold"), [(131072, 98072), (65536, 32536)], ids=["128k", "64k"])
def test_threshold_for_a_window(window: int, threshold: int):
    assert auto_compact_threshold(window) == threshold


def test_effective_limit_reserves_summary_output():
    assert effective_context_limit(131072) == 111072
    assert effective_context_limit(131072, reserved_summary_tokens=0) == 131072


def test_effective_limit_rejects_nonpositive_window():
    with pytest.raises(ValueError, match="positive"):
        effective_context_limit(0)


def test_settings_threshold_defaults_to_spec_formula():
    assert Settings().auto_compact_threshold_tokens() == 98072
    assert Settings().auto_compact_threshold_tokens(65536) == 32536


@pytest.mark.parametrize(("setting", "window", "expected"), [(50000, None, 50000), (50000, 65536, 50000),
                                                             (0.8, 100_000, 80_000), (0.8, 131072, int(131072 * 0.8))])
def test_user_threshold_in_tokens_or_as_fraction_is_honoured_exactly(setting: float, window: int | None, expected: int):
    s = Settings.model_validate({"context": {"auto_compact_threshold": setting}})
    assert (s.auto_compact_threshold_tokens() if window is None else s.auto_compact_threshold_tokens(window)) == expected


def test_buckets_sum_and_report_free_and_headroom():
    b = BudgetBuckets(token_limit=1000, threshold=700)
    b.add(Bucket.SYSTEM, 100)
    b.add(Bucket.MESSAGES, 300)
    b.add(Bucket.MESSAGES, 50)
    assert b.used == 450
    assert b.free == 550
    assert b.left_before_compact == 250
    assert b.as_dict()["messages"] == 350


def test_small_windows_keep_a_usable_threshold_instead_of_compacting_every_call():
    assert auto_compact_threshold(16384) == int(16384 * 0.45)
    assert auto_compact_threshold(32768) == int(32768 * 0.45)
    assert auto_compact_threshold(200_000) == 167_000


def test_threshold_floor_can_be_turned_off():
    assert auto_compact_threshold(16384, min_fraction=0.0) == 1
    s = Settings.model_validate({"context": {"min_threshold_fraction": 0.0}})
    assert s.auto_compact_threshold_tokens(16384) == 1
