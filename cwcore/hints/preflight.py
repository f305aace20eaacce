"""Preflight: one cheap, frozen, fail-open retrieval per real user message.

``preflight(engine, request)`` is the engine method behind ``cw preflight`` and the hook client.
Request fields: ``message`` and ``session`` (required), ``messageKey`` (default: ``text-`` and a
hash of the message — the session is part of every hint key), ``excludeVisibleSourceKeys`` (at
most 1,000 ids and 1 MiB, rejected before any exclusion set is built), ``maxResults`` (1–100,
default 10: the size of the ranked evidence set kept for diagnostics; at most one candidate is
ever shown) and ``hintBudgetTokens`` (lowers the per-message budget).

``session`` may be a unique id prefix (4+ characters, as everywhere an id is typed): it is
resolved before anything is decided, so the decision is frozen under the session's full id; a
prefix several sessions share is an error (nothing is stored). An id that names no session is
kept as given — a host asks before its session is imported — and decides ``none``
(``unknown-session``), frozen like any other decision (spec 000: "a no-result decision may be
persisted internally"; it keeps the later bytes of that message stable).

Response (a public contract): a :class:`~cwcore.contract.preflight.PreflightDecision`, whose JSON is
``{"outcome", "hint", "messageKey", "queryHash", "generation", "diagnostics"}`` plus ``session``,
``tokens`` and ``frozen``. The first call for a key decides and freezes; later calls return the
identical bytes. Any failure after validation freezes the empty ``failed`` outcome and is never
raised to the caller. Logs carry counts and timings only.

The frozen record also keeps what the user said (``said``: the message as preflight received
it, secrets scrubbed as imports scrub sources when ``scrubSecrets`` is on, cut to
:data:`SAID_MAX_CHARS` characters; withheld — None, with ``saidWithheld`` naming why — when a
privacy policy prohibits it), so ``cw hints`` and the TUI show it beside the frozen bytes. It is
never in the diagnostics, the logs or the model-visible hint.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, replace
from typing import Any

from cwcore import clock
from cwcore.contract.hints import PreflightRequest
from cwcore.contract.preflight import Diagnostics, PreflightDecision
from cwcore.contract.search import MAX_EXCLUDED_BYTES, MAX_EXCLUDED_KEYS, SearchRequest
from cwcore.errors import LimitExceeded, NotFound
from cwcore.hints import frozen, gate, privacy, render
from cwcore.hints.candidates import COVERAGE_MIN, IDF_MIN, MIN_MATCHED, Evidence, retrieve
from cwcore.hints.lineage import allowed_rows
from cwcore.hints.query import Query, extract
from cwcore.hints.services import SearchServices
from cwcore.importers.scrub import scrub_text
from cwcore.index import derived
from cwcore.index.derived import Generation
from cwcore.retrieve.candidates import Visible
from cwcore.retrieve.scope import Scope
from cwcore.store import identity
from cwcore.store.keys import MAX_MESSAGE_KEY_BYTES, check_id
from cwcore.text.tokens import estimate
from cwcore.text.unicode import without_lone_surrogates

log = logging.getLogger("cw.hints")

#: Planner priorities: recent conversation outranks retrieved evidence, which outranks summaries.
PRIORITY = {"recent": 100, "retrieved": 85, "summary": 75}
OUTCOMES = ("no-query", "none", "excerpt", "marker", "failed")
#: Characters of the user's message kept with its decision (``said``); longer ones are cut and
#: end with ``…``. Enough to recognise the message beside its hint, bounded per record.
SAID_MAX_CHARS = 2_000
#: Characters scrubbed before the cut: a secret that starts inside the kept text and runs past
#: the cut (a PEM private key is about 3,300 characters) is still matched whole and replaced.
SAID_SCRUB_CHARS = SAID_MAX_CHARS + 16_384


@dataclass(frozen=True)
class Checked:
    """A preflight request as the decision reads it: the message with lone surrogates
    replaced, the session, the message key (the default one when none was sent), the visible
    source keys and the bounds."""

    message: str
    session: str
    message_key: str
    visible: frozenset[str]
    max_results: int
    hint_budget: int | None


def default_message_key(message: str) -> str:
    """The manual-use key: ``text-`` and 16 hex digits of the message's hash."""
    digest = hashlib.blake2b(message.encode("utf-8", "surrogatepass"), digest_size=8)
    return "text-" + digest.hexdigest()


