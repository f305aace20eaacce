"""Scope and filters: which windows a search may return.

``session`` scope admits the named sessions and their verified ancestor lineage, within the
project of the first named session; ``project`` scope admits one project's sessions; ``all``
admits everything. The public filters (sessions, project, agent, date range, role, kind) narrow
any scope. A window is tested on the filter fields its record carries (no manifest reads).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from cwcore.clock import parse_time
from cwcore.contract.search import SearchRequest
from cwcore.errors import InvalidInput, NotFound, excerpt
from cwcore.index.derived import StoredWindow
from cwcore.store import identity
from cwcore.store.reader import Reader


@dataclass(frozen=True)
class Scope:
    sessions: frozenset[str] | None
    project: str | None
    request: SearchRequest
    #: Lineage depth of each admitted session in a session scope: 0 for the named sessions, 1
    #: for their parents, … (search prefers the nearer of two equally good hits).
    depth: dict[str, int] = field(default_factory=dict)

    def admits(self, window: StoredWindow) -> bool:
        req = self.request
        if self.sessions is not None and window["session"] not in self.sessions:
            return False
        if self.project is not None and window["project"] != self.project:
            return False
        if req.agent is not None and window["agent"] != req.agent:
            return False
        if req.kind is not None and window["kind"] != req.kind:
            return False
        if req.role is not None and not any(k.startswith(req.role + ":") for k in window["keys"]):
            return False
        if req.since is not None or req.until is not None:
            created = parse_time(window["created"])
            if req.since is not None and created < req.since:
                return False
            if req.until is not None and created > req.until:
                return False
        return not (req.exclude_keys and set(window["keys"]) <= req.exclude_keys)


def lineage(reader: Reader, session_id: str) -> list[str]:
    """The session and its verified ancestors, nearest first."""
    out = [session_id]
    try:
        record = reader.session(session_id)
    except NotFound:
        return out
    for ancestor in record.get("lineage") or []:
        if ancestor not in out:
            out.append(ancestor)
    return out


def resolve(reader: Reader, req: SearchRequest) -> Scope:
    if req.sessions:
        # ``<agent>:<id>`` names one agent's session; a bare id two agents share is an error
        # naming both (cwcore.store.identity), never a silent pick of one.
        found = identity.resolve_many(reader.store, req.sessions)
        named = tuple(r or s for r, s in zip(found, req.sessions, strict=True))
        if named != req.sessions:
            req = dataclasses.replace(req, sessions=named)
    if req.scope == "session":
        depth: dict[str, int] = {}
        for session in req.sessions:
            for d, member in enumerate(lineage(reader, session)):
                depth[member] = min(d, depth.get(member, d))
        allowed = set(depth)
        try:
            project = req.project or reader.session(req.sessions[0])["project"]
        except NotFound:
            raise NotFound(f"no session {excerpt(req.sessions[0])}") from None
        return Scope(frozenset(allowed), project, req, depth)
    if req.scope == "project":
        owner = req.project
        if owner is None and req.sessions:
            owner = reader.session(req.sessions[0])["project"]
        if owner is None:
            raise InvalidInput("scope project needs --project (or a --session to take it from)")
        return Scope(frozenset(req.sessions) if req.sessions else None, owner, req)
    return Scope(frozenset(req.sessions) if req.sessions else None, req.project, req)
