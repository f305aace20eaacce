"""Key encoding: round-trips, ordering, prefix exactness and every rejection rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cwcore.errors import UnsafeKey
from cwcore.store import keys

SAFE_CHARS = st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="/\\")
safe_ids = st.text(SAFE_CHARS, min_size=1, max_size=60).filter(lambda s: s == s.strip() and s)


@given(safe_ids, st.integers(0, 2**64 - 1))
def test_event_key_round_trip(session: str, seq: int) -> None:
    key = keys.EVENT.encode(session, seq)
    assert keys.EVENT.decode(key) == (session, seq)
    assert key.startswith(keys.EVENT.prefix(session))


@given(safe_ids, safe_ids, st.integers(0, 2**32 - 1))
def test_prefix_is_exact(a: str, b: str, n: int) -> None:
    """A string field's prefix never matches a longer string that merely starts with it."""
    if a == b:
        return
    key_b = keys.SESSION_DOC.encode(b, n)
    assert not key_b.startswith(keys.SESSION_DOC.prefix(a))


@given(st.binary(min_size=16, max_size=16), safe_ids)
def test_digest_field_round_trip(digest: bytes, session: str) -> None:
    assert keys.PROJECT_SESSION.decode(keys.PROJECT_SESSION.encode(digest, session)) == (
        digest,
        session,
    )


@given(st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=20))
def test_numeric_order_is_byte_order(values: list[int]) -> None:
    encoded = sorted(keys.OUTBOX.encode(v) for v in values)
    assert [keys.OUTBOX.decode(k)[0] for k in encoded] == sorted(values)


@given(st.binary(max_size=64))
def test_decode_never_crashes_on_garbage(data: bytes) -> None:
    try:
        keys.EVENT.decode(data)
    except UnsafeKey:
        pass


@pytest.mark.parametrize("bad", ["", "a\x00b", "\x00", "x" * 513, "é" * 257, "\ud800"])
def test_unsafe_ids_rejected(bad: str) -> None:
    with pytest.raises(UnsafeKey):
        keys.check_id(bad)


def test_non_string_id_rejected() -> None:
    with pytest.raises(UnsafeKey):
        keys.check_id(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "good",
    [
        "séance",
        "会话-1",
        "emoji-🙂",
        "a:b@c",
        "x" * 512,
        "é" * 256,
        "conv-50/session_30",
        "a\\b",
        "tab\there",
        "\u0085x",
        " lead",
        "trail ",
        " ",
        "\x1b[2J",
        "../../etc/passwd",
    ],
)
def test_ids_are_data(good: str) -> None:
    # Slashes, control characters and white space are data: the length prefix bounds the field.
    assert keys.check_id(good) == good
    assert keys.SESSION.decode(keys.SESSION.encode(good)) == (good,)


def test_refusal_echo_is_capped() -> None:
    with pytest.raises(UnsafeKey) as info:
        keys.check_id("\ud800" + "y" * 400)
    assert len(info.value.message) < 200


def test_persisted_key_limit() -> None:
    # Four 512-byte strings exceed 2,047 bytes once length prefixes and the header are added.
    layout = keys.KeyLayout("wide", 0xF0, ("str", "str", "str", "str"))
    with pytest.raises(UnsafeKey, match="limit 2047"):
        layout.encode(*(["y" * 512] * 4))
    assert len(layout.encode(*(["y" * 500] * 4))) <= keys.MAX_PERSISTED_KEY


def test_read_key_limit() -> None:
    with pytest.raises(UnsafeKey, match="4096"):
        keys.EVENT.decode(b"\x10\x01" + b"\x00" * 5000)


def test_prefix_end() -> None:
    assert keys.prefix_end(b"ab") == b"ac"
    assert keys.prefix_end(b"a\xff") == b"b"
    assert keys.prefix_end(b"\xff\xff") is None


_U32_U64 = keys.KeyLayout("fast-path", 0x7E, ("u32", "u64"))


@given(st.integers(-(2**65), 2**65), st.integers(-(2**65), 2**65))
def test_integer_fast_path_matches_the_checked_encoding(a: int, b: int) -> None:
    try:
        checked: bytes | None = _U32_U64.prefix(a, b)  # the general, field-by-field path
    except UnsafeKey:
        checked = None
    if checked is None:
        with pytest.raises(UnsafeKey):
            _U32_U64.encode(a, b)
    else:
        assert _U32_U64.encode(a, b) == checked
        assert _U32_U64.decode(checked) == (a, b)


def test_integer_fast_path_refuses_what_the_checked_path_refuses() -> None:
    for bad in ((True, 1), (1.0, 1), ("1", 1)):
        with pytest.raises(UnsafeKey):
            _U32_U64.encode(*bad)  # type: ignore[arg-type]
    with pytest.raises(UnsafeKey):
        _U32_U64.encode(1)