def check(req: PreflightRequest) -> Checked:
    """The request's identifiers and visible keys checked (its types, the message size and the
    numeric bounds were checked when it was parsed)."""
    # Read as the archive is read (imports replace lone surrogates too): a message cut inside
    # an emoji still gets its decision, and the text kept with it can be stored.
    message = without_lone_surrogates(req.message)
    session = check_id(req.session or "", "session id")
    key = req.message_key or default_message_key(message)
    check_id(key, "messageKey", MAX_MESSAGE_KEY_BYTES)
    visible = req.exclude_visible_source_keys or ()
    if len(visible) > MAX_EXCLUDED_KEYS:
        raise LimitExceeded(
            f"excludeVisibleSourceKeys has {len(visible)} ids; the limit is {MAX_EXCLUDED_KEYS}"
        )
    if sum(len(v.encode("utf-8", "surrogatepass")) for v in visible) > MAX_EXCLUDED_BYTES:
        raise LimitExceeded("excludeVisibleSourceKeys exceeds 1 MiB of ids")
    return Checked(
        message, session, key, frozenset(visible), req.max_results, req.hint_budget_tokens
    )


def said(message: str, *, scrub: bool) -> tuple[str | None, str | None]:
    """What the decision keeps of the user's message: ``(text, withheld reason)``.

    Secrets are replaced as imports replace them (:func:`cwcore.importers.scrub.scrub_text`)
    when ``scrub``; the text is cut to :data:`SAID_MAX_CHARS` characters (``…`` marks a cut).
    A registered privacy policy (:mod:`cwcore.hints.privacy`) that prohibits the text — or
    raises — withholds it: ``(None, "privacy:<reason>")``."""
    text = message[:SAID_SCRUB_CHARS]
    if scrub:
        text = scrub_text(text)
    if len(text) > SAID_MAX_CHARS or len(message) > SAID_SCRUB_CHARS:
        text = text[: SAID_MAX_CHARS - 1] + "…"
    try:
        finding = privacy.classify(text, {"kind": "user-message", "role": "user"})
    except Exception as exc:  # a failing policy withholds the text, never fails the call
        return None, f"privacy-failed:{type(exc).__name__}"
    if finding is not None:
        return None, f"privacy:{finding.reason}"
    return text, None


def resolve_session(engine: SearchServices, req: Checked) -> Checked:
    """``req`` with its session resolved: a full id, native id or ``<agent>:<id>`` as
    :func:`cwcore.store.identity.resolve` names it, or a unique prefix of 4+ characters. An id
    that names no session stays as given; an ambiguous prefix raises :class:`NotFound`."""
    try:
        found = identity.resolve_prefix(engine.store, req.session)
    except NotFound:
        raise
    except Exception as exc:  # a broken store read: decide under the id as given (fail open)
        log.warning("preflight could not resolve the session: %s", type(exc).__name__)
        return req
    return req if found is None or found == req.session else replace(req, session=found)


