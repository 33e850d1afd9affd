"""Redaction (redaction.py): secret values are collected by name and scrubbed from text and records — and
sharp checks of the exact boundaries of what counts as a secret, what is collected from the environment
and settings, and how deep records are scrubbed (mutation testing, #22)."""

from __future__ import annotations

import json

import pytest

from mtagent.config import Settings
from mtagent.redaction import (
    MAX_NESTING,
    MIN_SECRET_CHARS,
    REDACTED,
    RedactingSink,
    Redactor,
    _entropy,
    _option_secrets,
    collect_secrets,
    looks_secret,
    passwords_in,
    redact_shapes,
    settings_secrets,
)
from mtagent.session.transcript import MemorySink

RANDOM20 = "aB3dE5fG7hJ9kL1mN2pQ"  # 20 distinct characters, three classes


def test_entropy_is_exact_in_bits_per_character() -> None:
    assert _entropy("aabb") == pytest.approx(1.0)
    assert _entropy("abcd") == pytest.approx(2.0)
    assert _entropy("aaab") == pytest.approx(0.8112781)


def test_a_random_value_is_a_secret_from_exactly_twenty_characters() -> None:
    assert looks_secret(RANDOM20)
    assert looks_secret(f"  {RANDOM20}  ")  # surrounding whitespace is stripped
    assert looks_secret(RANDOM20[:19]) is False  # a bool, not just falsy
    assert not looks_secret(RANDOM20[:12])  # random enough, but short


def test_what_a_random_looking_value_must_not_contain() -> None:
    assert not looks_secret(RANDOM20[:10] + " " + RANDOM20[10:])
    assert looks_secret(RANDOM20[:10] + "/" + RANDOM20[10:]) is False  # a path
    assert looks_secret("/" + RANDOM20 + "/")  # slashes only at the ends
    assert looks_secret("https://" + RANDOM20)  # a URL is not a path


def test_a_random_looking_value_needs_two_character_classes_and_entropy() -> None:
    assert not looks_secret("abcdefghijklmnopqrstu")  # one class
    assert looks_secret("abcdefghij0123456789")  # two classes
    assert not looks_secret("aaaaaaaaaaBBBBBBBBBB")  # two classes, one bit per character
    assert looks_secret("sk-" + "a" * 16)  # a known shape needs neither


def test_passwords_in_connection_strings() -> None:
    assert passwords_in("postgresql://user:pw1234@host/db") == ["pw1234"]
    assert passwords_in("host=h password=bare-secret user=u") == ["bare-secret"]
    assert passwords_in("host=h password='with space' user=u") == ["with space"]
    assert passwords_in("password='' host=h") == []
    assert passwords_in("no secrets here") == []


def test_option_secrets_follow_secret_names_down_nested_options() -> None:
    options = {"headers": {"Authorization": "Bearer tok123456789", "Accept": "json"},
               "api_key": {"value": "nested-under-a-secret-name"},
               "api_keys": ["first-key", "second-key"], "temperature": "0.2"}
    assert list(_option_secrets(options)) == ["Bearer tok123456789", "tok123456789", "nested-under-a-secret-name",
                                              "first-key", "second-key"]
    assert list(_option_secrets({"token": "plain-token"})) == ["plain-token"]


def _nested_dict(levels: int) -> dict:
    value: dict = {"api_key": "deep-secret"}
    for _ in range(levels):
        value = {"wrap": value}
    return value


def _nested_list(levels: int) -> list:
    value: list = [{"api_key": "deep-secret"}]
    for _ in range(levels):
        value = [value]
    return value


def test_option_secrets_look_twenty_levels_deep_and_no_further() -> None:
    assert list(_option_secrets(_nested_dict(19))) == ["deep-secret"]
    assert list(_option_secrets(_nested_dict(20))) == []
    assert list(_option_secrets(_nested_list(18))) == ["deep-secret"]
    assert list(_option_secrets(_nested_list(19))) == []
    # lists under a secret name: the 19th list is looked into, the 20th is not
    assert list(_option_secrets({"api_key": _wrap_list("list-secret", 19)})) == ["list-secret"]
    assert list(_option_secrets({"api_key": _wrap_list("list-secret", 20)})) == []


