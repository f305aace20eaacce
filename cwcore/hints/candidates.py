"""Preflight candidates: exact and BM25 rows of the verified lineage, verified and ranked.

Literal lookups, BM25, verification, ranking and de-duplication. Only exact postings and BM25
are consulted — no embeddings, reranker, expansion or importance prior, so a frozen decision
depends on the index alone. Steps:

1. Case-sensitive literal lookups for each identifier and phrase of the query (exact postings)
   and one BM25 query over the query's terms, both restricted to the allowed rows
   (:mod:`cwcore.hints.lineage`: lineage, age, kind and visibility filters before any limit).
   The exact lookups are authoritative: if they fail, the whole preflight fails (``failed``,
   no hint). If BM25 fails, its rows are lost but the exact rows stay (a hint may still come
   from them) and the diagnostics record a ``lexical-failed:<error type>`` warning.
2. The best rows by a cheap preliminary order are read (at most :data:`VERIFY` windows) and
   their matches verified in the text: literals case-sensitively on identifier boundaries, terms
   on word boundaries with Latin accent folding — a keyword prefix inside a longer word is no
   match. A row with no verified identifier, phrase or term match is dropped: FTS order, role,
   recency or unused budget never qualify a row on their own.
3. Each row becomes the source *message* holding the most matched units (the evidence unit a
   hint can quote), ranked by the deterministic score below, then de-duplicated on normalized
   text (the higher-ranked/newer copy stays).

Score (diagnostic, not a probability)::

    exact identifier 100 | exact phrase 85 | FTS match 60          (the best evidence only)
    + 40 per extra distinct matched unit, at most 80 (second and third)
    + 15 active branch (the current session itself, not an ancestor)
    + 12 per matched path, 10 per matched symbol, 12 per matched error
    + 8 user authority | 5 assistant authority
    + 0..8 recency (linear over the source's age limit)
    - 0..12 token penalty (12 at 1,500 estimated tokens and above)

Literal identifiers precede literal phrases, which precede other rows regardless of score
(``tier`` 0, 1, 2); within a tier: score descending, timestamp descending, then source id. The
*normalized* score divides by the most this query could score, for the ambiguity margin.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cwcore.clock import parse_time
from cwcore.hints.lineage import DURABLE_KINDS, Allowed, exact_wids
from cwcore.hints.query import Query
from cwcore.index.derived import StoredWindow
from cwcore.retrieve.candidates import Visible
from cwcore.retrieve.lexical import lexical_candidates
from cwcore.store.reader import Reader
from cwcore.store.records import Manifest
from cwcore.text.tokenize import fold, tokens_with_offsets

log = logging.getLogger("cw.hints")

#: Windows read and verified per preflight (the best by the preliminary order).
VERIFY = 8
#: Exact postings kept per literal unit (newest first).
EXACT_PER_UNIT = 64
#: BM25 rows asked for.
LEXICAL_K = 10

BASE = {"identifier": 100.0, "phrase": 85.0, "keyword": 60.0}
EXTRA_MATCH = 40.0
EXTRA_MAX = 80.0
ACTIVE_BRANCH = 15.0
SAME = {"path": 12.0, "symbol": 10.0, "backtick": 10.0, "error": 12.0}
AUTHORITY = {"user": 8.0, "assistant": 5.0}
RECENCY_MAX = 8.0
TOKEN_PENALTY_MAX = 12.0
TOKEN_PENALTY_AT = 1_500
TIER = {"identifier": 0, "phrase": 1, "keyword": 2}
MATCH_TYPE = {
    "error": "exact-error",
    "path": "exact-path",
    "symbol": "exact-symbol",
    "backtick": "exact-symbol",
    "flag": "exact-symbol",
    "commit": "exact-value",
    "value": "exact-value",
    "phrase": "exact-phrase",
}


@dataclass
class Evidence:
    """One candidate row: a window, then (after verification) its source message."""

    wid: int
    record: StoredWindow
    exact_units: set[int] = field(default_factory=set)
    bm25_terms: set[str] = field(default_factory=set)
    bm25_raw: float = 0.0
    # Filled by verification:
    message_key: str = ""
    role: str = ""
    tool: bool = False
    timestamp: str = ""
    text: str = ""  # the source message's text inside the window
    match_at: int = 0  # the anchor's first character, offset into ``text``
    match_end: int | None = None  # the anchor's end when it is a literal span; else inferred
    literal_units: list[int] = field(default_factory=list)
    matched_units: list[int] = field(default_factory=list)
    coverage: float = 0.0
    max_idf: float = 0.0
    strong: bool = False
    tier: int = 2
    score: float = 0.0
    norm: float = 0.0
    match_type: str = "lexical"
    reason: str = ""
    excluded: str | None = None

    @property
    def document_id(self) -> str:
        return str(self.record["documentId"])

    @property
    def source_id(self) -> str:
        """The canonical source entry: document and message key."""
        return f"{self.record['documentId']}#{self.message_key}"

    def preliminary(self) -> tuple[int, int, float, int]:
        tier = 0 if self.exact_units else 2
        return (tier, -(len(self.exact_units) + len(self.bm25_terms)), -self.bm25_raw, -self.wid)

    def diagnostic(self) -> dict[str, Any]:
        """What diagnostics keep of a row: ids, numbers and reasons — never text or terms."""
        body: dict[str, Any] = {
            "id": self.source_id if self.message_key else f"{self.document_id}@w{self.wid}",
            "documentId": self.document_id,
            "session": self.record["session"],
            "kind": self.record["kind"],
            "role": self.role or None,
            "timestamp": self.timestamp or self.record["created"],
            "score": round(self.score, 2),
            "normalized": round(self.norm, 4),
            "tier": self.tier,
            "matchType": self.match_type,
            "matchedUnits": len(self.matched_units),
            "coverage": round(self.coverage, 3),
            "maxIdf": round(self.max_idf, 3),
            "strong": self.strong,
        }
        if self.excluded:
            body["reason"] = self.excluded
        return body


@dataclass
class Retrieved:
    """Ranked eligible rows and the excluded ones, with counts for diagnostics; ``warnings``
    names a stage that failed without failing the call (``lexical-failed:<error type>``)."""

    ranked: list[Evidence]
    excluded: list[Evidence]
    counts: dict[str, int]
    max_score: float
    warnings: list[str] = field(default_factory=list)
    #: Rows of a session outside the lineage rejected after the lookups (spec 001's
    #: ``alternateBranchCandidates``; normally 0, the lookups being restricted to the lineage).
    alternate_branch: int = 0


def gather(
    store: Any,
    index: Any,
    visible: Visible,
    query: Query,
    allowed: Allowed,
    warnings: list[str] | None = None,
    lineage: frozenset[str] | None = None,
    alternate: list[int] | None = None,
) -> tuple[dict[int, Evidence], dict[str, float], int]:
    """Exact and BM25 rows of the allowed set; returns ``(rows by wid, idf by term, N)``.

    With ``lineage``, an exact posting the scope filter rejects because its window belongs to
    a session outside the lineage is a defensive post-query rejection: its wid is appended to
    ``alternate`` (spec 001's ``alternateBranchCandidates``; the lookups are restricted to the
    lineage's rows, so normally none). BM25 applies the restriction inside its scorer
    (``only=``), before any row is returned, so it has no rows to reject.

    The exact lookups are authoritative: their failure propagates, and the caller fails the
    whole call. A failing BM25 stage only loses its own rows: the exact rows are kept and
    ``lexical-failed:<error type>`` is appended to ``warnings``."""
    rows: dict[int, Evidence] = {}
    if not len(allowed.wids):
        return rows, {}, 0
    for i, unit in enumerate(query.units):
        if not unit.literal_match:
            continue
        wids = exact_wids(store, unit.literal, allowed)[:EXACT_PER_UNIT]
        kept = visible.filter(wids)
        if lineage is not None and alternate is not None and len(kept) < len(wids):
            for wid in set(wids) - set(kept):
                other = visible.records.get(wid)
                if other is not None and other["session"] not in lineage and wid not in alternate:
                    alternate.append(wid)
        for wid in kept:
            record = visible.records[wid]
            assert record is not None
            rows.setdefault(wid, Evidence(wid, record)).exact_units.add(i)
    idfs: dict[str, float] = {}
    terms = query.terms
    if not terms:
        return rows, idfs, 0
    try:
        found, idfs = lexical_candidates(index, visible, terms, k=LEXICAL_K, only=allowed.wids)
        n_docs = int(index.manifest().live_docs)
    except Exception as exc:  # BM25 is a second opinion: its failure keeps the exact rows
        log.warning("preflight lexical stage failed: %s", type(exc).__name__)
        if warnings is not None:
            warnings.append(f"lexical-failed:{type(exc).__name__}")
        return rows, {}, 0
    for cand in found:
        record = visible.records.get(cand.wid)
        if record is None:
            continue
        ev = rows.setdefault(cand.wid, Evidence(cand.wid, record))
        ev.bm25_terms.update(cand.matched_terms)
        ev.bm25_raw = cand.raw
    return rows, idfs, n_docs


def normalized_idf(idf: float, n_docs: int) -> float:
    """An idf divided by the idf of a term found in one row (the rarest possible), in [0, 1]."""
    if n_docs <= 0:
        return 0.0
    top = math.log1p((n_docs - 1 + 0.5) / 1.5)
    return max(0.0, min(1.0, idf / top)) if top > 0 else 0.0


def _literal_spans(text: str, literal: str, limit: int = 16) -> list[tuple[int, int]]:
    """Case-sensitive occurrences of ``literal`` not glued to a longer identifier."""
    out: list[tuple[int, int]] = []
    glue_before = literal[:1].isalnum() or literal[:1] == "_"
    glue_after = literal[-1:].isalnum() or literal[-1:] == "_"
    pos = text.find(literal)
    while pos != -1 and len(out) < limit:
        end = pos + len(literal)
        before = text[pos - 1] if pos > 0 else " "
        after = text[end] if end < len(text) else " "
        if not (glue_before and (before.isalnum() or before == "_")) and not (
            glue_after and (after.isalnum() or after == "_")
        ):
            out.append((pos, end))
        pos = text.find(literal, pos + 1)
    return out


def _term_spans(text: str, terms: tuple[str, ...]) -> list[tuple[int, str]]:
    """``(position, folded term)`` of word-bounded, accent-folded term occurrences."""
    if not terms:
        return []
    wanted = set(terms)
    if not text.isascii() or not all(t.isascii() for t in wanted):
        return [(s, t) for t, s, _ in tokens_with_offsets(text) if t in wanted][:512]
    # ASCII: lower-casing keeps positions, so a plain search with word-boundary checks finds
    # what the tokenizer would (a term is whole: no letter or digit on either side).
    low = text.lower()
    out = []
    for term in wanted:
        pos = low.find(term)
        found = 0
        while pos != -1 and found < 32:
            end = pos + len(term)
            if (pos == 0 or not low[pos - 1].isalnum()) and (
                end >= len(low) or not low[end].isalnum()
            ):
                out.append((pos, term))
                found += 1
            pos = low.find(term, pos + 1)
    out.sort()
    return out


def is_tool(part: dict[str, Any], record: StoredWindow) -> bool:
    """Whether a message part is a tool payload (the 7-day age limit applies to it)."""
    return (
        part.get("role") == "tool"
        or part.get("kind") == "tool-result"
        or record["kind"] == "tool-result"
    )


def verify(
    ev: Evidence,
    reader: Reader,
    query: Query,
    manifests: dict[tuple[str, int], Manifest],
    fresh: Callable[[dict[str, Any], StoredWindow], bool] | None = None,
) -> bool:
    """Read the row, find its matches and pick its source message; False when nothing of the
    query verifiably occurs in it. With ``fresh(part, record)`` (within its age limit?), the
    source message is picked among the fresh matched parts when there is one: a stale tool
    output holding more matches does not hide an eligible conversation message of the same
    window. With none fresh, the best part is picked anyway (the caller drops it as stale)."""
    record = ev.record
    ident = (record["documentId"], int(record["version"]))
    manifest = manifests.get(ident)
    if manifest is None:
        manifest = manifests[ident] = reader.manifest(*ident)
    bstart, bend = int(record["byteStart"]), int(record["byteEnd"])
    data = reader.read_bytes(manifest, bstart, bend)
    text = data.decode("utf-8", "surrogatepass")
    # Message parts inside the window, as character ranges of ``text``.
    parts: list[tuple[int, int, dict[str, Any]]] = []
    for part in manifest["parts"]:
        lo, hi = max(bstart, int(part["start"])), min(bend, int(part["end"]))
        if lo >= hi or part.get("kind") == "thinking":
            continue
        c0 = len(data[: lo - bstart].decode("utf-8", "surrogatepass"))
        c1 = c0 + len(data[lo - bstart : hi - bstart].decode("utf-8", "surrogatepass"))
        parts.append((c0, c1, part))
    if not parts:
        return False
    starts = [p[0] for p in parts]

    def part_of(pos: int) -> int:
        i = bisect.bisect_right(starts, pos) - 1
        return i if i >= 0 and pos < parts[i][1] else -1

    units = query.units
    hits: dict[int, dict[int, int]] = {}  # part index -> unit index -> first position
    literal: dict[int, dict[int, tuple[int, int]]] = {}  # part -> unit -> first literal span
    term_units: dict[str, list[int]] = {}
    for i, unit in enumerate(units):
        if unit.literal_match:
            for s, e in _literal_spans(text, unit.literal):
                p = part_of(s)
                if p >= 0 and e <= parts[p][1]:
                    hits.setdefault(p, {}).setdefault(i, s)
                    literal.setdefault(p, {}).setdefault(i, (s, e))
        for t in unit.terms:
            term_units.setdefault(t, []).append(i)
    found_terms: dict[int, dict[str, int]] = {}
    for pos, term in _term_spans(text, tuple(term_units)):
        p = part_of(pos)
        if p >= 0:
            found_terms.setdefault(p, {}).setdefault(term, pos)
    for p, seen in found_terms.items():
        for i, unit in enumerate(units):
            if unit.group == "phrase":
                if all(t in seen for t in unit.terms):
                    pos = min(seen[t] for t in unit.terms)
                    hits.setdefault(p, {}).setdefault(i, pos)
            elif unit.terms and unit.terms[0] in seen:
                hits.setdefault(p, {}).setdefault(i, seen[unit.terms[0]])
    if not hits:
        return False
    if fresh is not None:
        eligible = {p: h for p, h in hits.items() if fresh(parts[p][2], record)}
        if eligible:
            hits = eligible
    # The source message: most matched units, then literal matches, then the earliest.
    best = min(
        hits,
        key=lambda p: (-len(hits[p]), -len(literal.get(p, ())), min(hits[p].values())),
    )
    c0, c1, part = parts[best]
    ev.message_key = str(part["key"])
    ev.role = str(part.get("role") or "")
    ev.tool = is_tool(part, record)
    ev.timestamp = str(part.get("ts") or record["created"])
    ev.text = text[c0:c1]
    spans = literal.get(best, {})
    if spans:
        # The anchor is the longest literal the message shares with the query (an identifier
        # or a phrase, at its first occurrence), never a common word that happened to occur
        # earlier: the excerpt is cut around it and must hold it whole.
        s, e = max(spans.values(), key=lambda se: (se[1] - se[0], -se[0]))
        ev.match_at, ev.match_end = s - c0, e - c0
    else:
        ev.match_at, ev.match_end = min(hits[best].values()) - c0, None
    ev.matched_units = sorted(hits[best])
    ev.literal_units = sorted(spans)
    return True


def score(
    ev: Evidence,
    query: Query,
    session: str,
    idfs: dict[str, float],
    n_docs: int,
    now: float,
    age_limit_s: float,
) -> None:
    """The deterministic score, tier, coverage, IDF and strength of a verified row."""
    units = query.units
    lit = [units[i] for i in ev.literal_units]
    groups = {u.group for u in lit}
    best = "identifier" if "identifier" in groups else "phrase" if "phrase" in groups else None
    ev.tier = TIER[best] if best else TIER["keyword"]
    base = BASE[best] if best else BASE["keyword"]
    extra = min(EXTRA_MAX, EXTRA_MATCH * max(0, len(ev.matched_units) - 1))
    same = sum(SAME.get(u.kind, 0.0) for u in lit)
    branch = ACTIVE_BRANCH if ev.record["session"] == session else 0.0
    authority = AUTHORITY.get(ev.role, 0.0)
    age = max(0.0, now - parse_time(ev.timestamp).timestamp())
    recency = RECENCY_MAX * max(0.0, 1.0 - age / age_limit_s) if age_limit_s > 0 else 0.0
    penalty = TOKEN_PENALTY_MAX * min(1.0, (len(ev.text) / 4) / TOKEN_PENALTY_AT)
    ev.score = round(base + extra + same + branch + authority + recency - penalty, 4)
    ev.coverage = len(ev.matched_units) / len(units) if units else 0.0
    matched_terms = [t for i in ev.matched_units for t in units[i].terms]
    ev.max_idf = max((normalized_idf(idfs.get(t, 0.0), n_docs) for t in matched_terms), default=0.0)
    if ev.literal_units:
        top = min(ev.literal_units, key=lambda i: TIER[units[i].group])
        ev.match_type = MATCH_TYPE.get(units[top].kind, "exact-phrase")
    else:
        ev.match_type = "lexical"
    ev.strong = is_strong(bool(ev.literal_units), len(ev.matched_units), ev.coverage, ev.max_idf)
    # Short on purpose: the excerpt hint shows it, and every token of framing is budget.
    reasons = []
    if ev.literal_units:
        reasons.append(f"exact {best}")
    reasons.append(f"{len(ev.matched_units)}/{len(units)} units")
    ev.reason = ", ".join(reasons)


#: Strong lexical evidence: at least two matched units, coverage and max IDF (thresholds
#: calibrated on this repository's own data).
MIN_MATCHED = 2
COVERAGE_MIN = 0.60
IDF_MIN = 0.60


def is_strong(literal: bool, matched: int, coverage: float, max_idf: float) -> bool:
    """Strong evidence: a verbatim exact anchor, or at least :data:`MIN_MATCHED`
    matched units with coverage ≥ :data:`COVERAGE_MIN` and max normalized IDF ≥
    :data:`IDF_MIN`."""
    return literal or (matched >= MIN_MATCHED and coverage >= COVERAGE_MIN and max_idf >= IDF_MIN)


def max_score(query: Query) -> float:
    """The most a row could score for ``query`` (the normalization of the ambiguity margin)."""
    groups = {u.group for u in query.units}
    base = max(BASE[g] for g in groups) if groups else BASE["keyword"]
    extra = min(EXTRA_MAX, EXTRA_MATCH * max(0, len(query.units) - 1))
    same = sum(SAME.get(u.kind, 0.0) for u in query.units if u.literal_match)
    return base + extra + same + ACTIVE_BRANCH + max(AUTHORITY.values()) + RECENCY_MAX


def text_key(text: str) -> str:
    """Normalized identical text: folded, white space collapsed."""
    return hashlib.blake2b(fold(" ".join(text.split())).encode(), digest_size=12).hexdigest()


def retrieve(
    store: Any,
    index: Any,
    reader: Reader,
    visible: Visible,
    query: Query,
    allowed: Allowed,
    *,
    session: str,
    now: float,
    conversation_max_s: float,
    tool_max_s: float,
    max_results: int,
    suppressed: Callable[[Evidence], str | None] = lambda ev: None,
    lineage: frozenset[str] | None = None,
) -> Retrieved:
    """Candidates of the query, verified and ranked (see the module docstring). With
    ``lineage``, a row of any other session that a lookup returned is rejected and counted
    (``Retrieved.alternate_branch``) — a defensive check: the lookups only search the lineage's
    rows, so it stays 0 unless a lookup misbehaves."""
    warnings: list[str] = []
    rejected: list[int] = []
    rows, idfs, n_docs = gather(
        store, index, visible, query, allowed, warnings, lineage=lineage, alternate=rejected
    )
    if lineage is not None:  # rows the scope filter let through from elsewhere (it should not)
        for wid in [w for w, ev in rows.items() if ev.record["session"] not in lineage]:
            del rows[wid]
            rejected.append(wid)
    alternate = len(rejected)
    counts = {
        "exact": sum(1 for r in rows.values() if r.exact_units),
        "lexical": sum(1 for r in rows.values() if r.bm25_terms),
        "candidates": len(rows),
        "verified": 0,
        "unverified": 0,
        "dedup": 0,
    }
    excluded: list[Evidence] = []
    ordered = sorted(rows.values(), key=Evidence.preliminary)
    manifests: dict[tuple[str, int], Manifest] = {}
    verified: list[Evidence] = []

    def fresh(part: dict[str, Any], record: StoredWindow) -> bool:
        limit = tool_max_s if is_tool(part, record) else conversation_max_s
        return now - parse_time(str(part.get("ts") or record["created"])).timestamp() <= limit

    for ev in ordered[:VERIFY]:
        if ev.record["kind"] in DURABLE_KINDS:
            ev.excluded = "durable-archive"
            excluded.append(ev)
            continue
        if not verify(ev, reader, query, manifests, fresh):
            counts["unverified"] += 1
            ev.excluded = "unverified"
            excluded.append(ev)
            continue
        limit = tool_max_s if ev.tool else conversation_max_s
        if now - parse_time(ev.timestamp).timestamp() > limit:
            ev.excluded = "stale:tool-payload" if ev.tool else "stale"
            excluded.append(ev)
            continue
        score(ev, query, session, idfs, n_docs, now, limit)
        verified.append(ev)
    counts["verified"] = len(verified)
    top = max_score(query)
    for ev in verified:
        ev.norm = round(ev.score / top, 4) if top else 0.0
    verified.sort(
        key=lambda e: (e.tier, -e.score, -parse_time(e.timestamp).timestamp(), e.source_id)
    )
    ranked: list[Evidence] = []
    seen_text: set[str] = set()
    seen_source: set[str] = set()
    for ev in verified:
        key = text_key(ev.text)
        if key in seen_text or ev.source_id in seen_source:
            counts["dedup"] += 1
            ev.excluded = "duplicate"
            excluded.append(ev)
            continue
        seen_text.add(key)
        seen_source.add(ev.source_id)
        reason = suppressed(ev)
        if reason:
            counts["suppressed"] = counts.get("suppressed", 0) + 1
            ev.excluded = reason
            excluded.append(ev)
            continue
        ranked.append(ev)
    for ev in ranked[max_results:]:
        ev.excluded = "max-results"
        excluded.append(ev)
    return Retrieved(ranked[:max_results], excluded, counts, top, warnings, alternate)
