"""Why a preflight decision came out as it did, in one sentence a person reads.

The stored reason (``no-candidate``, ``weak``, ``unknown-session``, …) and the counts of the
diagnostics say it for machines; :func:`explain` turns them into the sentence ``cw preflight``,
``cw hints`` and the TUI's Hints screen print — above all for ``none``: every row older than
the age limits, nothing matching, weak or ambiguous evidence, a source shown within the
suppression window, the budget. Built from the diagnostics alone (ids, numbers and reasons),
so a decision frozen long ago is explained the same way, and the sentence never quotes the
message or the archive.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from cwcore.contract.preflight import CandidateRow, Diagnostics


@dataclass(frozen=True)
class Limits:
    """The settings a sentence names: the source-age limits (days) and the suppression (hours).
    The defaults are spec 000's; faces pass the archive's settings."""

    conversation_days: float = 30.0
    tool_days: float = 7.0
    suppression_hours: float = 24.0


def _n(value: float) -> str:
    return f"{value:g}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _age(limits: Limits) -> str:
    return (
        f"the age limits ({_n(limits.conversation_days)} days for conversation, "
        f"{_n(limits.tool_days)} days for tool output)"
    )


NO_QUERY = {
    "no-topic": "no topic: the message holds only acknowledgements, grammar or workflow words "
    "(nothing to search)",
    "empty": "the message is empty",
    "host-generated": "the text is host-generated (a command or its output), not a real user "
    "message",
}


def _no_candidate(diag: Diagnostics, limits: Limits) -> str:
    counts = diag.counts
    if counts is None or not counts:
        return "no candidate"
    branch, allowed = counts.branch or 0, counts.allowed or 0
    stale, durable, visible = counts.stale or 0, counts.durable or 0, counts.visible or 0
    lineage = _plural(counts.lineage_sessions or 1, "session")
    if not branch:
        return f"nothing of this session's lineage ({lineage}) is indexed yet"
    if not allowed:
        if stale and not durable and not visible:
            return (
                f"every indexed row of this session's lineage ({branch}) is older than "
                f"{_age(limits)}; explicit search still finds them"
            )
        parts = []
        if stale:
            parts.append(f"{stale} older than {_age(limits)}")
        if durable:
            parts.append(f"{durable} notes, Markdown or decisions (never inserted automatically)")
        if visible:
            parts.append(f"{visible} already visible in the context")
        return f"no row of this session's lineage is eligible: {'; '.join(parts)}"
    reasons = Counter(
        (row.reason or "").split(":")[0] if row.reason else ""
        for row in diag.left_out
        if isinstance(row, CandidateRow)
    )
    if not counts.candidates:
        text = f"nothing in the {allowed} eligible rows matches the message's topic"
        if stale:
            text += f" ({stale} older rows, beyond {_age(limits)}, were not searched)"
        return text
    if reasons["stale"] and reasons["stale"] == sum(reasons.values()):
        return f"every match is older than {_age(limits)}; explicit search still finds them"
    if reasons["suppressed"]:
        return (
            f"the matching source was already shown in this session's lineage within "
            f"{_n(limits.suppression_hours)} hours (exposure suppression)"
        )
    if reasons["durable-archive"] and not reasons["unverified"]:
        return "the only matches are notes, Markdown or decisions (never inserted automatically)"
    found = [f"{n} {why or 'left out'}" for why, n in sorted(reasons.items())]
    return (
        f"{_plural(counts.candidates or 0, 'candidate')} but none usable"
        + (f" ({', '.join(found)})" if found else "")
        + (
            "; unverified rows do not hold the message's words on word boundaries"
            if reasons["unverified"]
            else ""
        )
    )


def _weak(diag: Diagnostics) -> str:
    top = diag.candidates[0] if diag.candidates else None
    gate = diag.gate
    if top is None or gate is None:
        return "weak evidence: no exact identifier or phrase, and too few matched words"
    t = gate.thresholds
    return (
        f"weak evidence: the best match has no exact identifier or phrase of the message and "
        f"{_plural(top.matched_units, 'matched unit')} (coverage {top.coverage:g}, max IDF "
        f"{top.max_idf:g}); strong needs at least {t.min_matched_units} with coverage ≥ "
        f"{t.coverage:g} and max IDF ≥ {t.max_normalized_idf:g}"
    )


def explain(
    outcome: str, reason: str | None, diag: Diagnostics, limits: Limits | None = None
) -> str:
    """One sentence: why ``outcome`` (with its stored ``reason``) was decided."""
    limits = limits or Limits()
    reason = reason or diag.reason or ""
    if outcome == "no-query":
        return NO_QUERY.get(reason, f"no topic ({reason})")
    if outcome == "failed":
        return "preflight failed and gave no hint (fail-open; the daemon log names the error)"
    if outcome == "excerpt":
        return "a historical cue and one strong, unambiguous source: a quoted excerpt"
    if outcome == "marker":
        if reason == "ambiguous-historical":
            margin = diag.gate.margin if diag.gate is not None else None
            near = f" (margin {margin:g} < 0.05)" if margin is not None else ""
            return (
                f"ambiguous: a historical cue, but two sources match almost equally{near}; "
                "a marker with the message's own words instead of an excerpt"
            )
        if reason.startswith("budget"):
            return "the excerpt did not fit the token budget: a marker instead"
        return "no historical cue, but strong evidence of a recurring concept: a marker"
    if reason == "unknown-session":
        return "the session is not in the archive (import it, or check the id)"
    if reason == "no-candidate":
        return _no_candidate(diag, limits)
    if reason == "weak":
        return _weak(diag)
    if reason == "privacy":
        return "the best source was withheld by a privacy policy"
    if reason == "budget":
        budget = diag.budget
        left = f" ({budget.available} of {budget.message} tokens available)" if budget else ""
        return f"not even the marker fits the token budget{left}"
    if reason == "active-budget":
        return (
            "the session's active hint budget is used up (cw hints rotate frees the hints of "
            "messages that left the context)"
        )
    return f"no hint ({reason or 'no reason recorded'})"


def limits_of(settings: object) -> Limits:
    """The :class:`Limits` of a :class:`cwcore.config.Settings` (defaults for what it lacks)."""
    base = Limits()
    return Limits(
        float(getattr(settings, "conversation_max_age_days", base.conversation_days)),
        float(getattr(settings, "tool_payload_max_age_days", base.tool_days)),
        float(getattr(settings, "hint_suppression_hours", base.suppression_hours)),
    )
