"""Secret scrubbing: every documented pattern, no false positives on ordinary code, valid JSON
lines stay valid, and scrubbing is idempotent (property tests)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.importers.scrub import PATTERNS, scrub_bytes, scrub_session, scrub_text
from cwcore.model import Message, ParsedSession, SourceEvent
from tests.helpers import examples

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1b2c3\nqwerty==\n"
    "-----END RSA PRIVATE KEY-----"
)

SECRETS: dict[str, str] = {
    "private-key": PEM,
    "anthropic-key": "sk-ant-api03-" + "Ab1_" * 10,
    "openai-key": "sk-proj-" + "a1B2c3D4e5" * 3,
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "A1b2C3d4E5f6" * 3,
    "slack-token": "xoxb-123456789012-abcdefghij",
    "google-api-key": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "bearer-token": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
    "url-password": "postgres://admin:hunter2pass@db.example.com:5432/app",
    "secret-assignment": "DB_PASSWORD='correct-horse-battery'",
}
KEEP = {  # the part of each example that is not secret and must survive
    "bearer-token": "Authorization: Bearer ",
    "url-password": "postgres://admin:",
    "secret-assignment": "DB_PASSWORD='",
}


def test_patterns_are_the_documented_ones() -> None:
    assert list(PATTERNS) == list(SECRETS)


@pytest.mark.parametrize("name", list(SECRETS))
def test_each_pattern_redacts_its_secret(name: str) -> None:
    text = f"before {SECRETS[name]} after"
    out = scrub_text(text)
    assert f"[REDACTED:{name}]" in out
    assert out.startswith("before ") and out.endswith(" after")
    assert KEEP.get(name, "before") in out
    assert scrub_text(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "const apiKey = await getApiKeyForModel(model);",
        "fun validate(token: String): Boolean",
        "let pwd = process.cwd();",
        "export OPENAI_API_KEY=sk-...",
        "max_output_tokens=2000 and token_count: 17",
        "see https://example.com/path and git@github.com:org/repo.git",
        "sk-learn is a package; task-1234567890abcdefghij0 is an id",
        "the secret: it is fine to talk about secrets",
        "[REDACTED:openai-key] stays as it is",
    ],
)
def test_ordinary_code_and_prose_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


def test_json_lines_keep_their_shape() -> None:
    row = {
        "type": "user",
        "text": "token=abcd1234efgh5678 and " + SECRETS["anthropic-key"],
        "password": "hunter2 has spaces",
        "nested": {"api_key": "k-123456", "list": [SECRETS["aws-access-key"], 1, None]},
        "pem": PEM,
    }
    for raw in (json.dumps(row).encode(), json.dumps(row, ensure_ascii=False, indent=2).encode()):
        out = scrub_bytes(raw)
        value = json.loads(out)
        assert value["text"] == "token=[REDACTED:secret-assignment] and [REDACTED:anthropic-key]"
        assert value["password"] == "[REDACTED:secret-assignment]"
        assert value["nested"] == {
            "api_key": "[REDACTED:secret-assignment]",
            "list": ["[REDACTED:aws-access-key]", 1, None],
        }
        assert value["pem"] == "[REDACTED:private-key]"
        assert value["type"] == "user"
        assert scrub_bytes(out) == out


def test_escaped_secrets_are_found_and_lines_without_secrets_untouched() -> None:
    raw = b'{"t": "\\u0073k-ant-api03-' + b"x1" * 15 + b'"}'
    assert json.loads(scrub_bytes(raw)) == {"t": "[REDACTED:anthropic-key]"}
    clean = b'{"type":"progress","data":{"elapsed":3}}'
    assert scrub_bytes(clean) is clean
    not_json = b"plain AKIAIOSFODNN7EXAMPLE \xff tail"
    assert scrub_bytes(not_json) == b"plain [REDACTED:aws-access-key] \xff tail"


def test_scrub_session_covers_texts_inputs_events_and_thinking() -> None:
    secret = SECRETS["github-token"]
    message = Message(
        "m1", "assistant", "tool-call", f"run {secret}", tool_input=json.dumps({"token": secret})
    )
    thought = Message("m0#thinking1", "assistant", "thinking", f"maybe use {secret}")
    session = ParsedSession(
        "s1",
        "claude-code",
        "proj",
        events=(SourceEvent(1, json.dumps({"text": secret}).encode(), True, "assistant"),),
        messages=(thought, message),
        title=f"about {secret}",
    )
    out = scrub_session(session)
    assert secret not in repr(out)
    assert out.messages[1].message_id == "m1" and out.messages[1].key == message.key
    assert json.loads(out.events[0].raw) == {"text": "[REDACTED:github-token]"}
    assert scrub_session(session, enabled=False) is session
    assert scrub_session(out) == replace(out)


# -- properties --------------------------------------------------------------------------------

pieces = st.one_of(
    st.sampled_from(list(SECRETS.values())),
    st.sampled_from(
        [
            "password=",
            "token: ",
            "Bearer ",
            "://u:",
            "@",
            "\\",
            '"',
            "'",
            "sk-",
            "AKIA",
            "\n",
            "-----END RSA PRIVATE KEY-----",
            "[REDACTED:x]",
            "=",
            " ",
        ]
    ),
    st.text(max_size=12),
)
texts = st.lists(pieces, max_size=8).map("".join)
keys = st.one_of(st.sampled_from(["password", "api_key", "token", "type", "text"]), texts)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), texts),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings(v)]]
    return []


@settings(max_examples=examples(300), deadline=None)
@given(text=texts)
def test_scrub_text_is_idempotent(text: str) -> None:
    once = scrub_text(text)
    assert scrub_text(once) == once


@settings(max_examples=examples(300), deadline=None)
@given(value=json_values, ascii_only=st.booleans(), indent=st.sampled_from([None, 1]))
def test_scrub_bytes_keeps_json_valid_and_is_idempotent(
    value: Any, ascii_only: bool, indent: int | None
) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only, indent=indent).encode("utf-8", "surrogatepass")
    out = scrub_bytes(raw)
    decoded = json.loads(out)  # still valid JSON
    assert scrub_bytes(out) == out
    for s in strings(decoded):
        assert scrub_text(s) == s  # nothing left to find
    if not isinstance(value, dict | list):
        assert decoded == (scrub_text(value) if isinstance(value, str) else value)
