"""Paired statistics: McNemar's exact test and Newcombe's interval (#29)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from mtagent.eval.stats import compare, mcnemar_exact, newcombe_paired, wilson


def test_mcnemar_exact_values() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 0) == 0.0625  # 2 × (1/2)^5
    assert math.isclose(mcnemar_exact(1, 9), 2 * (1 + 10) / 1024)
    assert mcnemar_exact(3, 3) == 1.0


def test_wilson_matches_the_textbook_example() -> None:
    low, high = wilson(81, 263)  # Newcombe (1998a)'s example: 0.2553 to 0.3662
    assert round(low, 4) == 0.2553 and round(high, 4) == 0.3662


@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.integers(0, 40))
def test_newcombe_interval_holds_the_difference_and_stays_in_range(a: int, b: int, c: int, d: int) -> None:
    n = a + b + c + d
    low, high = newcombe_paired(a, b, c, d)
    assert -1.0 <= low <= high <= 1.0
    if n:
        diff = (b - c) / n
        assert low - 1e-9 <= diff <= high + 1e-9


def test_a_small_difference_is_not_sold_as_a_win() -> None:
    a = {f"t{i}": True for i in range(20)}
    b = {**a, "t0": False, "t1": False}
    small = compare("A", "B", a, b)
    assert (small.only_a, small.only_b, small.n) == (2, 0, 20)
    assert small.ci_low < 0 < small.ci_high and small.verdict == "no clear difference" and small.p_value == 0.5
    big_a = {f"t{i}": True for i in range(30)}
    big_b = {f"t{i}": i < 5 for i in range(30)}
    big = compare("A", "B", big_a, big_b)
    assert big.ci_low > 0 and big.verdict == "A solves more" and big.p_value < 0.001
