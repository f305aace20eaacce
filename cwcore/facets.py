"""Facets: the archive's known agents and projects, each with how many sessions and messages
pass the *other* active filters — what a filter picker lists beside each choice.

:func:`facets` walks the ``session-order`` index once (the summaries the session listing filters
on: project, agent, start, end and the message count); nothing but the counters is kept and no
session record is read. (It used to read each counted session's record for its message count:
5.2 s for the TUI's project counts at a million messages.)

Each facet honours the filters on the *other* dimensions, as search pickers do: the agents'
counts are within the chosen project and time range, the projects' counts within the chosen
agent and time range, so choosing an agent re-counts the projects and not the agents. Every
known name is listed, with zero counts when nothing passes the other filters.

Asked for ``activity_days``, the same walk also counts each project's sessions per UTC day over
the days ending with ``until``'s day (today without one): the TUI's sparklines, which used to
page every session through the listing (5.2 s at a million messages). A stored time is the
engine's ISO form (``…Z``), whose first ten characters are the day, so no time is parsed for it.

A session is inside the time range when its span overlaps it: its last activity (``ended``, or
``started`` without one) is at or after ``since``, and its start (or ``ended`` without one) at
or before ``until``. A session with no time at all is outside any range.

The request and answer records are the method's contract (:mod:`cwcore.contract.facets`).
"""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timedelta

from cwcore import clock
from cwcore.clock import parse_time
from cwcore.contract.facets import FacetCount, Facets
from cwcore.errors import InvalidInput
from cwcore.store import session_order
from cwcore.store.reader import Reader

__all__ = ["FacetCount", "Facets", "facets"]


def _moment(name: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except InvalidInput:
        raise InvalidInput(f"{name} must be an ISO-8601 date or instant") from None


def _in_range(entry: session_order.Entry, since: datetime | None, until: datetime | None) -> bool:
    if since is None and until is None:
        return True
    first = entry.started or entry.ended
    last = entry.ended or entry.started
    if not first or not last:
        return False
    try:
        if since is not None and parse_time(last) < since:
            return False
        return until is None or parse_time(first) <= until
    except InvalidInput:  # a stored time that does not parse cannot be placed in a range
        return False


def activity_day(started: str | None, ended: str | None) -> str | None:
    """The UTC day (``YYYY-MM-DD``) a session counts on: the day it started, else the day it
    ended; None without a time that parses."""
    stamp = started or ended
    if not stamp:
        return None
    if len(stamp) > 10 and stamp.endswith("Z") and stamp[4] == "-" and stamp[10] == "T":
        return stamp[:10]  # the engine's own form: already UTC
    try:
        return parse_time(stamp).date().isoformat()
    except InvalidInput:
        return None


def _days(end: date, span: int) -> dict[str, int]:
    """Each of the ``span`` days ending with ``end`` (ISO dates) to its cell, oldest first."""
    first = end - timedelta(days=span - 1)
    return {(first + timedelta(days=i)).isoformat(): i for i in range(span)}


def facets(
    reader: Reader,
    *,
    project: str | None = None,
    agent: str | None = None,
    since: str | None = None,
    until: str | None = None,
    activity_days: int = 0,
) -> Facets:
    """The agents and projects with their counts under the other filters, and with
    ``activity_days`` each project's sessions per day (module docstring). ``since`` / ``until``
    are ISO-8601 dates or instants; :class:`InvalidInput` otherwise."""
    since_dt, until_dt = _moment("since", since), _moment("until", until)
    end = (until_dt or clock.now()).date()
    cell_of = _days(end, activity_days) if activity_days > 0 else {}
    activity: dict[str, list[int]] = {}
    agent_sessions: Counter[str] = Counter()
    agent_messages: Counter[str] = Counter()
    project_sessions: Counter[str] = Counter()
    project_messages: Counter[str] = Counter()
    total = [0, 0]
    for entry in session_order.scan(reader.store):
        # Every name is known, counted or not.
        agent_sessions[entry.agent] += 0
        project_sessions[entry.project] += 0
        if not _in_range(entry, since_dt, until_dt):
            continue
        for_agent = project is None or entry.project == project
        for_project = agent is None or entry.agent == agent
        if for_agent:
            agent_sessions[entry.agent] += 1
            agent_messages[entry.agent] += entry.messages
        if for_project:
            project_sessions[entry.project] += 1
            project_messages[entry.project] += entry.messages
            if cell_of:
                cell = cell_of.get(activity_day(entry.started, entry.ended) or "")
                if cell is not None:
                    cells = activity.get(entry.project)
                    if cells is None:
                        cells = activity[entry.project] = [0] * activity_days
                    cells[cell] += 1
        if for_agent and for_project:
            total[0] += 1
            total[1] += entry.messages
    days = {name: tuple(cells) for name, cells in activity.items()} if cell_of else None
    summed = [sum(day) for day in zip(*activity.values(), strict=True)] or [0] * activity_days
    return Facets(
        agents=_counts(agent_sessions, agent_messages),
        projects=_counts(project_sessions, project_messages, days, activity_days),
        sessions=total[0],
        messages=total[1],
        activity=tuple(summed) if cell_of else None,
        activity_end=end.isoformat() if cell_of else None,
    )


def _counts(
    sessions: Counter[str],
    messages: Counter[str],
    activity: dict[str, tuple[int, ...]] | None = None,
    span: int = 0,
) -> tuple[FacetCount, ...]:
    """The counts by name (case-folded order); with ``activity``, each name's ``span`` day
    cells (all zero for a name with no session in the days)."""
    idle = (0,) * span
    return tuple(
        FacetCount(
            name,
            sessions[name],
            messages[name],
            None if activity is None else activity.get(name, idle),
        )
        for name in sorted(sessions, key=lambda n: (n.casefold(), n))
    )
