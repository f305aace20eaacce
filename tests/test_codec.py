"""Record codecs round-trip any JSON body and any event; corrupt bytes raise CorruptRecord."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cwcore.errors import CorruptRecord
from cwcore.store import codec

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), json_values, max_size=6))
def test_record_round_trip(body: dict) -> None:
    data = codec.encode_record(body)
    assert codec.decode_record(data) == body
    assert codec.encode_record(codec.decode_record(data)) == data  # one serialization


@given(st.integers(0, 2**32 - 1), st.booleans(), st.text(max_size=40), st.binary(max_size=200))
def test_event_round_trip(line: int, conversational: bool, type_: str, raw: bytes) -> None:
    data = codec.encode_event(line, conversational, type_, raw)
    assert codec.decode_event(data) == (line, conversational, type_, raw)


@pytest.mark.parametrize("data", [b"", b"\x02{}", b"\x01{not json", b"\x01[1,2]"])
def test_corrupt_records(data: bytes) -> None:
    with pytest.raises(CorruptRecord):
        codec.decode_record(data)


def test_corrupt_event() -> None:
    with pytest.raises(CorruptRecord):
        codec.decode_event(b"\x01\x00")
