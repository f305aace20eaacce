"""Inline search filters: ``project:cli agent:codex since:7d role:user kind:tool-result
session:ID until:DATE`` typed in a query, parsed into the search request's fields.

:func:`parse_filters` is pure (the clock comes in as ``now``): it takes every ``key:value``
token of a known key out of the text and returns what is left as the query, the request fields
(``project``, ``agent``, ``sessions``, ``role``, ``kind``, ``since``, ``until``; the names and
values :func:`cwcore.contract.search.parse_request` takes) and the problems it met. A value
with spaces is quoted (``project:"my project"``); a backslash keeps a token in the query text
(``\\kind:tool`` searches for ``kind:tool``). It never raises: a face that parses as the user
types shows the problems and searches with the rest.

Values: ``role`` and ``kind`` must be one of the request's roles and document kinds; ``since``
and ``until`` take a span back from ``now`` (``90m``, ``24h``, ``7d``, ``2w``), a date or an
ISO-8601 instant. A bare date means the start of that day for ``since`` and its end for
``until``, so ``since:2026-03-01 until:2026-03-01`` is that whole day (UTC). ``session`` may be
repeated (any of them); for the other keys the last one counts. A key with no value yet
(``project:`` while typing) is dropped without a problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from cwcore import clock
from cwcore.errors import InvalidInput
from cwcore.model import DOCUMENT_KINDS, ROLES

FILTER_KEYS = ("project", "agent", "session", "role", "kind", "since", "until")
#: How each filter key is named in the search request.
REQUEST_FIELD = {
    "project": "project",
    "agent": "agent",
    "session": "sessions",
    "role": "role",
    "kind": "kind",
    "since": "since",
    "until": "until",
}

_TOKEN = re.compile(
    r"(?<!\S)(\\?)(" + "|".join(FILTER_KEYS) + r'):(?:"([^"]*)"?|(\S*))', re.IGNORECASE
)
_SPAN = re.compile(r"(\d{1,6})([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class ParsedQuery:
    """A query with its inline filters taken out: ``text`` (white space collapsed),
    ``fields`` (search request fields), ``problems`` (one line each, for people)."""

    text: str
    fields: dict[str, Any] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


def parse_time_filter(value: str, now: datetime, *, end_of_day: bool = False) -> str:
    """An ISO-8601 instant from ``7d``-style spans back from ``now``, a date (its start, or
    with ``end_of_day`` its last millisecond) or an instant; :class:`InvalidInput` otherwise."""
    text = value.strip()
    span = _SPAN.fullmatch(text.lower())
    if span:
        delta = timedelta(**{_UNITS[span.group(2)]: int(span.group(1))})
        return clock.iso(now - delta)
    moment = clock.parse_time(text)
    if end_of_day and _DATE.fullmatch(text):
        moment += timedelta(days=1, milliseconds=-1)
    return clock.iso(moment)


def is_span(value: str) -> bool:
    """Whether ``value`` is a span back from now (``90m``, ``24h``, ``7d``, ``2w``)."""
    return _SPAN.fullmatch(value.strip().lower()) is not None


def resolve_span(value: str | None, now: datetime) -> str | None:
    """``value`` with a span back from ``now`` made an ISO-8601 instant; anything else (a date,
    an instant, something invalid the request check reports) unchanged. For the CLI's
    ``--since`` / ``--until``, which take what the inline filters take."""
    if value is None or not is_span(value):
        return value
    return parse_time_filter(value, now)


def parse_filters(text: str, *, now: datetime) -> ParsedQuery:
    """Take the inline filters out of ``text`` (see the module docstring)."""
    fields: dict[str, Any] = {}
    problems: list[str] = []
    sessions: list[str] = []
    kept: list[str] = []
    position = 0
    for match in _TOKEN.finditer(text):
        kept.append(text[position : match.start()])
        position = match.end()
        escaped, key = match.group(1), match.group(2).lower()
        if escaped:
            kept.append(match.group(0)[1:])  # literal text: the token without its backslash
            continue
        value = match.group(3) if match.group(3) is not None else match.group(4)
        value = value.strip()
        if not value:
            continue  # still being typed
        problem = _apply(key, value, now, fields, sessions)
        if problem:
            problems.append(problem)
    kept.append(text[position:])
    if sessions:
        fields["sessions"] = list(dict.fromkeys(sessions))
    since, until = fields.get("since"), fields.get("until")
    if since and until and clock.parse_time(since) > clock.parse_time(until):
        problems.append("since is after until: nothing can match")
    return ParsedQuery(" ".join("".join(kept).split()), fields, tuple(problems))


def _apply(
    key: str, value: str, now: datetime, fields: dict[str, Any], sessions: list[str]
) -> str | None:
    """Record one filter in ``fields`` (or ``sessions``); a problem line when the value is bad."""
    if key == "session":
        sessions.append(value)
    elif key == "role":
        if value.lower() not in ROLES:
            return f"role:{_clip(value)} is not a role ({', '.join(ROLES)})"
        fields["role"] = value.lower()
    elif key == "kind":
        if value.lower() not in DOCUMENT_KINDS:
            return f"kind:{_clip(value)} is not a kind ({', '.join(DOCUMENT_KINDS)})"
        fields["kind"] = value.lower()
    elif key in ("since", "until"):
        try:
            fields[key] = parse_time_filter(value, now, end_of_day=key == "until")
        except (InvalidInput, OverflowError):
            return f"{key}:{_clip(value)} is not a date, an instant or a span like 7d"
    else:
        fields[key] = value
    return None


def _clip(value: str, width: int = 40) -> str:
    return value if len(value) <= width else value[: width - 1] + "…"


def format_filters(fields: dict[str, Any]) -> str:
    """The inline form of request ``fields`` (the inverse of :func:`parse_filters` for the
    fields it produces), for showing which filters are in effect."""
    tokens: list[str] = []
    for key in FILTER_KEYS:
        name = REQUEST_FIELD[key]
        values = fields.get(name)
        if values is None:
            continue
        for value in values if isinstance(values, list) else [values]:
            text = str(value)
            needs_quotes = not text or any(c.isspace() for c in text) or text.startswith('"')
            tokens.append(f'{key}:"{text}"' if needs_quotes else f"{key}:{text}")
    return " ".join(tokens)