def _response(record: dict[str, Any], *, was_frozen: bool, started: float) -> PreflightDecision:
    """The answer for a decision record (as built, or as read back from the store): its
    diagnostics with whether it came frozen and the whole call's time (ms) appended."""
    diagnostics = replace(
        Diagnostics.from_json(record.get("diagnostics") or {}),
        frozen=was_frozen,
        call_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    return PreflightDecision(
        outcome=record["outcome"],
        hint=record.get("hint"),
        message_key=record["messageKey"],
        session=record["session"],
        query_hash=record.get("queryHash"),
        generation=record.get("generation"),
        tokens=int(record.get("tokens") or 0),
        frozen=was_frozen,
        diagnostics=diagnostics,
    )


def preflight(
    engine: SearchServices, request: PreflightRequest, *, prefixes: bool = True
) -> PreflightDecision:
    """Validate, return the frozen decision if there is one, else decide, freeze and return.

    ``prefixes`` resolves a session-id prefix first (:func:`resolve_session`); hooks, which
    always send the host's full id, pass False and skip the scan of session ids an id not yet
    imported would cost."""
    req = check(request)
    started = time.perf_counter()
    store = engine.store
    if prefixes:
        req = resolve_session(engine, req)
    try:
        now = clock.now()
        existing = frozen.frozen(store, req.session, req.message_key)
        if existing is not None:
            frozen.touch(store, req.session, now)
            log.info("preflight frozen outcome=%s", existing.get("outcome"))
            return _response(existing, was_frozen=True, started=started)
    except Exception as exc:  # fail open: a broken store read gives no hint, never an error
        log.warning("preflight failed before deciding: %s", type(exc).__name__)
        return _response(_failed(req, None, None, started), was_frozen=False, started=started)
    generation: int | None = None
    query: Query | None = None
    kept = said(req.message, scrub=bool(getattr(engine.settings, "scrub_secrets", True)))
    try:
        gen = derived.generation(store)
        generation = int(gen["n"])
        query = extract(req.message)
        record = _decide(engine, req, query, gen, now, started)
    except Exception as exc:
        log.warning("preflight failed: %s", type(exc).__name__)
        record = _failed(req, query, generation, started)
    _keep_said(record, kept)
    try:
        stored = frozen.freeze(
            store,
            record,
            exposure_until=(
                frozen.exposure_until(now, engine.settings) if record.get("hint") else None
            ),
            now=now,
            active_budget=engine.settings.hint_active_tokens,
        )
    except Exception as exc:  # could not persist: still no error, and no unfrozen bytes
        log.warning("preflight could not freeze: %s", type(exc).__name__)
        stored = _failed(req, query, generation, started)
        _keep_said(stored, kept)
    diag = stored.get("diagnostics") or {}
    log.info(
        "preflight outcome=%s candidates=%s tokens=%s ms=%.2f",
        stored["outcome"],
        (diag.get("counts") or {}).get("candidates", 0),
        stored.get("tokens", 0),
        (time.perf_counter() - started) * 1000,
    )
    try:
        return _response(stored, was_frozen=False, started=started)
    except Exception as exc:  # diagnostics that do not read back: still an answer, never an error
        log.warning("preflight could not answer its decision: %s", type(exc).__name__)
        failed = _failed(req, query, generation, started)
        return _response(failed, was_frozen=False, started=started)


def _keep_said(record: dict[str, Any], kept: tuple[str | None, str | None]) -> None:
    """Add what the user said to a decision record (``saidWithheld`` only when withheld)."""
    record["said"] = kept[0]
    if kept[1] is not None:
        record["saidWithheld"] = kept[1]


def _failed(
    req: Checked, query: Query | None, generation: int | None, started: float
) -> dict[str, Any]:
    return {
        "session": req.session,
        "messageKey": req.message_key,
        "outcome": "failed",
        "hint": None,
        "tokens": 0,
        "bytes": 0,
        "queryHash": query.hash() if query is not None and not query.empty else None,
        "generation": generation,
        "createdAt": clock.iso(clock.now()),
        "reason": "failed",
        "diagnostics": {
            "reason": "failed",
            "latencyMs": round((time.perf_counter() - started) * 1000, 3),
        },
    }


def _decide(
    engine: SearchServices,
    req: Checked,
    query: Query,
    gen: Generation,
    now_dt: Any,
    started: float,
) -> dict[str, Any]:
    store, reader, settings = engine.store, engine.reader, engine.settings
    generation = int(gen["n"])
    record: dict[str, Any] = {
        "session": req.session,
        "messageKey": req.message_key,
        "queryHash": None if query.empty else query.hash(),
        "generation": generation,
        "createdAt": clock.iso(now_dt),
        "hint": None,
        "tokens": 0,
        "bytes": 0,
        "source": None,
    }
    units = {"identifier": 0, "phrase": 0, "keyword": 0}
    for u in query.units:
        units[u.group] += 1
    diag: dict[str, Any] = {
        "units": units,
        "historicalIntent": query.historical,
        "counts": {},
        "retrieved": [],
        "included": [],
        "excluded": [],
    }
    record["diagnostics"] = diag

    def finish(outcome: str, reason: str) -> dict[str, Any]:
        record["outcome"], record["reason"] = outcome, reason
        diag["reason"] = reason
        diag["latencyMs"] = round((time.perf_counter() - started) * 1000, 3)
        return record

    if query.empty:
        return finish("no-query", query.reason or "no-topic")
    try:
        session_record = reader.session(req.session)
    except NotFound:
        return finish("none", "unknown-session")
    project = session_record["project"]
    lineage_ids = list(dict.fromkeys([req.session, *(session_record.get("lineage") or [])]))
    now = now_dt.timestamp()
    conversation_max_s = settings.conversation_max_age_days * 86400
    tool_max_s = settings.tool_payload_max_age_days * 86400
    index = engine.indexer.bm25
    allowed = allowed_rows(
        store,
        index,
        lineage_ids,
        generation,
        now=now,
        conversation_max_s=conversation_max_s,
        tool_max_s=tool_max_s,
        visible=req.visible,
    )
    visible = Visible(
        store,
        reader,
        Scope(frozenset(lineage_ids), project, SearchRequest()),
        int(gen.get("maxWid", 0)),
    )
    exposures = frozen.Exposures(store, reader, req.session, lineage_ids)
    retrieved = retrieve(
        store,
        index,
        reader,
        visible,
        query,
        allowed,
        session=req.session,
        now=now,
        conversation_max_s=conversation_max_s,
        tool_max_s=tool_max_s,
        max_results=req.max_results,
        suppressed=lambda ev: exposures.suppressed(ev.document_id, now_dt),
        lineage=frozenset(lineage_ids),
    )
    counts = {
        "lineageSessions": len(lineage_ids),
        "branch": allowed.branch,
        "allowed": len(allowed.wids),
        "stale": allowed.stale,
        "durable": allowed.durable,
        "visible": allowed.visible,
        "alternateBranchCandidates": retrieved.alternate_branch,
        **retrieved.counts,
    }
    diag["counts"] = counts
    if retrieved.warnings:
        diag["warnings"] = retrieved.warnings
    diag["retrieved"] = [ev.diagnostic() for ev in retrieved.ranked]
    diag["excluded"] = [ev.diagnostic() for ev in retrieved.excluded]
    decision = gate.decide(query, retrieved.ranked)
    diag["gate"] = {
        "strong": bool(decision.top and decision.top.strong),
        "margin": decision.margin,
        "ambiguous": decision.ambiguous,
        "thresholds": {
            "minMatchedUnits": MIN_MATCHED,
            "coverage": COVERAGE_MIN,
            "maxNormalizedIdf": IDF_MIN,
            "ambiguityMargin": gate.AMBIGUITY_MARGIN,
        },
    }
    if decision.outcome not in ("excerpt", "marker") or decision.top is None:
        return finish(decision.outcome, decision.reason)

    top = decision.top
    message_budget = settings.hint_message_budget
    if req.hint_budget is not None:
        message_budget = min(message_budget, req.hint_budget)
    active_used = frozen.active_tokens(store, req.session, exclude=req.message_key)
    available = max(0, min(message_budget, settings.hint_active_tokens - active_used))
    diag["budget"] = {
        "message": message_budget,
        "active": settings.hint_active_tokens,
        "activeUsed": active_used,
        "available": available,
    }
    outcome, reason = decision.outcome, decision.reason
    hint: str | None = None
    if outcome == "excerpt":
        finding = privacy.classify(
            top.text,
            {
                "documentId": top.document_id,
                "messageKey": top.message_key,
                "session": top.record["session"],
                "kind": top.record["kind"],
                "role": top.role,
            },
        )
        if finding is not None:
            diag["excluded"].append(
                {
                    "id": top.source_id,
                    "classification": finding.classification,
                    "reason": f"privacy:{finding.reason}",
                }
            )
            diag["retrieved"] = [r for r in diag["retrieved"] if r["id"] != top.source_id]
            return finish("none", "privacy")
        hint = render.excerpt(
            text=top.text,
            match_at=top.match_at,
            match_end=top.match_end,
            source=top.document_id,
            timestamp=top.timestamp,
            role=top.role,
            tool=top.tool,
            score=top.score,
            reason=top.reason,
            budget=available,
        )
        if hint is None:
            outcome, reason = "marker", "budget:excerpt-to-marker"
    if outcome == "marker":
        hint = render.marker(gate.marker_phrases(query, top), available)
    if hint is None:
        return finish("none", "budget")
    tokens = estimate(hint)
    record.update(
        {
            "hint": hint,
            "tokens": tokens,
            "bytes": len(hint.encode("utf-8", "surrogatepass")),
            "source": top.document_id,
        }
    )
    diag["included"] = [_included(top, outcome, tokens, req.message_key)]
    return finish(outcome, reason)


def _included(top: Evidence, outcome: str, tokens: int, group: str) -> dict[str, Any]:
    """The manifest entry of the shown item: ids, classification, score, tokens, priority."""
    return {
        "id": top.source_id,
        "kind": "retrieval",
        "classification": "historical-evidence" if outcome == "excerpt" else "continuity-marker",
        "score": round(top.score, 2),
        "matchType": top.match_type,
        "tokens": tokens,
        "priority": PRIORITY["retrieved"],
        "group": group,
        "reason": top.reason,
    }
