"""A long text redacted a piece at a time is redacted exactly as the whole is (#33): the artifact of a
50 MB tool result is written this way, so a cut through a secret would store half of it unredacted."""

from __future__ import annotations

import base64
import random

from mtagent.redaction import REDACTED, Redactor

SECRET = "hunter2 pw9x lives here"  # a configured value with spaces in it: only whole is it found
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow IBAAKCAQEA\n" + "QUJD ZGVm\n" * 6 + "-----END RSA PRIVATE KEY-----"
TOKENS = [
    "word", "other", " ", "  ", "\n", "\t", "\r\n", ",", "@", ":", "//", "-", "_",
    SECRET, SECRET[::-1], base64.b64encode(SECRET.encode()).decode(), SECRET.encode().hex(),
    "sk-proj-" + "Zq7" * 8, "ghp_" + "a1B2" * 9, "AKIA" + "ABCDEFGH12345678", "xoxb-1234567890-abc",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
    "https://user:pa55word@example.com/x", "postgres://u:p w@h", "password='a b c d'", "PWD=s3cr3t;",
    PEM, "-----BEGIN PRIVATE KEY-----\nno end in sight ", "xsk-proj-" + "A" * 20,
]


def test_pieces_join_to_the_whole_texts_redaction_wherever_the_cuts_fall() -> None:
    redactor = Redactor((SECRET,))
    rng = random.Random(33)
    for _ in range(300):
        text = "".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 60)))
        whole = redactor.text(text)
        for size in (1, 2, 3, 5, 8, 13, 40, 100, 1000):
            pieces = list(redactor.pieces(text, size))
            assert "".join(pieces) == whole, (text, size)
            cuts = redactor.cuts(text, size)
            assert cuts[0] == 0 and cuts[-1] == len(text) and cuts == sorted(set(cuts))
    assert SECRET not in whole and REDACTED in whole


def test_pieces_are_small_where_the_text_allows_and_a_secret_is_never_cut() -> None:
    redactor = Redactor((SECRET,))
    line = "0123456789abcdef" * 4 + "\n"
    text = line * 2000 + "token sk-proj-" + "Zq7" * 16 + " " + SECRET + "\n" + line * 2000
    pieces = list(redactor.pieces(text, 4096))
    assert len(pieces) > 50 and max(map(len, pieces)) <= 4096 + len(line) + len(SECRET) + 80
    assert "Zq7Zq7" not in "".join(pieces) and "hunter2" not in "".join(pieces)
    one_line = "x" * 10_000  # no whitespace: no place to cut, one piece
    assert list(redactor.pieces(one_line, 100)) == [one_line]
