"""The memory injection block: sections in priority order within a byte budget.

Delivered per turn as its own custom message (never by rewriting the system prompt, which would
break the provider's cached prefix). Sections in priority order, within :data:`BUDGET_BYTES`
(14 KB of UTF-8) — when a section would overflow, it is cut at the last line that fits and the
later sections are dropped (listed under ``truncated``):

1. **Hard Rules** — active, L2, confidence ≥ 0.85, ``ruleType`` in avoid_pattern /
   prefer_pattern / convention / correction; up to 8, by confidence. Prefixes: ``⚠️ AVOID:``,
   ``✓ PREFER:``, ``📌 CONVENTION:``, ``📌 RULE:``.
2. **Selected Memory** — the best-ranked relevant records (not already hard rules), with their
   layer, confidence and staleness: ``⚠️ 30d`` from 30 days since the last update, ``🔴 90d``
   from 90 (a signal to verify, never a block).
3. **Scratchpad** — open items (active records tagged ``scratchpad``), ``- [ ] …``.
4. **Contested Memory** — contested records relevant to the prompt (term overlap ≥
   :data:`CONTESTED_OVERLAP`), never among hard rules, at most 2, under the warning "Review
   before relying on them".
5. **Daily Log** — today's sessions in the archive (count, then project and last message).

Trivial prompts get no block at all: fewer than 4 characters, slash commands, and
acknowledgements (``ok``, ``yes``, ``thanks``, ``sounds good``, ``got it``, ``done``, …).

At session start (``start=True``) there is no prompt yet: the block holds what applies to any
turn — hard rules, the scratchpad and the daily log — and no prompt-relevant sections.

Besides the pipeline's traces, the result lists ``unselected``: every record that passed the
pipeline (or, for contested records, the scope processors) but is not in the block, with why —
``not-relevant``, ``selected-limit``, ``hard-rule-limit``, ``scratchpad-limit``,
``contested:not-relevant``, ``contested-limit`` or ``budget`` (its section was cut).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from cwcore import clock
from cwcore.memory import rank as rank_mod
from cwcore.memory.processors import PIPELINE, Context, run_pipeline
from cwcore.text.tokenize import fold

BUDGET_BYTES = 14 * 1024
HARD_RULE_CONFIDENCE = 0.85
HARD_RULE_LIMIT = 8
SELECTED_LIMIT = 10
SCRATCHPAD_LIMIT = 10
SCRATCHPAD_TAG = "scratchpad"
CONTESTED_LIMIT = 2
CONTESTED_OVERLAP = 0.3
DAILY_SESSIONS = 10
STALE_WARN_DAYS = 30
STALE_RED_DAYS = 90
TITLE = "# Persistent Intelligence Context"
PREFIX = {
    "avoid_pattern": "⚠️ AVOID:",
    "prefer_pattern": "✓ PREFER:",
    "convention": "📌 CONVENTION:",
    "correction": "📌 RULE:",
}
CONTESTED_WARNING = "These records are contested. Review before relying on them."

_ACKS_EN = (
    "ok", "okay", "k", "kk", "yes", "yep", "yup", "yeah", "sure", "thanks", "thank you",
    "thanks a lot", "thx", "ty", "sounds good", "got it", "done", "cool", "great", "nice",
    "perfect", "lgtm", "alright", "all right", "right", "fine", "good", "ok thanks",
    "okay thanks", "yes please", "go ahead", "continue", "proceed", "understood", "agreed",
    "makes sense", "noted", "awesome", "excellent", "👍", "🙏",
)  # fmt: skip
_ACKS_IT = (
    "si", "grazie", "grazie mille", "ok grazie", "va bene", "perfetto", "fatto", "certo",
    "esatto", "capito", "d'accordo", "benissimo", "ottimo", "bene", "procedi", "continua",
    "vai", "avanti", "perfetto grazie",
)  # fmt: skip
ACKNOWLEDGEMENTS = frozenset(fold(a) for a in _ACKS_EN + _ACKS_IT)
_PUNCT = re.compile(r"[\s.,;:!?…]+")

DailyLog = Callable[[datetime], tuple[int, list[tuple[str, str]]]]


def trivial(prompt: str) -> str | None:
    """Why ``prompt`` gets no memory block (``short``, ``slash-command``, ``acknowledgement``)."""
    text = (prompt or "").strip()
    if len(text) < 4:
        return "short"
    if text.startswith("/"):
        return "slash-command"
    normalized = _PUNCT.sub(" ", fold(text.replace("\u2019", "'"))).strip()
    if normalized in ACKNOWLEDGEMENTS:
        return "acknowledgement"
    return None


def staleness(record: dict[str, Any], now: datetime) -> str:
    days = (now - clock.parse_time(record["updated"])).days
    if days >= STALE_RED_DAYS:
        return "🔴 90d"
    if days >= STALE_WARN_DAYS:
        return "⚠️ 30d"
    return ""


def hard_rules(
    records: list[dict[str, Any]], limit: int | None = HARD_RULE_LIMIT
) -> list[dict[str, Any]]:
    """The records that qualify as hard rules, by confidence (at most ``limit``)."""
    rules = [
        r
        for r in records
        if r.get("status") == "active"
        and r.get("layer") == "L2"
        and float(r.get("confidence", 0)) >= HARD_RULE_CONFIDENCE
        and r.get("ruleType") in PREFIX
    ]
    rules.sort(key=lambda r: (-float(r["confidence"]), r["id"]))
    return rules if limit is None else rules[:limit]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def build(
    records: list[dict[str, Any]],
    prompt: str,
    *,
    profile: str | None = None,
    project: str | None = None,
    cwd: str | None = None,
    now: datetime | None = None,
    daily_log: DailyLog | None = None,
    semantic: rank_mod.SemanticRanker | None = None,
    budget: int = BUDGET_BYTES,
    start: bool = False,
) -> dict[str, Any]:
    """The injection block for one turn (``start``: the session-start block, without a
    prompt), with traces, ranking, section membership and the records left out."""
    now = now or clock.now()
    if start:
        prompt = ""
    else:
        why = trivial(prompt)
        if why is not None:
            return {"skipped": True, "reason": why, "block": None, "bytes": 0, "traces": []}
    ctx = Context.make(prompt, profile=profile, project=project, cwd=cwd)
    passed, traces = run_pipeline(records, ctx)
    # Contested records: the same scope processors, without the status filter.
    contested_pool, _ = run_pipeline(
        [r for r in records if r.get("status") == "contested"], ctx, PIPELINE[1:]
    )

    eligible = hard_rules(passed, limit=None)
    rules = eligible[:HARD_RULE_LIMIT]
    rule_ids = {r["id"] for r in rules}
    scratch_all = [r for r in passed if SCRATCHPAD_TAG in (r.get("tags") or [])]
    scratch_ids = {r["id"] for r in scratch_all}
    pool = [r for r in passed if r["id"] not in rule_ids and r["id"] not in scratch_ids]
    ranked = rank_mod.rank(prompt, pool, semantic) if prompt else rank_mod.Ranked([], "none")
    by_id = {r["id"]: r for r in pool}
    relevant = [by_id[rid] for rid, _ in ranked.order if rid in by_id]
    selected = relevant[:SELECTED_LIMIT]
    overlapping = sorted(
        (
            (rank_mod.overlap(prompt, r), r)
            for r in contested_pool
            if prompt and rank_mod.overlap(prompt, r) >= CONTESTED_OVERLAP
        ),
        key=lambda x: (-x[0], -float(x[1].get("confidence", 0)), x[1]["id"]),
    )
    contested = overlapping[:CONTESTED_LIMIT]
    scratch = sorted(scratch_all, key=lambda r: (r["created"], r["id"]))

    sections: list[tuple[str, list[str], list[str]]] = []
    if rules:
        sections.append(
            (
                "## Hard Rules",
                [
                    f"{PREFIX[r['ruleType']]} [conf {float(r['confidence']):.2f}] "
                    f"{_one_line(r['statement'])}"
                    for r in rules
                ],
                [r["id"] for r in rules],
            )
        )
    if selected:
        lines = []
        for r in selected:
            mark = staleness(r, now)
            meta = f"{r['layer']}, conf {float(r['confidence']):.2f}" + (f" {mark}" if mark else "")
            lines.append(f"- {r['id']} [{meta}] {_one_line(r['statement'])}")
        sections.append(("## Selected Memory", lines, [r["id"] for r in selected]))
    if scratch:
        sections.append(
            (
                "## Scratchpad",
                [f"- [ ] {_one_line(r['statement'])}" for r in scratch[:SCRATCHPAD_LIMIT]],
                [r["id"] for r in scratch[:SCRATCHPAD_LIMIT]],
            )
        )
    if contested:
        sections.append(
            (
                "## Contested Memory",
                [CONTESTED_WARNING]
                + [
                    f"⚠️ CONTESTED: [{r['id']}, conf {float(r['confidence']):.2f}] "
                    f"{_one_line(r['statement'])}"
                    for _, r in contested
                ],
                [r["id"] for _, r in contested],
            )
        )
    if daily_log is not None:
        count, today = daily_log(now)
        if count:
            sections.append(
                (f"## Daily Log ({now.date().isoformat()})", [f"Sessions today: {count}"], [])
            )
            sections.append(
                (
                    "## Today's Sessions",
                    [f"- [{p}] {_one_line(s)}" for p, s in today],
                    [],
                )
            )
    block, included, truncated = _assemble(sections, budget)
    left_out = _left_out(
        {rid for ids in included.values() for rid in ids},
        (
            (eligible, HARD_RULE_LIMIT, "hard-rule-limit"),
            (relevant, SELECTED_LIMIT, "selected-limit"),
            (scratch, SCRATCHPAD_LIMIT, "scratchpad-limit"),
            ([r for _, r in overlapping], CONTESTED_LIMIT, "contested-limit"),
        ),
        (
            (pool, "not-relevant"),
            (contested_pool, "contested:not-relevant"),
        ),
    )
    return {
        "skipped": False,
        "reason": None if block else "nothing-to-inject",
        "block": block,
        "bytes": len(block.encode("utf-8")) if block else 0,
        "budgetBytes": budget,
        "sections": included,
        "truncated": truncated,
        "traces": [t.to_json() for t in traces],
        "unselected": left_out,
        "ranking": {
            "mode": ranked.mode,
            "weights": {"fts": rank_mod.FTS_WEIGHT, "semantic": rank_mod.SEMANTIC_WEIGHT},
            "scores": [{"id": rid, "score": round(s, 6)} for rid, s in ranked.order],
        },
    }


def _left_out(
    shown: set[str],
    ranked_groups: tuple[tuple[list[dict[str, Any]], int, str], ...],
    pools: tuple[tuple[list[dict[str, Any]], str], ...],
) -> list[dict[str, str]]:
    """The candidates not in the block, each once with its first reason: past its section's
    limit, cut by the budget (within the limit), or not relevant to the prompt at all."""
    out: list[dict[str, str]] = []
    seen = set(shown)

    def add(record_id: str, reason: str) -> None:
        if record_id not in seen:
            seen.add(record_id)
            out.append({"id": record_id, "reason": reason})

    for group, limit, over in ranked_groups:
        for n, r in enumerate(group):
            add(r["id"], over if n >= limit else "budget")
    for pool, reason in pools:
        for r in pool:
            add(r["id"], reason)
    return out


def _assemble(
    sections: list[tuple[str, list[str], list[str]]], budget: int
) -> tuple[str | None, dict[str, list[str]], list[str]]:
    """Sections in order within ``budget`` bytes; a section that overflows is cut at its last
    fitting line and every later section is dropped."""
    if not sections:
        return None, {}, []
    out = TITLE
    size = len(out.encode("utf-8"))
    included: dict[str, list[str]] = {}
    truncated: list[str] = []
    for n, (heading, lines, ids) in enumerate(sections):
        head = "\n\n" + heading
        if size + len(head.encode("utf-8")) > budget:
            truncated += [h for h, _, _ in sections[n:]]
            break
        body = head
        kept = 0
        for line in lines:
            piece = "\n" + line
            if size + len((body + piece).encode("utf-8")) > budget:
                break
            body += piece
            kept += 1
        if kept == 0:
            truncated += [h for h, _, _ in sections[n:]]
            break
        out += body
        size = len(out.encode("utf-8"))
        name = heading.split(" (")[0].lstrip("# ")
        included[name] = (
            ids[: max(0, kept - (1 if name == "Contested Memory" else 0))] if ids else []
        )
        if kept < len(lines):
            truncated += [h for h, _, _ in sections[n:]]
            break
    return out, included, truncated
