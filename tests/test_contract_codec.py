"""The contract codec: JSON derived from field declarations (issue 37)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.contract.codec import Record, camel, field, fields_from_json, pairs


class Inner(Record):
    count: int
    label: str | None


class Head(Record):
    session: str
    message_key: str


class Outer(Record):
    head: Head = field(flatten=True)
    items: tuple[Inner, ...]
    maybe: Inner | None
    names: tuple[str, ...]
    fixed: tuple[int, str]
    table: dict[str, Inner]
    sections: tuple[tuple[str, tuple[str, ...]], ...] = pairs(tuple)
    snake_case: float = field(name="snake_case")
    hidden: str = field(default="", skip=True)
    optional: int | None = field(default=None, omit_none=True)


texts = st.text(max_size=8)
inners = st.builds(Inner, count=st.integers(), label=st.none() | texts)
outers = st.builds(
    Outer,
    head=st.builds(Head, session=texts, message_key=texts),
    items=st.lists(inners, max_size=3).map(tuple),
    maybe=st.none() | inners,
    names=st.lists(texts, max_size=3).map(tuple),
    fixed=st.tuples(st.integers(), texts),
    table=st.dictionaries(texts, inners, max_size=3),
    sections=st.lists(
        st.tuples(texts, st.lists(texts, max_size=2).map(tuple)),
        max_size=3,
        unique_by=lambda p: p[0],
    ).map(tuple),
    snake_case=st.floats(allow_nan=False),
    optional=st.none() | st.integers(),
)


@settings(max_examples=200, deadline=None)
@given(outers)
def test_round_trip_through_json_text(record: Outer) -> None:
    body = json.loads(json.dumps(record.to_json()))
    assert Outer.from_json(body) == record
    assert json.dumps(Outer.from_json(body).to_json(), sort_keys=True) == json.dumps(
        body, sort_keys=True
    )


def test_declarations_shape_the_object() -> None:
    record = Outer(
        head=Head("s", "k"),
        items=(Inner(1, None),),
        maybe=None,
        names=("a",),
        fixed=(2, "b"),
        table={"x": Inner(3, "c")},
        sections=(("rules", ("r1", "r2")),),
        snake_case=0.5,
        hidden="never written",
    )
    assert record.to_json() == {
        "session": "s",
        "messageKey": "k",
        "items": [{"count": 1, "label": None}],
        "maybe": None,
        "names": ["a"],
        "fixed": [2, "b"],
        "table": {"x": {"count": 3, "label": "c"}},
        "sections": {"rules": ["r1", "r2"]},
        "snake_case": 0.5,
    }


def test_a_missing_required_key_is_an_error_and_extra_keys_are_ignored() -> None:
    with pytest.raises(KeyError, match="count"):
        Inner.from_json({"label": None})
    assert Inner.from_json({"count": 1, "label": None, "later": True}) == Inner(1, None)
    assert fields_from_json(Inner, {"count": 1, "label": "x"}) == {"count": 1, "label": "x"}


def test_records_are_frozen() -> None:
    inner = Inner(1, None)
    with pytest.raises(AttributeError):
        inner.count = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("message_key", "messageKey"),
        ("id", "id"),
        ("alternate_branch_candidates", "alternateBranchCandidates"),
        ("_private", "_private"),
        ("double__under", "double__under"),
    ],
)
def test_camel(name: str, key: str) -> None:
    assert camel(name) == key


class Snake(Record, keys="snake"):
    uptime_s: float
    started_at: str = field(name="startedAt")


class Place(Record):
    heading_path: tuple[str, ...]
    line: int


class Read(Record):
    text: str
    place: Place | None = field(default=None, omit_none=True, flatten=True)


def test_snake_records_keep_their_field_names() -> None:
    assert Snake(1.5, "t").to_json() == {"uptime_s": 1.5, "startedAt": "t"}
    assert Snake.from_json({"uptime_s": 1.5, "startedAt": "t"}) == Snake(1.5, "t")
    with pytest.raises(TypeError, match="keys"):

        class Kebab(Record, keys="kebab"):
            name: str


def test_an_optional_flattened_part_is_absent_or_whole() -> None:
    bare, placed = Read("x"), Read("x", Place(("A",), 3))
    assert bare.to_json() == {"text": "x"}
    assert placed.to_json() == {"text": "x", "headingPath": ["A"], "line": 3}
    assert Read.from_json(bare.to_json()) == bare
    assert Read.from_json(placed.to_json()) == placed
    with pytest.raises(KeyError, match="line"):  # a part cut in half is an error, not absent
        Read.from_json({"text": "x", "headingPath": ["A"]})


class Ask(Record):
    query: str
    limit: int = 10
    ratio: float = 0.5
    strict: bool = False
    tags: tuple[str, ...] = ()
    agent: str | None = field(default=None, omit_none=True)
    inner: Inner | None = None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "^query is required$"),
        ({"query": 3}, "^query must be a string$"),
        ({"query": "q", "limit": True}, "^limit must be an integer$"),
        ({"query": "q", "limit": 1.5}, "^limit must be an integer$"),
        ({"query": "q", "ratio": "1"}, "^ratio must be a number$"),
        ({"query": "q", "strict": 1}, "^strict must be true or false$"),
        ({"query": "q", "tags": "a"}, "^tags must be a list$"),
        ({"query": "q", "tags": ["a", 2]}, "^tags must be a string$"),
        ({"query": "q", "inner": {"label": None}}, r"^inner\.count is required$"),
        ({"query": "q", "inner": []}, "^inner must be an object$"),
        ([], "^params must be an object$"),
    ],
)
def test_a_request_is_checked_at_the_edge(params: object, message: str) -> None:
    from cwcore.errors import InvalidInput

    with pytest.raises(InvalidInput, match=message):
        Ask.parse(params)


def test_a_valid_request_parses_to_its_record() -> None:
    params = {
        "query": "q",
        "limit": 3,
        "ratio": 1,
        "tags": ["a"],
        "inner": {"count": 2, "label": None},
        "x": 1,
    }
    assert Ask.parse(params) == Ask("q", 3, 1, False, ("a",), None, Inner(2, None))
    assert Ask.parse(Ask("q", agent="codex").to_json()) == Ask("q", agent="codex")


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["query", "limit", "ratio", "strict", "tags"]),
        st.from_type(object).filter(lambda v: v is not None)
        | st.none()
        | st.integers()
        | st.text()
        | st.booleans()
        | st.lists(st.text()),
    )
)
def test_any_request_parses_or_is_refused_in_one_error(params: dict[str, object]) -> None:
    from cwcore.errors import InvalidInput

    try:
        Ask.parse(params)
    except InvalidInput:
        pass
