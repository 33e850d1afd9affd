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


def test_newcombe_matches_the_published_paired_example() -> None:
    """Fagerland, Lydersen & Laake (2017), ch. 8 (the paired 2×2 table 59, 6 / 16, 80): Newcombe's
    square-and-add interval −0.1186 to −0.0046 for −0.0621. It uses the pairs' correlation with
    Newcombe's continuity correction; a wrong sign or a missing correction moves both ends."""
    low, high = newcombe_paired(59, 6, 16, 80)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)


def test_newcombe_uses_the_pair_correlation_with_the_right_sign() -> None:
    """Positively correlated pairs (both solve, both fail) carry less noise than independent samples:
    the interval is *narrower* than the unpaired one (φ = 0); negatively correlated ones, wider. The
    sign flipped (``+ 2φ…``) turns both around."""
    from mtagent.eval.stats import Z95

    def unpaired(s1: int, s2: int, n: int) -> float:
        p1, p2 = s1 / n, s2 / n
        l1, u1 = wilson(s1, n)
        l2, u2 = wilson(s2, n)
        return math.hypot(p1 - l1, u2 - p2) + math.hypot(u1 - p1, p2 - l2)

    assert Z95 > 1.95
    low, high = newcombe_paired(20, 6, 0, 14)  # phi > 0: most tasks agree
    assert high - low < unpaired(26, 20, 40) - 0.02
    low, high = newcombe_paired(0, 20, 14, 6)  # phi < 0: where one solves, the other fails
    assert high - low > unpaired(20, 14, 40) + 0.02


def test_a_verdict_needs_the_exact_test_and_the_interval_to_agree() -> None:
    """4 tasks to 0 of 39: Newcombe's interval excludes 0 (barely), McNemar's p is 0.125 — no verdict."""
    a = {f"t{i}": i < 14 for i in range(39)}
    b = {f"t{i}": i < 10 for i in range(39)}
    four = compare("A", "B", a, b)
    assert (four.only_a, four.only_b, four.p_value) == (4, 0, 0.125)
    assert four.verdict == "no clear difference"
    six = compare("A", "B", {f"t{i}": i < 16 for i in range(39)}, b)  # 6 to 0: p = 0.031, interval above 0
    assert six.p_value < 0.05 and six.ci_low > 0 and six.verdict == "A solves more"
    assert compare("A", "B", b, {f"t{i}": i < 16 for i in range(39)}).verdict == "B solves more"
