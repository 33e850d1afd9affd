"""Secret values are collected by name and scrubbed from text and records."""

from __future__ import annotations

from mtagent.redaction import REDACTED, Redactor, RedactingSink, collect_secrets
from mtagent.session.transcript import MemorySink


def test_collects_secret_named_variables_and_explicit_keys_but_not_short_or_ordinary_values():
    env = {"OPENAI_API_KEY": "sk-abcdefgh12345", "GITHUB_TOKEN": "ghp_0123456789", "DB_PASSWORD": "hunter2hunter2",
           "PATH": "/usr/bin:/bin", "SHORT_TOKEN": "abc", "HOME": "/root"}
    found = collect_secrets(env, ["explicit-key-999999", None])
    assert set(found) == {"sk-abcdefgh12345", "ghp_0123456789", "hunter2hunter2", "explicit-key-999999"}


def test_longer_secrets_are_replaced_first_so_no_fragment_survives():
    redactor = Redactor(collect_secrets({}, ["abcdefgh", "abcdefgh-longer-key"]))
    assert redactor("key=abcdefgh-longer-key") == f"key={REDACTED}"


def test_the_sink_redacts_every_string_in_a_record():
    sink = MemorySink()
    RedactingSink(sink, Redactor(("s3cr3t-value",))).append(
        {"content": "x s3cr3t-value y", "toolUseResult": {"lines": ["s3cr3t-value"]}, "n": 3})
    assert sink.records == [{"content": f"x {REDACTED} y", "toolUseResult": {"lines": [REDACTED]}, "n": 3}]
