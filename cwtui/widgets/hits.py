"""How a search hit reads: band badges, the two-line result row, the preview, highlighted text.

Presentation only. Every function takes the hit dict exactly as ``Archive.search`` returns it
(the public hit shape) and returns Rich renderables; nothing here ranks, filters or scores.
Source text is never parsed as markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.rule import Rule
from rich.text import Text

#: Band badge colours: fixed, so a band reads the same on every theme.
BAND_STYLES = {
    "high": "bold #0d1117 on #3fb950",
    "moderate": "bold #0d1117 on #d29922",
    "some": "bold #ffffff on #1f6feb",
    "low": "#e6edf3 on #484f58",
}
#: The bar colour of each band (timeline buckets are coloured by their best band).
BAND_COLOURS = {"high": "#3fb950", "moderate": "#d29922", "some": "#58a6ff", "low": "#8b949e"}
BAND_ORDER = ("high", "moderate", "some", "low")
BADGE_WIDTH = 10
HIGHLIGHT = "bold #0d1117 on #e3b341"
SESSION_CHARS = 8
SHORT_ID = 12
#: Characters of a snippet a result row keeps (the list cuts it to its width): enough for the
#: widest results pane, and no more, since every row is measured and cut on each search.
ROW_CHARS = 200


def band_badge(band: str | None) -> Text:
    """`` HIGH     ``: the band in capitals on its colour, padded to a fixed width."""
    name = (band or "?").lower()
    label = f" {name.upper()} ".ljust(BADGE_WIDTH)
    return Text(label, style=BAND_STYLES.get(name, "reverse"))


def short_session(session: str | None) -> str:
    """A session id short enough for a row: whole when short, else its first characters (any
    unique prefix of four or more works with ``cw show``)."""
    session = session or "—"
    return session if len(session) <= SHORT_ID else session[:SESSION_CHARS]


class Lines:
    """A Rich renderable that keeps each of its texts on one line, cut with an ellipsis at the
    width it is given (a results row must not wrap into the next one)."""

    def __init__(self, *lines: Text) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        for line in self.lines:
            cut = line.copy()
            cut.no_wrap = True
            if 2 * len(cut.plain) > width:  # it may not fit (a cell is at most 2 per character)
                cut.truncate(width, overflow="ellipsis")
            cut.end = "\n"
            yield cut

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((line.cell_len for line in self.lines), default=1)
        return Measurement(1, min(widest, options.max_width))


def when(stamp: str | None, *, seconds: bool = False) -> str:
    """``2026-11-18 10:02`` (UTC) from an ISO-8601 stamp, ``—`` when unknown."""
    if not stamp:
        return "—"
    return stamp[: 19 if seconds else 16].replace("T", " ")


def highlighted(text: str, spans: Iterable[Sequence[int]], style: str = HIGHLIGHT) -> Text:
    """``text`` with each ``[start, end)`` character span styled (out-of-range spans clipped)."""
    out = Text(text)
    size = len(text)
    for span in spans:
        if len(span) != 2:
            continue
        start, end = max(0, int(span[0])), min(size, int(span[1]))
        if end > start:
            out.stylize(style, start, end)
    return out


def hit_flags(hit: dict[str, Any]) -> list[str]:
    flags = []
    if hit.get("superseded"):
        flags.append("superseded")
    if hit.get("reranked"):
        flags.append("reranked")
    return flags


def result_row(hit: dict[str, Any]) -> Lines:
    """Two lines for the results list: badge, score, match type, kind, session, date; then the
    snippet on one line with its highlights (both lines end in an ellipsis where the list is too
    narrow)."""
    source = hit.get("source") or {}
    head = Text.assemble(
        band_badge(hit.get("band")),
        (f" {hit.get('score', 0):.2f} ", "bold"),
        (f" {hit.get('matchType', '?')}", "cyan"),
        (f" · {hit.get('kind', '?')}", "dim"),
        (f" · {short_session(source.get('sessionId'))}", ""),
        (f" · {when(source.get('timestamp'))}", "dim"),
    )
    for flag in hit_flags(hit):
        head.append(f" {flag}", "bold red" if flag == "superseded" else "magenta")
    # One line: cut to ROW_CHARS characters before any styling, and no newline or tab inside
    # (each is one character, so the highlight spans keep their places).
    flat = str(hit.get("snippet", ""))[:ROW_CHARS].replace("\n", " ").replace("\t", " ")
    body = Text("  ", no_wrap=True, overflow="ellipsis")
    body.append_text(highlighted(flat, hit.get("highlights") or []))
    return Lines(head, body)


def score_stages(hit: dict[str, Any]) -> Text:
    """The score's path, e.g. ``lexical bm25f 11.82 → calibrated 0.90 → rrf 0.975 → ×1.08``."""
    parts: list[str] = []
    for stage in (hit.get("score_metadata") or {}).get("stages") or []:
        name, kind, value = stage.get("stage"), stage.get("type"), stage.get("value")
        if not isinstance(value, int | float):
            continue
        if kind == "multiplier":
            parts.append(f"{name} ×{value:g}")
        else:
            parts.append(f"{name} {value:.4g}")
    return Text(" → ".join(parts) or "—", style="dim")


