"""How frozen preflight hints read: coloured outcomes, table cells and the detail pane.

Pure presentation over the rows of ``Archive.hints()`` (see docs/hints.md, *Diagnostics*): no
archive calls here. Every value goes into :class:`rich.text.Text` as plain text, never parsed as
markup, so hint bytes and ids show exactly as stored (``[CW …]`` stays literal).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

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
    "alternateBranch",
)
RETRIEVED_FIELDS = (
    ("kind", "kind"),
    ("role", "role"),
    ("matchType", "match"),
    ("tier", "tier"),
    ("score", "score"),
    ("normalized", "norm"),
    ("matchedUnits", "units"),
    ("coverage", "coverage"),
    ("maxIdf", "maxIdf"),
)


def outcome_text(outcome: str | None) -> Text:
    outcome = outcome or "?"
    return Text(outcome, OUTCOME_STYLES.get(outcome, "bold"))


def row_cells(hint: dict[str, Any]) -> tuple[Text, ...]:
    """Message key, outcome, reason, bytes, tokens, query hash, generation, created."""
    created = str(hint.get("createdAt") or "")[5:16].replace("T", " ")
    return (
        Text(str(hint.get("messageKey") or "—"), "bold"),
        outcome_text(hint.get("outcome")),
        Text(str(hint.get("reason") or ""), "dim"),
        Text(f"{int(hint.get('bytes') or 0):,}", justify="right"),
        Text(f"{int(hint.get('tokens') or 0):,}", justify="right"),
        Text(str(hint.get("queryHash") or "—"), "dim" if not hint.get("queryHash") else ""),
        Text(str(hint.get("generation", "—")), justify="right"),
        Text(created, "dim"),
    )


def budget_text(session: str, budget: dict[str, Any] | None, count: int) -> Text:
    """The session line: id, how many frozen decisions, the active budget in use."""
    text = Text.assemble(("Session ", "bold"), (session, "bold"))
    text.append(f"  {count} frozen decision{'s' if count != 1 else ''}", "dim")
    if budget:
        used = int(budget.get("activeTokens") or 0)
        total = int(budget.get("activeBudget") or 0)
        keys = budget.get("activeKeys") or []
        text.append("  active budget ", "dim")
        over = total and used >= total
        text.append(f"{used:,} / {total:,} tokens", "bold #d29922" if over else "bold")
        text.append(f" · {len(keys)} active key{'s' if len(keys) != 1 else ''}", "dim")
        if budget.get("lastActivity"):
            last = str(budget["lastActivity"])[:19].replace("T", " ")
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
    hint: dict[str, Any], budget: dict[str, Any] | None = None, *, show_timing: bool = True
) -> Text:
    """Everything frozen for one user message: the bytes, then the diagnostics kept with them."""
    diag: dict[str, Any] = hint.get("diagnostics") or {}
    text = Text.assemble(
        ("Message ", "bold"),
        (str(hint.get("messageKey") or "—"), "bold"),
        "  ",
        outcome_text(hint.get("outcome")),
    )
    if hint.get("reason"):
        text.append(f" ({hint['reason']})", "dim")
    text.append(
        f"\n{int(hint.get('bytes') or 0):,} bytes · {int(hint.get('tokens') or 0):,} tokens"
        f" · query {hint.get('queryHash') or '—'} · generation {hint.get('generation', '—')}",
    )
    if hint.get("createdAt"):
        text.append(f" · frozen {str(hint['createdAt'])[:19].replace('T', ' ')} UTC", "dim")
    units = diag.get("units") or {}
    if units:
        text.append("\nquery units: " + ", ".join(f"{units[k]} {k}" for k in sorted(units)), "dim")
    if "historicalIntent" in diag:
        text.append(
            " · historical cue" if diag.get("historicalIntent") else " · no historical cue",
            "dim",
        )

    _section(text, "Hint (exact bytes inserted after the user message)")
    text.append_text(hint_block(hint.get("hint")))

    retrieved = diag.get("retrieved") or []
    _section(text, f"Retrieved ({len(retrieved)})")
    if not retrieved:
        text.append("none", "dim")
    for n, row in enumerate(retrieved):
        if n:
            text.append("\n")
        text.append(f"{n + 1}. ", "dim")
        text.append(str(row.get("id") or row.get("documentId") or "?"), "bold")
        if row.get("strong"):
            text.append(" strong", "#3fb950")
        stamp = str(row.get("timestamp") or "")[:10]
        if stamp:
            text.append(f" · {stamp}", "dim")
        parts = [f"{label} {_number(row[key])}" for key, label in RETRIEVED_FIELDS if key in row]
        if parts:
            text.append("\n   " + " · ".join(parts), "dim")

    included = diag.get("included") or []
    _section(text, f"Included ({len(included)})")
    if not included:
        text.append("none", "dim")
    for row in included:
        text.append("+ ", "#3fb950")
        text.append(str(row.get("id") or "?"), "bold")
        extra = [
            f"{key} {_number(row[key])}"
            for key in ("classification", "tokens", "priority", "group")
            if key in row
        ]
        if extra:
            text.append(" · " + " · ".join(extra), "dim")
        if row.get("reason"):
            text.append(f"\n  reason: {row['reason']}")
        text.append("\n")
    if included:
        text.rstrip()

    excluded = diag.get("excluded") or []
    _section(text, f"Excluded ({len(excluded)})")
    if not excluded:
        text.append("none", "dim")
    for n, row in enumerate(excluded):
        if n:
            text.append("\n")
        text.append("− ", "#da3633")
        if isinstance(row, dict):
            text.append(str(row.get("id") or row.get("documentId") or "?"), "bold")
            rest = {k: v for k, v in row.items() if k not in ("id", "documentId", "reason")}
            if row.get("reason"):
                text.append(f" reason: {row['reason']}")
            if rest:
                text.append(
                    " · " + " · ".join(f"{k} {_number(v)}" for k, v in sorted(rest.items())),
                    "dim",
                )
        else:
            text.append(str(row))

    counts = diag.get("counts") or {}
    _section(text, "Counts")
    if counts:
        keys = [k for k in COUNT_KEYS if k in counts] + sorted(set(counts) - set(COUNT_KEYS))
        text.append(" · ".join(f"{k} {counts[k]}" for k in keys))
    else:
        text.append("none (no query was searched)", "dim")

    gate = diag.get("gate")
    if gate:
        _section(text, "Gate")
        text.append(
            f"strong {gate.get('strong')} · ambiguous {gate.get('ambiguous')}"
            f" · margin {_number(gate.get('margin')) if gate.get('margin') is not None else '—'}"
        )
        thresholds = gate.get("thresholds") or {}
        if thresholds:
            text.append(
                "\nthresholds: "
                + " · ".join(f"{k} {_number(v)}" for k, v in sorted(thresholds.items())),
                "dim",
            )

    _section(text, "Tokens and latency")
    text.append(f"this hint {int(hint.get('tokens') or 0):,} tokens")
    per_call = diag.get("budget") or {}
    if per_call:
        text.append(
            " · at decision: " + " · ".join(f"{k} {_number(v)}" for k, v in per_call.items())
        )
    if show_timing and isinstance(diag.get("latencyMs"), int | float):
        text.append(f" · latency {diag['latencyMs']:.1f} ms")
    if budget:
        text.append(
            f"\nsession active budget: {int(budget.get('activeTokens') or 0):,} / "
            f"{int(budget.get('activeBudget') or 0):,} tokens",
        )
        keys = budget.get("activeKeys") or []
        if keys:
            text.append(" · active keys " + ", ".join(str(k) for k in keys), "dim")
    return text
