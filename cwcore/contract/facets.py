"""The ``facets`` method's request and answer: the archive's agents and projects, each with the
sessions and messages that pass the *other* filters (what a filter picker lists beside each
choice; :func:`cwcore.facets.facets` computes it)."""

from __future__ import annotations

from cwcore.contract.codec import Record, field


class FacetsRequest(Record):
    """The filters: a project, an agent, and a time range (``since`` / ``until``: ISO-8601 dates
    or instants; a span such as ``7d`` is resolved by the face before it asks). Each is absent
    from the JSON when not set."""

    project: str | None = field(default=None, omit_none=True)
    agent: str | None = field(default=None, omit_none=True)
    since: str | None = field(default=None, omit_none=True)
    until: str | None = field(default=None, omit_none=True)
    activity_days: int = field(
        default=0,
        minimum=0,
        maximum=366,
        doc="Sessions per day for this many days ending with `until`'s day (today without "
        "one), per project and in all; 0 (the default) counts none.",
    )


class FacetCount(Record):
    """One value of a facet: its ``name``, the ``sessions`` that have it and pass the other
    filters, and those sessions' ``messages`` (the ``cw sessions`` count: no thinking). With
    ``activity_days`` asked, a project's ``activity`` is those sessions per day, oldest day
    first (a session counts on the UTC day it started, else the day it ended); absent
    otherwise, and on agents."""

    name: str
    sessions: int
    messages: int
    activity: tuple[int, ...] | None = field(default=None, omit_none=True)


class Facets(Record):
    """The pickers' choices: every known agent and project (by name), each counted under the
    other filters; ``sessions`` and ``messages`` count what passes every filter at once. With
    ``activity_days`` asked, ``activity`` is the projects' per-day counts summed (every project
    under the agent and time filters) and ``activity_end`` the ISO date of its last day."""

    agents: tuple[FacetCount, ...]
    projects: tuple[FacetCount, ...]
    sessions: int
    messages: int
    activity: tuple[int, ...] | None = field(default=None, omit_none=True)
    activity_end: str | None = field(default=None, omit_none=True)

    def agent(self, name: str) -> FacetCount | None:
        return next((a for a in self.agents if a.name == name), None)

    def project(self, name: str) -> FacetCount | None:
        return next((p for p in self.projects if p.name == name), None)
