"""The raw-line gate of ``scrub_bytes`` (issue 36): a line it passes unread is one the full
path would have returned unchanged, on open-ended JSON and non-JSON lines."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.importers import scrub
from cwcore.importers.scrub import PATTERNS, _plainly_clean, scrub_bytes

# Pieces of secrets, anchors, escapes and characters that fold into anchor letters (the Kelvin
# sign lower-cases to "k", the long s matches "s" without case).
PIECES = [
    "sk-",
    "ant-",
    "proj-",
    "AKIA",
    "ghp_",
    "xoxb-",
    "AIza",
    "Bearer ",
    "https://u:",
    "@host",
    "password",
    "PASSWORD",
    "token",
    "api_key",
    "apiKey",
    "=",
    ": ",
    '"',
    "\\",
    "/",
    ":/",
    "0123456789abcdefABCDEF",
    "xyzXYZ_-.",
    " ",
    "\n",
    "\u212a",
    "\u017f",
    "é",
    "İ",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
]
TEXT = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


def _full(raw: bytes) -> bytes:
    """``scrub_bytes`` without the gate: what the gate must agree with."""
    saved = scrub._plainly_clean
    scrub._plainly_clean = lambda _raw: False  # type: ignore[assignment]
    try:
        return scrub_bytes(raw)
    finally:
        scrub._plainly_clean = saved


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(TEXT, TEXT | st.lists(TEXT, max_size=3), max_size=4),
    st.booleans(),
    st.booleans(),
)
def test_a_line_the_gate_passes_is_one_scrubbing_leaves_alone(
    obj: dict[str, object], ascii_escapes: bool, as_json: bool
) -> None:
    raw = (
        json.dumps(obj, ensure_ascii=ascii_escapes).encode()
        if as_json
        else " ".join(str(v) for v in obj.values()).encode("utf-8", "surrogatepass")
    )
    out = scrub_bytes(raw, PATTERNS)
    assert out == _full(raw)
    if _plainly_clean(raw):
        assert out is raw


def test_the_gate_refuses_what_may_decode_into_an_anchor() -> None:
    assert _plainly_clean(b'{"text": "plain words only"}')
    assert not _plainly_clean(b'{"text": "\\u0073k-abc"}')  # decodes to "sk-abc"
    assert not _plainly_clean(b'{"text": "a:\\\\/b"}')  # decodes to the anchor ":\\/"
    assert not _plainly_clean('{"text": "to\u212aen"}'.encode())  # Kelvin sign: "token"
    assert not _plainly_clean(b'{"Token": "x"}')
    secret = b'{"api_key": "abcd1234efgh5678"}'
    assert scrub_bytes(secret) != secret
