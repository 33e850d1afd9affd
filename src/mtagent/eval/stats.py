"""Paired comparison of two policies on the same tasks: is a difference in solve rate real?

Both policies ran every task, so the evidence is in the *discordant* tasks: ``b`` solved by A
only, ``c`` by B only (tasks both solved or both failed say nothing about which is better).

* **McNemar's exact test** — under "no difference" each discordant task is a fair coin, so
  ``p = P(min(b, c) or fewer heads of b + c, two-sided)`` from the binomial distribution.
* **Newcombe's interval** (1998, method 10) for the paired difference in solve rates
  ``(b − c) / n``: Wilson score intervals of both rates combined with the correlation of the
  pairs (φ, with Newcombe's continuity correction: ``AD − BC`` less ``n/2`` when positive). It
  stays inside [−1, 1] and behaves at 0 and n, where a Wald interval does not. Positively
  correlated pairs (the usual case: easy tasks solved by both) make it narrower than the
  interval of two independent samples.

A winner is named only when both say so — McNemar's p below 0.05 *and* an interval that excludes
0; they can disagree near the edge (4 tasks to 0 of 39: the interval barely excludes 0 while
p = 0.125). Otherwise the verdict is "no clear difference": a small suite cannot show a small
effect, and the report says so instead of declaring a winner.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

Z95 = 1.959963984540054
ALPHA = 0.05


@dataclass(frozen=True, slots=True)
class Paired:
    """The 2×2 table of two policies over ``n`` tasks, with the test and the interval."""

    a: str
    b: str
    n: int
    both: int
    only_a: int
    only_b: int
    neither: int
    diff: float
    ci_low: float
    ci_high: float
    p_value: float

    @property
    def verdict(self) -> str:
        if self.n == 0:
            return "no tasks in common"
        if self.p_value < ALPHA and self.ci_low > 0:
            return f"{self.a} solves more"
        if self.p_value < ALPHA and self.ci_high < 0:
            return f"{self.b} solves more"
        return "no clear difference"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict}


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_paired(both: int, only_a: int, only_b: int, neither: int, z: float = Z95) -> tuple[float, float]:
    """Newcombe's method-10 interval for ``P(A solves) − P(B solves)`` on paired tasks."""
    n = both + only_a + only_b + neither
    if n == 0:
        return -1.0, 1.0
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = wilson(both + only_a, n, z)
    l2, u2 = wilson(both + only_b, n, z)
    rows = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    cross = both * neither - only_a * only_b
    cross = max(0.0, cross - n / 2) if cross > 0 else cross  # Newcombe's continuity correction
    phi = cross / math.sqrt(rows) if rows else 0.0
    diff = p1 - p2
    low = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, diff - low), min(1.0, diff + high)


def compare(a: str, b: str, solved_a: dict[str, bool], solved_b: dict[str, bool]) -> Paired:
    """Policies ``a`` and ``b`` over the tasks both have an outcome for."""
    common = sorted(set(solved_a) & set(solved_b))
    both = sum(1 for t in common if solved_a[t] and solved_b[t])
    only_a = sum(1 for t in common if solved_a[t] and not solved_b[t])
    only_b = sum(1 for t in common if solved_b[t] and not solved_a[t])
    neither = len(common) - both - only_a - only_b
    low, high = newcombe_paired(both, only_a, only_b, neither)
    diff = (only_a - only_b) / len(common) if common else 0.0
    return Paired(a, b, len(common), both, only_a, only_b, neither, round(diff, 4), round(low, 4), round(high, 4),
                  round(mcnemar_exact(only_a, only_b), 4))
