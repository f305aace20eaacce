"""Engine methods of memory records: ``memory.add``, ``memory.list``, ``memory.show``,
``memory.contest``, ``memory.deprecate``, ``memory.delete``, ``memory.context``."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cwcore.engine import Emit, Engine, method
from cwcore.errors import CwError, InvalidInput, NotFound
from cwcore.memory import injection, rank, records
from cwcore.store import codec, keys
from cwcore.store.admission import day_bucket

SUMMARY_CHARS = 120


def _opt(params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value


@method("memory.add")
def _add(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return records.add(engine.store, params)


@method("memory.list", output_bytes=8 * 1024 * 1024)
def _list(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    limit = params.get("limit", 100)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10_000:
        raise InvalidInput("limit must be an integer from 1 to 10000")
    rows = records.listing(
        engine.store,
        status=_opt(params, "status"),
        tag=_opt(params, "tag"),
        scope=_opt(params, "scope"),
        layer=_opt(params, "layer"),
        limit=limit,
    )
    return {"records": rows}


@method("memory.show")
def _show(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return records.get(engine.store, _opt(params, "id") or "")


def _status(engine: Engine, params: dict[str, Any], status: str) -> dict[str, Any]:
    return records.set_status(
        engine.store, _opt(params, "id") or "", status, _opt(params, "reason")
    )


@method("memory.contest")
def _contest(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return _status(engine, params, "contested")


@method("memory.deprecate")
def _deprecate(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return _status(engine, params, "deprecated")


@method("memory.delete")
def _delete(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return _status(engine, params, "deleted")


def daily_log(engine: Engine, project: str | None = None) -> injection.DailyLog:
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


def _project_of(engine: Engine, session: str) -> str | None:
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
    engine: Engine,
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

    The project defaults to the session's. ``project_only`` confines the turn to ``project``:
    only the records it may see (:func:`visible_to`) enter the pipeline and the daily log lists
    only its sessions — what a project-bound caller gets."""
    if project is None and session is not None:
        project = _project_of(engine, session)
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


@method("memory.context", output_bytes=4 * 1024 * 1024)
def _context(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """The injection block for a prompt, with processor traces and ranking. ``projectOnly``
    confines it to ``project`` (see :func:`context`)."""
    prompt = params.get("prompt")
    if not isinstance(prompt, str):
        raise InvalidInput("prompt must be a string")
    project_only = params.get("projectOnly", False)
    if not isinstance(project_only, bool):
        raise InvalidInput("projectOnly must be true or false")
    return context(
        engine,
        prompt,
        project=_opt(params, "project"),
        session=_opt(params, "session"),
        profile=_opt(params, "profile"),
        cwd=_opt(params, "cwd"),
        with_daily_log=bool(params.get("dailyLog", True)),
        project_only=project_only,
    )


def semantic_ranker(engine: Engine) -> rank.SemanticRanker | None:
    """Memory records by meaning (spec 002's hybrid ranking) with the engine's embedding model;
    None when ``semanticRetrieval`` is off. A failing model raises inside :func:`rank.rank`,
    which then ranks by FTS alone."""
    if not engine.settings.semantic_retrieval:
        return None
    from cwcore.semantic.runtime import for_engine

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
