"""The memory injection block (spec 002 "The injection block").

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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from cwcore import clock
from cwcore.index.tokenize import fold
from cwcore.memory import rank as rank_mod
from cwcore.memory.processors import PIPELINE, Context, run_pipeline

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


def hard_rules(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rules = [
        r
        for r in records
        if r.get("status") == "active"
        and r.get("layer") == "L2"
        and float(r.get("confidence", 0)) >= HARD_RULE_CONFIDENCE
        and r.get("ruleType") in PREFIX
    ]
    rules.sort(key=lambda r: (-float(r["confidence"]), r["id"]))
    return rules[:HARD_RULE_LIMIT]


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
) -> dict[str, Any]:
    """The injection block for one turn, with traces, ranking and section membership."""
    now = now or clock.now()
    why = trivial(prompt)
    if why is not None:
        return {"skipped": True, "reason": why, "block": None, "bytes": 0, "traces": []}
    ctx = Context.make(prompt, profile=profile, project=project, cwd=cwd)
    passed, traces = run_pipeline(records, ctx)
    # Contested records: the same scope processors, without the status filter.
    contested_pool, _ = run_pipeline(
        [r for r in records if r.get("status") == "contested"], ctx, PIPELINE[1:]
    )

    rules = hard_rules(passed)
    rule_ids = {r["id"] for r in rules}
    scratch = [r for r in passed if SCRATCHPAD_TAG in (r.get("tags") or [])]
    scratch_ids = {r["id"] for r in scratch}
    pool = [r for r in passed if r["id"] not in rule_ids and r["id"] not in scratch_ids]
    ranked = rank_mod.rank(prompt, pool, semantic)
    by_id = {r["id"]: r for r in pool}
    selected = [by_id[rid] for rid, _ in ranked.order if rid in by_id][:SELECTED_LIMIT]
    contested = sorted(
        (
            (rank_mod.overlap(prompt, r), r)
            for r in contested_pool
            if rank_mod.overlap(prompt, r) >= CONTESTED_OVERLAP
        ),
        key=lambda x: (-x[0], -float(x[1].get("confidence", 0)), x[1]["id"]),
    )[:CONTESTED_LIMIT]

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
        scratch = sorted(scratch, key=lambda r: (r["created"], r["id"]))[:SCRATCHPAD_LIMIT]
        sections.append(
            (
                "## Scratchpad",
                [f"- [ ] {_one_line(r['statement'])}" for r in scratch],
                [r["id"] for r in scratch],
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
    return {
        "skipped": False,
        "reason": None if block else "nothing-to-inject",
        "block": block,
        "bytes": len(block.encode("utf-8")) if block else 0,
        "budgetBytes": budget,
        "sections": included,
        "truncated": truncated,
        "traces": [t.to_json() for t in traces],
        "ranking": {
            "mode": ranked.mode,
            "weights": {"fts": rank_mod.FTS_WEIGHT, "semantic": rank_mod.SEMANTIC_WEIGHT},
            "scores": [{"id": rid, "score": round(s, 6)} for rid, s in ranked.order],
        },
    }


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
