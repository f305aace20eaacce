"""How frozen preflight hints read: coloured outcomes, table cells and the detail pane.

Pure presentation over the rows of ``Archive.hints()`` (see docs/hints.md, *Diagnostics*): no
archive calls here. Every value goes into :class:`rich.text.Text` as plain text, never parsed as
markup, so hint bytes and ids show exactly as stored (``[CW …]`` stays literal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

if TYPE_CHECKING:
    from cwcore.contract.hints import HintEntry, SessionBudget
    from cwcore.contract.preflight import CandidateRow
    from cwcore.hints.why import Limits

#: Outcome → style (docs/hints.md: excerpt, marker, none, no-query, failed).
OUTCOME_STYLES = {
    "excerpt": "bold #3fb950",
    "marker": "bold #58a6ff",
    "none": "#8b949e",
    "no-query": "dim",
    "failed": "bold #da3633",
}
COUNT_KEYS = (
    "lineageSessions",
    "branch",
    "allowed",
    "stale",
    "durable",
    "visible",
    "exact",
    "lexical",
    "candidates",
    "verified",
    "unverified",
    "dedup",
    "suppressed",
    "alternateBranchCandidates",
    "alternateBranch",
)


def retrieved_fields(row: CandidateRow) -> tuple[tuple[str, Any], ...]:
    """``(label, value)`` of what a retrieved candidate row shows under its id."""
    return (
        ("kind", row.kind),
        ("role", row.role),
        ("match", row.match_type),
        ("tier", row.tier),
        ("score", row.score),
        ("norm", row.normalized),
        ("units", row.matched_units),
        ("coverage", row.coverage),
        ("maxIdf", row.max_idf),
    )


def outcome_text(outcome: str | None) -> Text:
    outcome = outcome or "?"
    return Text(outcome, OUTCOME_STYLES.get(outcome, "bold"))


def row_cells(hint: HintEntry) -> tuple[Text, ...]:
    """Message key, outcome, reason, bytes, tokens, query hash, generation, created."""
    created = str(hint.created_at or "")[5:16].replace("T", " ")
    return (
        Text(hint.message_key or "—", "bold"),
        outcome_text(hint.outcome),
        Text(hint.reason or "", "dim"),
        Text(f"{hint.bytes:,}", justify="right"),
        Text(f"{hint.tokens:,}", justify="right"),
        Text(hint.query_hash or "—", "dim" if not hint.query_hash else ""),
        Text(str(hint.generation), justify="right"),
        Text(created, "dim"),
    )


def budget_text(session: str, budget: SessionBudget | None, count: int) -> Text:
    """The session line: id, how many frozen decisions, the active budget in use."""
    text = Text.assemble(("Session ", "bold"), (session, "bold"))
    text.append(f"  {count} frozen decision{'s' if count != 1 else ''}", "dim")
    if budget is not None:
        used, total, keys = budget.active_tokens, budget.active_budget, budget.active_keys
        text.append("  active budget ", "dim")
        over = total and used >= total
        text.append(f"{used:,} / {total:,} tokens", "bold #d29922" if over else "bold")
        text.append(f" · {len(keys)} active key{'s' if len(keys) != 1 else ''}", "dim")
        if budget.last_activity:
            last = budget.last_activity[:19].replace("T", " ")
            text.append(f" · last activity {last} UTC", "dim")
    return text


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def _section(text: Text, title: str) -> None:
    text.append(f"\n\n{title}\n", "bold underline")


def hint_block(hint: str | None) -> Text:
    """The exact hint bytes, one gutter mark per line (the gutter is not part of the hint)."""
    if hint is None:
        return Text("(no hint: nothing is inserted after this message)", "dim italic")
    text = Text()
    for n, line in enumerate(hint.split("\n")):
        if n:
            text.append("\n")
        text.append("│ ", "#30363d")
        text.append(line)
    return text


def detail_text(
    hint: HintEntry,
    budget: SessionBudget | None = None,
    *,
    show_timing: bool = True,
    limits: Limits | None = None,
) -> Text:
    """Everything frozen for one user message: why it came out so (one sentence, with the
    archive's age ``limits``), the bytes, then the diagnostics kept with them."""
    from cwcore.hints.why import explain

    diag = hint.diagnostics
    text = Text.assemble(
        ("Message ", "bold"),
        (hint.message_key or "—", "bold"),
        "  ",
        outcome_text(hint.outcome),
    )
    if hint.reason:
        text.append(f" ({hint.reason})", "dim")
    text.append(
        f"\n{hint.bytes:,} bytes · {hint.tokens:,} tokens"
        f" · query {hint.query_hash or '—'} · generation {hint.generation}",
    )
    if hint.created_at:
        text.append(f" · frozen {hint.created_at[:19].replace('T', ' ')} UTC", "dim")
    text.append("\nWhy: ", "bold")
    text.append(explain(hint.outcome, hint.reason, diag, limits))
    units = diag.units.to_json() if diag.units is not None else {}
    if units:
        text.append("\nquery units: " + ", ".join(f"{units[k]} {k}" for k in sorted(units)), "dim")
    if diag.historical_intent is not None:
        text.append(
            " · historical cue" if diag.historical_intent else " · no historical cue",
            "dim",
        )

    _section(text, "Hint (exact bytes inserted after the user message)")
    text.append_text(hint_block(hint.hint))

    retrieved = diag.candidates
    _section(text, f"Retrieved ({len(retrieved)})")
    if not retrieved:
        text.append("none", "dim")
    for n, row in enumerate(retrieved):
        if n:
            text.append("\n")
        text.append(f"{n + 1}. ", "dim")
        text.append(row.id or row.document_id or "?", "bold")
        if row.strong:
            text.append(" strong", "#3fb950")
        stamp = row.timestamp[:10]
        if stamp:
            text.append(f" · {stamp}", "dim")
        parts = [f"{label} {_number(value)}" for label, value in retrieved_fields(row)]
        text.append("\n   " + " · ".join(parts), "dim")

    included = diag.shown
    _section(text, f"Included ({len(included)})")
    if not included:
        text.append("none", "dim")
    for item in included:
        text.append("+ ", "#3fb950")
        text.append(item.id or "?", "bold")
        extra = [
            f"classification {item.classification}",
            f"tokens {_number(item.tokens)}",
            f"priority {_number(item.priority)}",
            f"group {item.group}",
        ]
        text.append(" · " + " · ".join(extra), "dim")
        if item.reason:
            text.append(f"\n  reason: {item.reason}")
        text.append("\n")
    if included:
        text.rstrip()

    excluded = diag.left_out
    _section(text, f"Excluded ({len(excluded)})")
    if not excluded:
        text.append("none", "dim")
    for n, left in enumerate(excluded):
        if n:
            text.append("\n")
        text.append("− ", "#da3633")
        # Every other field of the row, by its public name: rows differ in what they keep.
        body = left.to_json()
        text.append(str(body.get("id") or body.get("documentId") or "?"), "bold")
        rest = {k: v for k, v in body.items() if k not in ("id", "documentId", "reason")}
        if left.reason:
            text.append(f" reason: {left.reason}")
        if rest:
            text.append(
                " · " + " · ".join(f"{k} {_number(v)}" for k, v in sorted(rest.items())),
                "dim",
            )

    counts = dict(diag.counts.items()) if diag.counts is not None else {}
    _section(text, "Counts")
    if counts:
        keys = [k for k in COUNT_KEYS if k in counts] + sorted(set(counts) - set(COUNT_KEYS))
        text.append(" · ".join(f"{k} {counts[k]}" for k in keys))
    else:
        text.append("none (no query was searched)", "dim")

    gate = diag.gate
    if gate is not None:
        _section(text, "Gate")
        text.append(
            f"strong {gate.strong} · ambiguous {gate.ambiguous}"
            f" · margin {_number(gate.margin) if gate.margin is not None else '—'}"
        )
        thresholds = gate.thresholds.to_json()
        text.append(
            "\nthresholds: "
            + " · ".join(f"{k} {_number(v)}" for k, v in sorted(thresholds.items())),
            "dim",
        )

    _section(text, "Tokens and latency")
    text.append(f"this hint {hint.tokens:,} tokens")
    if diag.budget is not None:
        per_call = diag.budget.to_json()
        text.append(
            " · at decision: " + " · ".join(f"{k} {_number(v)}" for k, v in per_call.items())
        )
    if show_timing and diag.latency_ms is not None:
        text.append(f" · latency {diag.latency_ms:.1f} ms")
    if budget is not None:
        text.append(
            f"\nsession active budget: {budget.active_tokens:,} / {budget.active_budget:,} tokens",
        )
        if budget.active_keys:
            text.append(" · active keys " + ", ".join(budget.active_keys), "dim")
    return text