def preview(hit: dict[str, Any]) -> RenderableType:
    """The preview pane: identity and provenance, then the match-centred snippet highlighted,
    then the terms that matched and how the score was made."""
    source = hit.get("source") or {}
    keys = source.get("messageKeys") or []
    title = Text.assemble(
        (str(hit.get("documentId", "?")), "bold"),
        (f" v{hit.get('version', '?')}", "dim"),
        (f" · {hit.get('kind', '?')}", ""),
    )
    score = Text.assemble(
        band_badge(hit.get("band")),
        (f" score {hit.get('score', 0):.2f}", "bold"),
        (f" · {hit.get('matchType', '?')}", "cyan"),
        (f" · margin {hit.get('margin', 0):.2f}", "dim"),
    )
    for flag in hit_flags(hit):
        score.append(f" · {flag}", "bold red" if flag == "superseded" else "magenta")
    where = Text.assemble(
        ("session ", "dim"),
        str(source.get("sessionId") or "—"),
        ("\n", ""),
        (f"{source.get('project') or '—'} · {source.get('agent') or '—'}", ""),
        (f" · {when(source.get('timestamp'), seconds=True)} UTC", "dim"),
        ("\nmessage ", "dim"),
        str(source.get("messageKey") or "—"),
    )
    if len(keys) > 1:
        where.append(f"  (+{len(keys) - 1} more in this window)", "dim")
    snippet = highlighted(str(hit.get("snippet", "")), hit.get("highlights") or [])
    terms = Text.assemble(("matched ", "dim"), ", ".join(hit.get("matchedTerms") or []) or "—")
    expanded = hit.get("expandedTerms") or []
    if expanded:
        terms.append("\nexpanded ", "dim")
        terms.append(", ".join(expanded))
    return Group(
        title,
        score,
        where,
        Rule(style="dim"),
        snippet,
        Rule(style="dim"),
        terms,
        score_stages(hit),
    )


def best_band(bands: Iterable[str]) -> str | None:
    """The highest of ``bands`` in :data:`BAND_ORDER` (None when empty)."""
    present = set(bands)
    return next((band for band in BAND_ORDER if band in present), None)


#: Characters of each neighbouring turn the context shows.
CONTEXT_CHARS = 300


def _neighbour(item: dict[str, Any], side: str) -> Text:
    text = " ".join(str(item.get("text", "")).split())
    if len(text) > CONTEXT_CHARS:
        text = text[: CONTEXT_CHARS - 1] + "…"
    keys = item.get("messageKeys") or []
    head = Text.assemble(
        (f"{side} ", "bold cyan"),
        (f"{when(item.get('created'))} · {item.get('kind', '?')}", "dim"),
        (f" · {keys[0]}" if keys else "", "dim"),
    )
    return Text.assemble(head, "\n", (text, "dim"))


def context_block(hit: dict[str, Any], body: RenderableType) -> Group:
    """The preview with the hit's chronological neighbours around it (``gather``'s ``before``
    and ``after``: context, never ranked — they carry no score)."""
    before = [_neighbour(n, "before") for n in hit.get("before") or []]
    after = [_neighbour(n, "after") for n in hit.get("after") or []]
    parts: list[RenderableType] = [body, Rule("context (not ranked)", style="dim")]
    if not before and not after:
        parts.append(Text("no neighbouring turns in this session", "dim italic"))
    parts += before
    parts.append(Text("▶ the hit", "bold #e3b341"))
    parts += after
    return Group(*parts)
