"""The document importance prior at query time (explicit search and gather only).

The stored intrinsic prior (``importance-v1``: decision candidate, pin, referenced-by count; see
docs/indexing.md) times the live recall counter of the local relevance-feedback log (each recall
of a searched document adds 2 %, at most five times), capped at 1.15×. The shares and caps are
fields of :class:`~cwcore.retrieve.params.RetrievalParams` (``importance_cap``, ``recall_step``,
``recall_max``, ``recency_bonus``, ``lineage_step``, ``lineage_max``). It multiplies the fused
order only: it reorders near-ties, never a strong relevance gap, and never a presented score.
"""

from __future__ import annotations

from cwcore.index import derived
from cwcore.index.derived import StoredWindow
from cwcore.retrieve.params import DEFAULT, RetrievalParams
from cwcore.store import keys
from cwcore.store.rocks import Store

FEEDBACK = keys.RECALL_FEEDBACK


def importance(
    store: Store, ordinals: list[int], params: RetrievalParams = DEFAULT
) -> dict[int, float]:
    """The prior of each ordinal: stored prior × live recall counter, capped at
    ``params.importance_cap`` (1.15)."""
    # The namespace prefix is encoded once; a u32 field is 4 big-endian bytes.
    base = derived.IMPORTANCE.prefix(derived.IMPORTANCE_NAMESPACE)
    raws = store.get_many("importance", [base + o.to_bytes(4, "big") for o in ordinals])
    counts = store.get_many("feedback", derived.u32_keys(FEEDBACK, ordinals))
    out = {}
    for ordinal, raw, count in zip(ordinals, raws, counts, strict=True):
        prior = derived.unpack_float(raw) if raw else 1.0
        recalled = int.from_bytes(count, "big") if count else 0
        boost = 1 + params.recall_step * min(recalled, params.recall_max)
        out[ordinal] = min(params.importance_cap, prior * boost)
    return out


def context_prior(
    records: dict[int, StoredWindow], depth: dict[str, int], params: RetrievalParams = DEFAULT
) -> dict[int, float]:
    """A multiplier per window id for recency among ``records`` and lineage depth: context
    preferences of the fused tier, order only like the prior. The newest candidate gains at most
    ``params.recency_bonus`` over the oldest (by rank of creation time among the candidates),
    and each generation of lineage between a hit's session and the named session costs
    ``params.lineage_step`` (at most ``params.lineage_max`` generations), so the current session
    wins a near-tie with its parent."""
    created = sorted({str(r.get("created") or "") for r in records.values()})
    rank = {c: i / (len(created) - 1) for i, c in enumerate(created)} if len(created) > 1 else {}
    out = {}
    for wid, record in records.items():
        recency = rank.get(str(record.get("created") or ""), 0.0) if record.get("created") else 0.0
        generations = min(params.lineage_max, depth.get(record["session"], 0))
        out[wid] = (1.0 + params.recency_bonus * recency) * (
            1.0 - params.lineage_step * generations
        )
    return out


def record_recall(store: Store, ordinal: int) -> None:
    """The relevance-feedback log: one more recall of a searched document."""
    key = FEEDBACK.encode(ordinal)
    with store.lock:
        raw = store.get("feedback", key)
        count = (int.from_bytes(raw, "big") if raw else 0) + 1
        batch = store.batch()
        batch.put("feedback", key, count.to_bytes(8, "big"))
        store.commit(batch)
