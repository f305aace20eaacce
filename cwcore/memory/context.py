"""The memory block of one turn over an open engine: :func:`context` (the injection block of a
prompt), :func:`daily_log` (today's sessions), :func:`visible_to` (the records a project may
see) and :func:`semantic_ranker` (records by meaning, with the engine's embedding model).

``engine`` is the open :class:`cwcore.engine.Engine` (its ``store``, ``reader`` and ``settings``,
and its semantic tier); it is typed loosely because the engine sits above this layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cwcore.errors import CwError, InvalidInput, NotFound
from cwcore.memory import injection, rank, records
from cwcore.semantic.runtime import for_engine
from cwcore.services import Services
from cwcore.store import codec, identity, keys
from cwcore.store.admission import day_bucket

SUMMARY_CHARS = 120


def daily_log(engine: Services, project: str | None = None) -> injection.DailyLog:
    """Today's archived sessions (by the day bucket of their documents) — with ``project``,
    only that project's: the count and, for the first few, the project and the last message
    (shortened)."""

    def read(now: datetime) -> tuple[int, list[tuple[str, str]]]:
        bucket = day_bucket(None, now)
        sessions = [
            str(keys.BUCKET_SESSION.decode(key)[1])
            for key, _ in engine.store.scan("scopes", keys.BUCKET_SESSION.prefix(bucket))
        ]
        if project is not None:
            sessions = [s for s in sessions if _project_of(engine, s) == project]
        out: list[tuple[str, str]] = []
        for session in sessions[: injection.DAILY_SESSIONS]:
            try:
                project_name = str(engine.reader.session(session).get("project") or "")
                summary = ""
                for _, value in engine.store.scan(
                    "scopes", keys.SESSION_DOC.prefix(session), reverse=True, limit=1
                ):
                    ref = codec.decode_record(value, "session document")
                    manifest = engine.reader.manifest(ref["documentId"])
                    parts = engine.reader.part_texts(manifest)
                    if parts:
                        summary = parts[-1][1]
                summary = " ".join(summary.split())
                if len(summary) > SUMMARY_CHARS:
                    summary = summary[: SUMMARY_CHARS - 1] + "…"
                out.append((project_name, summary))
            except (CwError, KeyError):
                continue
        return len(sessions), out

    return read


def _project_of(engine: Services, session: str) -> str | None:
    try:
        return engine.reader.session(session).get("project")
    except NotFound:
        return None


def visible_to(project: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records a project may see: global, domain and its own project records (another
    project's records are left out before any processor runs, so no trace names them)."""
    out = []
    for r in rows:
        scope = r.get("scope") or {}
        if scope.get("type") != "project" or scope.get("name") == project:
            out.append(r)
    return out


def context(
    engine: Services,
    prompt: str,
    *,
    project: str | None = None,
    session: str | None = None,
    profile: str | None = None,
    cwd: str | None = None,
    with_daily_log: bool = True,
    project_only: bool = False,
    start: bool = False,
    budget: int = injection.BUDGET_BYTES,
) -> dict[str, Any]:
    """The injection block of one turn (see :func:`cwcore.memory.injection.build`).

    The project defaults to the session's; ``session`` may be a unique id prefix (4+
    characters, :func:`cwcore.store.identity.resolve_prefix`): a prefix several sessions share
    raises :class:`NotFound`, an id that names no session gives no project. ``project_only``
    confines the turn to ``project``: only the records it may see (:func:`visible_to`) enter
    the pipeline and the daily log lists only its sessions — what a project-bound caller
    gets."""
    if project is None and session is not None:
        project = _project_of(engine, identity.resolve_prefix(engine.store, session) or session)
    rows = list(records.scan(engine.store))
    if project_only:
        if project is None:
            raise InvalidInput("a project-only memory context needs a project")
        rows = visible_to(project, rows)
    log = daily_log(engine, project if project_only else None) if with_daily_log else None
    return injection.build(
        rows,
        prompt,
        profile=profile,
        project=project,
        cwd=cwd,
        daily_log=log,
        semantic=semantic_ranker(engine),
        budget=budget,
        start=start,
    )


def semantic_ranker(engine: Services) -> rank.SemanticRanker | None:
    """Memory records by meaning (the semantic half of the hybrid ranking, beside full-text
    search) with the engine's embedding model; None when ``semanticRetrieval`` is off. A failing
    model raises inside :func:`rank.rank`, which then ranks by FTS alone."""
    if not engine.settings.semantic_retrieval:
        return None
    semantic = for_engine(engine)

    def by_meaning(prompt: str, pool: Sequence[dict[str, Any]]) -> list[tuple[str, float]]:
        scores = semantic.similarity(prompt, [rank.record_text(r) for r in pool])
        found = [
            (str(r["id"]), float(s))
            for r, s in zip(pool, scores, strict=True)
            if s >= rank.SEMANTIC_MIN
        ]
        return sorted(found, key=lambda x: (-x[1], x[0]))

    return by_meaning
