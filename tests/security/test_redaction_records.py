"""Redaction does less work, never less redaction (#35). A record is redacted with one look at all
its text, and a key shape is searched for only where a literal it cannot match without occurs:
whatever those shortcuts decide, the result is exactly the string-by-string, shape-by-shape rule —
a secret the joined text or a missing literal hid (a key shape after a newline, in a key, a URL
password, a PEM block without its end, each key family) would be written in clear. A long text redacted
a piece at a time is redacted exactly as the whole is (#33): the artifact of a 50 MB tool result is
written this way, so a cut through a secret would store half of it unredacted."""

from __future__ import annotations

import base64
import random

from mtagent.redaction import _URL_PASSWORD, KEY_SHAPES, MAX_NESTING, REDACTED, Redactor, redact_shapes

SECRET = "hunter2 pw9x lives here"  # a configured value with spaces in it: only whole is it found
TEXTS = ["plain", "", "\n", "x\nsk-proj-" + "Zq7" * 8, "ghp_" + "a1B2" * 9, "idAKIA" + "ABCDEFGH12345678",
         "AKIA" + "ABCDEFGH12345678", "https://user:pa55word@example.com/x", "postgres://u:p@h", SECRET,
         SECRET[:9], SECRET[9:], "-----BEGIN RSA PRIVATE KEY-----\nMIIE no end", "\x00", "tail\x00ghp_" + "b" * 31,
         "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fw", "a:b@c", "://"]
SCALARS = [0, 1.5, None, True, *TEXTS]
SHAPES = ["sk-ant-" + "a" * 16, "sk-svcacct-" + "b" * 16, "sk-admin-" + "c" * 17, "xsk-" + "d" * 16, "sk_" + "e" * 16,
          *(f"gh{c}_" + "F1" * 15 for c in "pousr"), "github_pat_" + "g_" * 15, "gh_" + "h" * 30,
          "AKIA" + "ABCDEFGH12345678", "ASIA" + "ABCDEFGH12345678", "AKIAshort", *(f"xox{c}-" + "1" * 10 for c in "abposr"),
          "AIza" + "i" * 30, "eyJ" + "j" * 8 + ".eyJ" + "k" * 8 + "." + "l" * 8, "rk_live_" + "m" * 16, "sk_test_" + "n" * 16,
          "-----BEGIN EC PRIVATE KEY-----\nabc", "-----END RSA PRIVATE KEY-----", "ftp://a:b@c", ":", "@", "/", " ", "\n", "x"]
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow IBAAKCAQEA\n" + "QUJD ZGVm\n" * 6 + "-----END RSA PRIVATE KEY-----"
TOKENS = [
    "word", "other", " ", "  ", "\n", "\t", "\r\n", ",", "@", ":", "//", "-", "_",
    SECRET, SECRET[::-1], base64.b64encode(SECRET.encode()).decode(), SECRET.encode().hex(),
    "sk-proj-" + "Zq7" * 8, "ghp_" + "a1B2" * 9, "AKIA" + "ABCDEFGH12345678", "xoxb-1234567890-abc",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
    "https://user:pa55word@example.com/x", "postgres://u:p w@h", "password='a b c d'", "PWD=s3cr3t;",
    PEM, "-----BEGIN PRIVATE KEY-----\nno end in sight ", "xsk-proj-" + "A" * 20,
]


def _value(rng: random.Random, depth: int) -> object:
    if depth > 3 or rng.random() < 0.4:
        return rng.choice(SCALARS)
    kind = rng.choice((dict, list, tuple))
    items = [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind is dict:
        return {rng.choice([*TEXTS, 7]) if rng.random() < 0.3 else f"k{i}": v for i, v in enumerate(items)}
    return kind(items)


def test_a_record_redacts_exactly_as_each_of_its_strings_does() -> None:
    rng = random.Random(35)
    for secrets in ((), (SECRET,)):
        redactor = Redactor(secrets)
        for _ in range(2_000):
            record = {"type": "transcript_message", "body": _value(rng, 0)}
            assert redactor.deep(record) == redactor._deep(record, 0), record  # _deep: string by string


def test_a_clean_record_is_a_copy_and_the_nesting_limit_still_holds() -> None:
    redactor = Redactor((SECRET,))
    record = {"content": [{"text": "hello"}], "args": ("a", 1)}
    out = redactor.deep(record)
    assert out == {"content": [{"text": "hello"}], "args": ["a", 1]}
    out["content"][0]["text"] = "changed"
    assert record["content"][0]["text"] == "hello"
    deep: object = 5
    for _ in range(MAX_NESTING + 2):
        deep = [deep]
    assert redactor.deep(deep) == redactor._deep(deep, 0)


def _every_shape(value: str) -> str:
    """The shapes' rule without the literal look-up: every pattern searched for in every text."""
    for _, pattern in KEY_SHAPES:
        if pattern.search(value):
            value = pattern.sub(REDACTED, value)
    if "://" in value:
        value = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}{REDACTED}{m.group('at')}", value)
    return value


def test_looking_for_a_shapes_literal_first_never_misses_the_shape() -> None:
    rng = random.Random(3535)
    for shape in SHAPES:
        assert redact_shapes(shape) == _every_shape(shape), shape
    for _ in range(3_000):
        text = "".join(rng.choice(SHAPES) for _ in range(rng.randint(1, 8)))
        assert redact_shapes(text) == _every_shape(text), text


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
