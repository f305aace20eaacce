"""Inline search filters: parsing is total, takes exactly the filter tokens out, and round-trips."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.contract.search import parse_request
from cwcore.model import DOCUMENT_KINDS, ROLES
from cwcore.retrieve.filters import FILTER_KEYS, format_filters, parse_filters
from tests.helpers import examples

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)

#: Free words that are never filters (no ``key:`` prefix, no quotes, no backslash).
words = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters='"\\:'
    ),
    min_size=1,
    max_size=12,
)
values = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"'),
    min_size=1,
    max_size=20,
).filter(lambda v: v.strip() == v and v.strip())
instants = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))


@st.composite
def filter_sets(draw: st.DrawFn) -> dict[str, object]:
    fields: dict[str, object] = {}
    if draw(st.booleans()):
        fields["project"] = draw(values)
    if draw(st.booleans()):
        fields["agent"] = draw(values)
    sessions = draw(st.lists(values, max_size=3, unique=True))
    if sessions:
        fields["sessions"] = sessions
    if draw(st.booleans()):
        fields["role"] = draw(st.sampled_from(ROLES))
    if draw(st.booleans()):
        fields["kind"] = draw(st.sampled_from(DOCUMENT_KINDS))
    if draw(st.booleans()):
        fields["since"] = draw(instants).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if draw(st.booleans()):
        fields["until"] = draw(instants).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return fields


@settings(max_examples=examples(300))
@given(st.text(max_size=200))
def test_parsing_never_raises_and_leaves_no_filter_behind(text: str) -> None:
    parsed = parse_filters(text, now=NOW)
    assert parsed.text == " ".join(parsed.text.split())
    assert set(parsed.fields) <= {"project", "agent", "sessions", "role", "kind", "since", "until"}
    for problem in parsed.problems:
        assert "\n" not in problem and len(problem) < 300


@settings(max_examples=examples(200))
@given(st.lists(words, max_size=8))
def test_text_without_filters_is_the_query(free: list[str]) -> None:
    parsed = parse_filters(" ".join(free), now=NOW)
    assert parsed.text == " ".join(free) and parsed.fields == {} and parsed.problems == ()


@settings(max_examples=examples(300))
@given(filter_sets(), st.lists(words, max_size=6), st.randoms(use_true_random=False))
def test_filters_round_trip_wherever_they_stand(
    fields: dict[str, object], free: list[str], rng: object
) -> None:
    formatted = format_filters(fields)
    parsed_alone = parse_filters(formatted, now=NOW)
    assert parsed_alone.fields == fields and parsed_alone.text == ""
    pieces = [*free, formatted] if formatted else list(free)
    rng.shuffle(pieces)  # type: ignore[attr-defined]
    parsed = parse_filters("  ".join(pieces), now=NOW)
    assert parsed.fields == fields
    assert sorted(parsed.text.split()) == sorted(" ".join(free).split())
    # What comes out is a valid search request.
    since, until = fields.get("since"), fields.get("until")
    if not (since and until and str(since) > str(until)):
        assert parsed.problems == ()
    parse_request({"query": parsed.text or "x", **parsed.fields})


def test_spans_dates_and_instants() -> None:
    parsed = parse_filters("error since:7d until:2026-11-19 kind:tool-result", now=NOW)
    assert parsed.text == "error"
    assert parsed.fields == {
        "since": "2026-11-13T12:00:00.000Z",
        "until": "2026-11-19T23:59:59.999Z",  # a bare date for until: through its last moment
        "kind": "tool-result",
    }
    assert parse_filters("since:90m", now=NOW).fields["since"] == "2026-11-20T10:30:00.000Z"
    assert parse_filters("since:2w", now=NOW).fields["since"] == "2026-11-06T12:00:00.000Z"
    assert parse_filters("since:2026-11-01", now=NOW).fields["since"] == "2026-11-01T00:00:00.000Z"
    exact = parse_filters("until:2026-11-01T10:00:00Z", now=NOW).fields["until"]
    assert exact == "2026-11-01T10:00:00.000Z"


def test_bad_values_are_problems_and_stay_out_of_the_request() -> None:
    parsed = parse_filters("role:robot kind:tool since:yesterday queue", now=NOW)
    assert parsed.text == "queue" and parsed.fields == {}
    assert [p.split(" ")[0] for p in parsed.problems] == [
        "role:robot",
        "kind:tool",
        "since:yesterday",
    ]
    assert parse_filters("since:2026-11-02 until:2026-11-01", now=NOW).problems


def test_quotes_escapes_repeats_and_half_typed_keys() -> None:
    parsed = parse_filters('project:"my project" session:a session:b session:a x', now=NOW)
    assert parsed.fields == {"project": "my project", "sessions": ["a", "b"]}
    assert parsed.text == "x"
    assert parse_filters("\\kind:tool-result here", now=NOW).text == "kind:tool-result here"
    assert parse_filters("queue project:", now=NOW) == parse_filters("queue", now=NOW)
    assert parse_filters("agent:codex agent:pi", now=NOW).fields == {"agent": "pi"}
    assert parse_filters("PROJECT:cli Role:User", now=NOW).fields == {
        "project": "cli",
        "role": "user",
    }
    # A key inside a word, or an unknown key, is text.
    assert parse_filters("url:http://x myproject:y", now=NOW).text == "url:http://x myproject:y"
    assert parse_filters('project:"half typed', now=NOW).fields == {"project": "half typed"}
    assert set(FILTER_KEYS) == {"project", "agent", "session", "role", "kind", "since", "until"}
