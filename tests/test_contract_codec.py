"""The contract codec: JSON derived from field declarations (issue 37)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import assume, given, settings
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


# -- declared bounds and the JSON Schema derived from them -------------------------------------


class Bounded(Record):
    """A request with every kind of declared bound (and a nested record)."""

    name: str = field(min_length=1, max_length=8, doc="A short name.")
    either: int | None = field(minimum=0)  # required, and null is a value here
    count: int = field(default=3, minimum=0, maximum=10, doc="How many.")
    ratio: float = field(default=0.5, minimum=0, maximum=1)
    floor: int | None = field(default=None, minimum=1)
    ceiling: int = field(default=0, maximum=5)
    tags: tuple[str, ...] = field(default=(), max_length=4)
    note: str | None = field(default=None, min_length=2)
    flag: bool = False
    inner: Inner | None = None


SCHEMA = Bounded.json_schema()


def test_the_schema_is_derived_from_the_declarations() -> None:
    assert SCHEMA == {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "minLength": 1,
                "maxLength": 8,
                "description": "A short name.",
            },
            "count": {
                "type": "integer",
                "minimum": 0,
                "maximum": 10,
                "default": 3,
                "description": "How many.",
            },
            "ratio": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
            "floor": {"type": "integer", "minimum": 1},
            "ceiling": {"type": "integer", "maximum": 5, "default": 0},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}},
            "note": {"type": "string", "minLength": 2},
            "flag": {"type": "boolean", "default": False},
            "either": {"type": ["integer", "null"], "minimum": 0},
            "inner": {
                "type": "object",
                "properties": {
                    "count": {"type": "integer"},
                    "label": {"type": ["string", "null"]},
                },
                "required": ["count", "label"],
                "additionalProperties": False,
            },
        },
        "required": ["name", "either"],
        "additionalProperties": False,
    }
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    without = Bounded.json_schema(without=("count", "either"))
    assert set(without["properties"]) == set(SCHEMA["properties"]) - {"count", "either"}
    assert without["required"] == ["name"]


def test_a_type_the_schema_cannot_say_is_an_error() -> None:
    class Odd(Record):
        table: dict[str, int]

    with pytest.raises(TypeError, match="no JSON Schema"):
        Odd.json_schema()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"name": ""}, "^name must not be empty$"),
        ({"name": "x" * 9}, "^name is 9 characters long; at most 8 are allowed$"),
        ({"count": -1}, "^count must be from 0 to 10$"),
        ({"count": 11}, "^count must be from 0 to 10$"),
        ({"ratio": 1.5}, "^ratio must be from 0 to 1$"),
        ({"floor": 0}, "^floor must be at least 1$"),
        ({"ceiling": 6}, "^ceiling must be at most 5$"),
        ({"tags": ["abcde"]}, "^tags is 5 characters long; at most 4 are allowed$"),
        ({"note": "x"}, "^note must be at least 2 characters long$"),
        ({"either": -1}, "^either must be from|^either must be at least 0$"),
    ],
)
def test_a_value_out_of_its_bound_is_refused_naming_the_key_and_the_bound(
    params: dict[str, object], message: str
) -> None:
    from cwcore.errors import InvalidInput

    body = {"name": "ok", "either": None, **params}
    with pytest.raises(InvalidInput, match=message):
        Bounded.parse(body)
    with pytest.raises(InvalidInput, match=message):
        Bounded.check_present(params)
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(body)


def test_check_present_leaves_missing_keys_alone() -> None:
    Bounded.check_present({"count": 2})  # no name, no either: not this check's business
    Bounded.check_present({})


def test_bounds_are_counted_in_characters_not_bytes() -> None:
    assert Bounded.parse({"name": "é" * 8, "either": 0}).name == "é" * 8
    assert jsonschema.Draft202012Validator(SCHEMA).is_valid({"name": "é" * 8, "either": 0})


#: Values of every JSON kind, in and out of the bounds above.
_values = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=13)
    | st.floats(min_value=-1, max_value=2, allow_nan=False)
    | st.text(max_size=10)
    | st.lists(st.text(max_size=6), max_size=3)
)


#: Keys whose absence says None: the parse takes ``null`` for them too, the schema does not.
_NULL_IS_ABSENT = ("floor", "note")


#: Per key, values within its bounds (drawn as often as values of any kind).
_FITTING = {
    "count": st.integers(min_value=0, max_value=10),
    "ratio": st.floats(min_value=0, max_value=1),
    "floor": st.integers(min_value=1, max_value=20),
    "ceiling": st.integers(min_value=-5, max_value=5),
    "tags": st.lists(st.text(max_size=4), max_size=3),
    "note": st.text(min_size=2, max_size=5),
    "flag": st.booleans(),
}


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {"name": st.text(max_size=10), "either": st.none() | st.integers(-2, 5) | _values},
        optional={key: fitting | _values for key, fitting in _FITTING.items()},
    )
)
def test_the_schema_and_the_parse_agree(params: dict[str, object]) -> None:
    """What the schema accepts parses, to the values given; what the parse accepts, the schema
    accepts too, but for ``null`` under a key whose absence says None. One difference is known
    and left out: JSON Schema counts ``3.0`` as an integer, the parse (like every handler before
    it) wants a JSON integer."""
    from cwcore.errors import InvalidInput

    integral_float = any(
        isinstance(params.get(key), float) for key in ("count", "floor", "ceiling", "either")
    )
    assume(not integral_float or not jsonschema.Draft202012Validator(SCHEMA).is_valid(params))
    accepted = jsonschema.Draft202012Validator(SCHEMA).is_valid(params)
    try:
        record = Bounded.parse(params)
    except InvalidInput as exc:
        assert not accepted, exc.message
        assert any(exc.message.startswith(key) for key in [*params, "either"]), exc.message
        return
    nulls = {k for k, v in params.items() if v is None and k in _NULL_IS_ABSENT}
    assert jsonschema.Draft202012Validator(SCHEMA).is_valid(
        {k: v for k, v in params.items() if k not in nulls}
    )
    for key, value in params.items():
        got = getattr(record, key)
        assert (list(got) if isinstance(got, tuple) else got) == value


def test_building_a_record_out_of_its_bounds_is_refused_too() -> None:
    """A face building a request is refused before it sends it; records without bounds (the
    answers) are built as plain dataclasses, at no cost."""
    from cwcore.errors import InvalidInput

    with pytest.raises(InvalidInput, match=r"^count must be from 0 to 10$"):
        Bounded("ok", None, count=11)
    with pytest.raises(InvalidInput, match=r"^tags is 5 characters long"):
        Bounded("ok", 1, tags=("abcde",))
    assert Bounded("ok", None, count=10).count == 10
    assert not hasattr(Inner.__init__, "__wrapped__")
    assert hasattr(Bounded.__init__, "__wrapped__")
