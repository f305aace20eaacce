"""Scoring preflight decisions: what one answer showed, the spec's zero-violation gates, and the
per-set metrics (excerpt and marker precision, hint rate, false-hint rate).

Everything here reads the public preflight JSON (``PreflightDecision.to_json()``: ``outcome``,
``hint``, ``tokens``, ``frozen``, ``diagnostics``) and the hint's documented lines, never engine
internals, so a change of rendering or of the gate is measured, not broken. The functions are
pure: :mod:`eval.preflight` runs the cases and hands them what it saw.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

HINTS = ("excerpt", "marker")
#: Every gate the spec says must never be violated; each is counted, zero or not.
GATES = (
    "marker-archived-text",
    "marker-template",
    "over-budget",
    "excerpt-without-intent",
    "locator",
    "not-repeatable",
    "stale-source",
)
#: A recall locator's shape (``cwl2.<payload>.<mac>``, any format version).
_LOCATOR = re.compile(r"\bcwl\d\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")


@dataclass(frozen=True)
class Limits:
    """The budgets and age limits in effect (tokens; days)."""

    message_tokens: int = 160
    max_hint_tokens: int = 200
    conversation_days: float = 30.0
    tool_days: float = 7.0


@dataclass(frozen=True)
class Shown:
    """What one preflight answer showed, read from its public JSON: the outcome, hint bytes,
    tokens, whether it came frozen, the shown source (``<documentId>#<messageKey>``), its
    timestamp and role/kind, the gate's view (historical cue, strong, ambiguous), the reason and
    the token budget available to the hint."""

    outcome: str
    hint: str | None
    tokens: int
    frozen: bool
    source: str | None
    source_time: str | None
    source_role: str | None
    source_kind: str | None
    historical: bool
    strong: bool
    ambiguous: bool
    reason: str | None
    available: int | None
    thresholds: Mapping[str, Any]
    raw: str

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Shown:
        diag = body.get("diagnostics") or {}
        gate = diag.get("gate") or {}
        included = diag.get("included") or []
        source = included[0].get("id") if included else None
        row: Mapping[str, Any] = next(
            (r for r in diag.get("retrieved") or [] if r.get("id") == source), {}
        )
        return cls(
            outcome=str(body.get("outcome")),
            hint=body.get("hint"),
            tokens=int(body.get("tokens") or 0),
            frozen=bool(body.get("frozen")),
            source=source,
            source_time=row.get("timestamp"),
            source_role=row.get("role"),
            source_kind=row.get("kind"),
            historical=bool(diag.get("historicalIntent")),
            strong=bool(gate.get("strong")),
            ambiguous=bool(gate.get("ambiguous")),
            reason=diag.get("reason"),
            available=(diag.get("budget") or {}).get("available"),
            thresholds=dict(gate.get("thresholds") or {}),
            raw=json.dumps(body, sort_keys=True, ensure_ascii=False),
        )


def fold(text: str) -> str:
    """Case-, accent- and compatibility-folded text, white space collapsed (for matching a
    marker phrase against archived text the way preflight verifies terms)."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(stripped.casefold().split())


def _json_after(line: str, opener: str) -> Any:
    at = line.find(opener)
    if at < 0:
        return None
    try:
        return json.loads(line[at:])
    except ValueError:
        return None


def marker_phrases(hint: str | None) -> list[str] | None:
    """The phrases of a continuity marker: the JSON list on its phrases line (None when no line
    of the hint holds a JSON list of strings)."""
    for line in (hint or "").splitlines():
        value = _json_after(line, "[") if ":" in line else None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
    return None


def marker_template(hint: str) -> str:
    """The marker with its phrases list blanked: every marker of a run must have this shape."""
    out = []
    for line in hint.splitlines():
        if marker_phrases(line) is not None:
            line = line[: line.find("[")] + "[]"
        out.append(line)
    return "\n".join(out)


def quoted(hint: str | None) -> str | None:
    """The quoted text of an excerpt: the JSON string on its quoted-content line."""
    for line in (hint or "").splitlines():
        if "JSON" in line and '"' in line:
            value = _json_after(line, '"')
            if isinstance(value, str):
                return value
    return None


def _age_days(now: str, then: str | None) -> float | None:
    if not then:
        return None
    try:
        a = datetime.fromisoformat(now.replace("Z", "+00:00"))
        b = datetime.fromisoformat(then.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (a - b).total_seconds() / 86400


def violations(
    message: str,
    first: Shown,
    repeat: Shown,
    *,
    now: str,
    limits: Limits,
    estimate: Callable[[str], int],
) -> list[str]:
    """The gates one case violates (see :data:`GATES`; ``marker-template`` is checked across a
    set by :func:`summarize`)."""
    out = []
    if first.outcome == "marker":
        phrases = marker_phrases(first.hint)
        if not phrases or any(p not in message for p in phrases):
            out.append("marker-archived-text")
    if first.hint is not None:
        used = estimate(first.hint)
        cap = min(limits.message_tokens, limits.max_hint_tokens)
        if first.available is not None:
            cap = min(cap, first.available)
        if used > cap or first.tokens != used:
            out.append("over-budget")
    if first.outcome == "excerpt" and not (
        first.historical and first.strong and not first.ambiguous
    ):
        out.append("excerpt-without-intent")
    if _LOCATOR.search(first.raw) or _LOCATOR.search(repeat.raw):
        out.append("locator")
    if (first.outcome, first.hint, first.tokens) != (
        repeat.outcome,
        repeat.hint,
        repeat.tokens,
    ) or not repeat.frozen:
        out.append("not-repeatable")
    if first.hint is not None:
        age = _age_days(now, first.source_time)
        tool = first.source_role == "tool" or first.source_kind == "tool-result"
        limit = limits.tool_days if tool else limits.conversation_days
        if age is None or age > limit:
            out.append("stale-source")
    return out


def score_case(
    case: Mapping[str, Any],
    first: Shown,
    repeat: Shown,
    *,
    source_locations: set[str],
    source_text: str | None,
    limits: Limits,
    estimate: Callable[[str], int],
) -> dict[str, Any]:
    """One case's record: what was shown, whether its source answers (``correct``: the shown
    source's locations meet the expected ones; False for any hint on a should-stay-silent case,
    None with no hint), whether a marker's phrases are all in the message and in the archived
    source (``marker_ok``), whether an excerpt quotes the case's anchor whole, and the gates
    violated."""
    message = case["message"]
    expected = set(case.get("expected") or ())
    hinted = first.outcome in HINTS
    correct: bool | None = None
    if hinted:
        correct = bool(expected & source_locations) if case["expect"] == "hint" else False
    turn_correct: bool | None = None
    if hinted and case.get("expected_turns"):
        turns = {f"turn:{t}" for t in case["expected_turns"]}
        turn_correct = bool(turns & source_locations) and case["expect"] == "hint"
    marker_ok: bool | None = None
    if first.outcome == "marker":
        phrases = marker_phrases(first.hint) or []
        folded = fold(source_text or "")
        marker_ok = bool(phrases) and all(p in message and fold(p) in folded for p in phrases)
    anchor_whole: bool | None = None
    quote_chars: int | None = None
    if first.outcome == "excerpt":
        quote = quoted(first.hint) or ""
        quote_chars = len(quote.strip("…"))
        anchor = case.get("anchor")
        if anchor and anchor in message:
            anchor_whole = anchor in quote
    return {
        "id": case["id"],
        "category": case["category"],
        "expect": case["expect"],
        "outcome": first.outcome,
        "reason": first.reason,
        "tokens": first.tokens,
        "source": first.source,
        "source_locations": sorted(source_locations)[:20],
        "correct": correct,
        "turn_correct": turn_correct,
        "marker_ok": marker_ok,
        "anchor_whole": anchor_whole,
        "quote_chars": quote_chars,
        "historical": first.historical,
        "strong": first.strong,
        "violations": violations(
            message, first, repeat, now=case["now"], limits=limits, estimate=estimate
        ),
        "hint": first.hint,
    }


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def summarize(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The set's metrics. Rates are None when their denominator is empty.

    * ``hint_rate`` — excerpt or marker on should-hint cases; ``excerpt_rate``, ``marker_rate``;
    * ``false_hint_rate`` — excerpt or marker on should-stay-silent cases;
    * ``excerpt_precision`` — excerpts whose source answers, over every excerpt of the set (an
      excerpt on a should-stay-silent case answers nothing);
    * ``marker_precision`` — markers whose every phrase is in the message and in the archived
      source, over every marker;
    * ``hint_source_precision`` — any hint (excerpt or marker) on a should-hint case whose
      source answers, over those hints;
    * ``excerpt_turn_precision`` — LongMemEval: the excerpt's message is an evidence turn;
    * ``anchor_whole`` — excerpts quoting the case's anchor whole, over excerpts with an anchor;
    * ``quote_chars_p50`` — the median length (characters, without the cut marks) of the
      excerpts' quoted text;
    * ``violations`` — per gate, the count (every gate listed) and the case ids.
    """
    hint_cases = [r for r in records if r["expect"] == "hint"]
    silent = [r for r in records if r["expect"] == "silent"]
    excerpts = [r for r in records if r["outcome"] == "excerpt"]
    markers = [r for r in records if r["outcome"] == "marker"]
    hinted = [r for r in hint_cases if r["outcome"] in HINTS]
    turn_scored = [r for r in excerpts if r.get("turn_correct") is not None]
    anchored = [r for r in excerpts if r.get("anchor_whole") is not None]
    by_gate: dict[str, list[str]] = {g: [] for g in GATES}
    for r in records:
        for v in r["violations"]:
            by_gate.setdefault(v, []).append(r["id"])
    # One marker shape per run: a marker whose fixed lines differ from the commonest shape
    # carries text that did not come from the template (or the current message).
    shapes = Counter(marker_template(r["hint"]) for r in markers if r.get("hint"))
    if len(shapes) > 1:
        common = shapes.most_common(1)[0][0]
        by_gate["marker-template"] += [
            r["id"] for r in markers if r.get("hint") and marker_template(r["hint"]) != common
        ]
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    for r in records:
        outcomes[f"{r['category']}|{r['expect']}"][r["outcome"]] += 1
    by_category = {}
    for key, counts in sorted(outcomes.items()):
        category, expect = key.split("|")
        n = sum(counts.values())
        shown = counts.get("excerpt", 0) + counts.get("marker", 0)
        by_category[category] = {
            "expect": expect,
            "n": n,
            **{o: counts.get(o, 0) for o in ("excerpt", "marker", "none", "no-query", "failed")},
            "hint_rate": _rate(shown, n),
        }
    return {
        "should_hint": len(hint_cases),
        "should_stay_silent": len(silent),
        "hint_rate": _rate(len(hinted), len(hint_cases)),
        "excerpt_rate": _rate(sum(r["outcome"] == "excerpt" for r in hint_cases), len(hint_cases)),
        "marker_rate": _rate(sum(r["outcome"] == "marker" for r in hint_cases), len(hint_cases)),
        "false_hint_rate": _rate(sum(r["outcome"] in HINTS for r in silent), len(silent)),
        "excerpts": len(excerpts),
        "excerpt_precision": _rate(sum(r["correct"] is True for r in excerpts), len(excerpts)),
        "markers": len(markers),
        "marker_precision": _rate(sum(r["marker_ok"] is True for r in markers), len(markers)),
        "hint_source_precision": _rate(sum(r["correct"] is True for r in hinted), len(hinted)),
        "excerpt_turn_precision": _rate(
            sum(r["turn_correct"] is True for r in turn_scored), len(turn_scored)
        ),
        "anchor_whole": _rate(sum(r["anchor_whole"] is True for r in anchored), len(anchored)),
        "quote_chars_p50": (
            sorted(r["quote_chars"] for r in excerpts)[len(excerpts) // 2] if excerpts else None
        ),
        "violations": {g: len(ids) for g, ids in by_gate.items()},
        "violation_cases": {g: ids for g, ids in by_gate.items() if ids},
        "by_category": by_category,
    }
