"""Redaction does less work, never less redaction (#35). A record is redacted with one look at all
its text, and a key shape is searched for only where a literal it cannot match without occurs:
whatever those shortcuts decide, the result is exactly the string-by-string, shape-by-shape rule —
a secret the joined text or a missing literal hid (a key shape after a newline, in a key, a URL
password, a PEM block without its end, each key family) would be written in clear."""

from __future__ import annotations

import random

from mtagent.redaction import _URL_PASSWORD, KEY_SHAPES, MAX_NESTING, REDACTED, Redactor, redact_shapes

SECRET = "hunter2 pw9x lives here"
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