def test_option_secrets_skip_numbers_and_other_values() -> None:
    assert list(_option_secrets({"timeout": 30, "retries": [1, 2], "api_key": "k-12345678", "token": None})) == \
        ["k-12345678"]


def _wrap_list(value: object, levels: int) -> object:
    for _ in range(levels):
        value = [value]
    return value


def test_settings_secrets_in_order() -> None:
    settings = Settings.model_validate({
        "security": {"redact_values": ["configured-value-1"], "redact_env": ["MY_VAR", "EMPTY_VAR", "UNSET_VAR"]},
        "storage": {"dsn": "postgresql://u:dsn-pass-1@h/db"},
        "agent": {"base_url": "https://u:url-pass-1@llm.example/v1", "model_options": {"gpt-x": {"api_key": "option-key-1"}}},
    })
    env = {"MY_VAR": "my-env-value", "EMPTY_VAR": ""}
    assert settings_secrets(settings, env) == ["configured-value-1", "my-env-value", "dsn-pass-1", "url-pass-1",
                                               "option-key-1"]
    found = collect_secrets(env, settings=settings)
    assert {"configured-value-1", "my-env-value", "dsn-pass-1", "url-pass-1", "option-key-1"} <= set(found)


def test_collect_secrets_boundaries() -> None:
    assert MIN_SECRET_CHARS == 8
    env = {"MY_TOKEN": "abcdefgh", "SHORT_TOKEN": "abcdefg", "PLAIN": "ordinary words",
           "RANDOM_THING": RANDOM20, "SERVICE": "http://me:pw12@h", "OTHER": "http://me:pw1@h"}
    found = collect_secrets(env)
    assert set(found) == {"abcdefgh", RANDOM20, "pw12"}
    extra = collect_secrets({}, ["postgres://u:abcd@h", "x://u:abc@host.example", "short", "", None])
    assert set(extra) == {"postgres://u:abcd@h", "abcd", "x://u:abc@host.example"}
    assert [len(s) for s in collect_secrets({}, ["abcdefgh", "abcdefghij", "abcdefghi"])] == [10, 9, 8]


def test_redact_shapes_and_url_passwords() -> None:
    text = "key sk-ant-" + "a" * 20 + " and ghp_" + "b" * 36 + " url https://u:hunter22@h/x"
    assert redact_shapes(text) == f"key {REDACTED} and {REDACTED} url https://u:{REDACTED}@h/x"
    assert redact_shapes("plain text with user:pass@host but no scheme") == \
        "plain text with user:pass@host but no scheme"


def test_the_redactor_replaces_known_values_then_shapes() -> None:
    redactor = Redactor(("my-secret-value",))
    assert redactor.text("a my-secret-value b my-secret-value") == f"a {REDACTED} b {REDACTED}"
    assert redactor("nothing here") == "nothing here"
    assert redactor.deep({"my-secret-value": ("x", "my-secret-value"), "n": 3, "none": None}) == \
        {REDACTED: ["x", REDACTED], "n": 3, "none": None}


def test_deep_redacts_to_the_nesting_limit_and_fails_closed_beyond_it() -> None:
    redactor = Redactor(("my-secret-value",))
    assert MAX_NESTING == 200
    for levels, wrap in ((MAX_NESTING, list), (MAX_NESTING, dict)):
        value: object = "my-secret-value"
        expected: object = REDACTED
        for _ in range(levels):
            value, expected = ([value], [expected]) if wrap is list else ({"k": value}, {"k": expected})
        assert redactor.deep(value) == expected  # every level looked into
    deeper: object = "my-secret-value"
    for _ in range(MAX_NESTING + 2):
        deeper = {"k": deeper}
    out = redactor.deep(deeper)
    assert "my-secret-value" not in json.dumps(out)
    for _ in range(MAX_NESTING + 1):
        out = out["k"]  # type: ignore[index]
    assert out == REDACTED  # the level past the limit is replaced whole


def test_lists_past_the_nesting_limit_are_replaced_whole_too() -> None:
    redactor = Redactor(("my-secret-value",))
    value: object = "my-secret-value"
    for _ in range(MAX_NESTING + 2):
        value = [value]
    out = redactor.deep(value)
    for _ in range(MAX_NESTING + 1):
        out = out[0]  # type: ignore[index]
    assert out == REDACTED


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
