"""Keys with string fields (issue 36): the ASCII fast path of ``KeyLayout.prefix`` encodes
exactly what the checked path does, and refuses what it refuses."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cwcore.errors import UnsafeKey
from cwcore.store import codec, keys

LAYOUTS = [keys.MESSAGE_DOC, keys.DOC_HEAD, keys.DOC_VERSION, keys.SESSION_DOC, keys.EVENT]


def _checked(layout: keys.KeyLayout, values: tuple[object, ...]) -> bytes:
    out = bytearray((layout.tag, layout.version))
    for kind, value in zip(layout.fields, values, strict=False):
        out += keys._encode_field(layout.name, kind, value)  # type: ignore[arg-type]
    return bytes(out)


def _values(layout: keys.KeyLayout, text: st.SearchStrategy[str]) -> st.SearchStrategy[tuple]:
    fields = {
        "str": text,
        "desc": text,
        "u32": st.integers(0, 2**32 - 1),
        "u64": st.integers(0, 2**64 - 1),
        "h16": st.binary(min_size=16, max_size=16),
    }
    return st.tuples(*(fields[f] for f in layout.fields))


TEXT = st.text(max_size=40) | st.text(alphabet="ab\x00", max_size=5) | st.just("x" * 1000)


@given(st.data())
def test_prefix_equals_the_checked_encoding(data: st.DataObject) -> None:
    layout = data.draw(st.sampled_from(LAYOUTS))
    values = data.draw(_values(layout, TEXT))
    try:
        want: bytes | type[UnsafeKey] = _checked(layout, values)
    except UnsafeKey:
        want = UnsafeKey
    if want is UnsafeKey:
        with pytest.raises(UnsafeKey):
            layout.prefix(*values)
    else:
        assert layout.prefix(*values) == want


def test_refused_strings_still_raise() -> None:
    for bad in ("", "a\x00b", "x" * (keys.MAX_FIELD_BYTES + 1)):
        with pytest.raises(UnsafeKey):
            keys.MESSAGE_DOC.encode("session", bad)


def test_record_bytes_are_canonical_json() -> None:
    body = {"b": 1, "a": [1.5, "é", None, {"z": 1e16, "y": "\u2028"}]}
    assert codec.dumps(body) == (
        b'{"a":[1.5,"\xc3\xa9",null,{"y":"\xe2\x80\xa8","z":1e+16}],"b":1}'
    )
