"""detect_conflicts' word index finds exactly the pairs a brute-force comparison finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mtagent.context.static.authority import Authority, AuthorityItem, _same_subject, detect_conflicts, directives

VERBS = ["never", "always", "don't", "use", "avoid", "must"]
WORDS = ["edit", "tests", "redis", "cache", "main", "push", "docs", "kernel", "files"]
LINE = st.builds(lambda v, ws: f"{v} {' '.join(ws)}", st.sampled_from(VERBS),
                 st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
ITEM = st.builds(lambda a, lines: (a, "\n".join(lines)),
                 st.sampled_from([Authority.PROJECT_RULES, Authority.LONG_TERM_MEMORY, Authority.SUMMARY]),
                 st.lists(LINE, min_size=1, max_size=3))


def _brute(items: list[AuthorityItem]) -> set[tuple[str, str, tuple[str, ...]]]:
    found: dict[tuple[str, str], set[str]] = {}
    for a in items:
        for b in items:
            if a.authority <= b.authority:
                continue
            for ad in directives(a.text):
                for bd in directives(b.text):
                    if ad.polarity != bd.polarity and (shared := _same_subject(ad.subject, bd.subject)):
                        found.setdefault((" ".join(sorted(shared)), a.id), set()).add(b.id)
    return {(k, w, tuple(sorted(ls))) for (k, w), ls in found.items()}


@settings(max_examples=80, deadline=None)
@given(st.lists(ITEM, min_size=2, max_size=6))
def test_indexed_detection_equals_brute_force(raw: list[tuple[Authority, str]]) -> None:
    items = [AuthorityItem(f"i{n}", a, text) for n, (a, text) in enumerate(raw)]
    got = {(c.key, c.winner, c.losers) for c in detect_conflicts(items)}
    assert got == _brute(items)
