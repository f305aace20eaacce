"""How a search hit reads: band badges, the two-line result row, the preview, highlighted text.

Presentation only. Every function takes the typed records ``Archive.search`` and
``Archive.gather`` answer with (a :class:`~cwcore.contract.search.SearchHit`, a gather's
:class:`~cwcore.contract.context.Neighbor` turns) and returns Rich renderables; nothing here
ranks, filters or scores. Source text is never parsed as markup.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.rule import Rule
from rich.text import Text

from cwtui.output import safe

if TYPE_CHECKING:
    from cwcore.contract.context import Neighbor
    from cwcore.contract.search import SearchHit

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
    """``text`` with each ``[start, end)`` character span styled (out-of-range spans clipped).
    Control characters are shown escaped (:func:`cwtui.output.safe`) piece by piece, so the
    spans, which count the raw text's characters, still mark the same words."""
    size = len(text)
    marks: list[tuple[int, int]] = []
    for span in sorted((int(s[0]), int(s[1])) for s in spans if len(s) == 2):
        start, end = max(0, span[0]), min(size, span[1])
        if end <= start:
            continue
        if marks and start <= marks[-1][1]:
            marks[-1] = (marks[-1][0], max(marks[-1][1], end))
        else:
            marks.append((start, end))
    out = Text()
    at = 0
    for start, end in marks:
        out.append(safe(text[at:start]))
        out.append(safe(text[start:end]), style)
        at = end
    out.append(safe(text[at:]))
    return out


def hit_flags(hit: SearchHit) -> list[str]:
    """The marks a hit carries beyond its band (a search hit is never superseded: search
    leaves retired documents out)."""
    return ["reranked"] if hit.reranked else []


class SnippetLines:
    """A snippet on at most ``lines`` lines of the width it is given, showing its match: the
    part of the snippet :func:`~cwcore.retrieve.snippets.focus` picks for the room there is
    (centred on the exact anchor or the densest cluster of query terms), word-wrapped, long
    words folded, ``…`` where it was cut, each line indented by ``indent`` spaces. A row cut
    from the snippet's start showed no match for about two in three exact hits on real logs."""

    def __init__(self, snippet: str, highlights: Sequence[Sequence[int]], lines: int = 1) -> None:
        # No newline or tab inside (each is one character, so the highlights keep their places).
        self.snippet = snippet.replace("\n", " ").replace("\t", " ").replace("\r", " ")
        self.highlights = [(int(h[0]), int(h[1])) for h in highlights if len(h) == 2]
        self.lines = max(1, lines)
        self.indent = 2

    def texts(self, width: int) -> list[Text]:
        """The lines for ``width`` cells, each without its indent."""
        from cwcore.retrieve.snippets import focus

        room = max(8, width - self.indent)
        # Word wrap leaves up to a word's width unused per line, and a wide character takes
        # two cells: ask for less than the lines hold, and less again if the match still fell
        # off (at most three tries; the last one folds whatever it has).
        budget = self.lines * room - (self.lines - 1) * max(4, room // 6) - 2
        if self.snippet and not self.snippet.isascii():
            budget = int(budget * len(self.snippet) / max(1, cell_len(self.snippet)))
        out: list[Text] = []
        # First the whole snippet: when it wraps into the lines, nothing needs cutting.
        tries = [len(self.snippet)] if len(self.snippet) > budget else []
        for attempt in range(len(tries) + 3):
            budget = max(4, budget)
            lo, hi = focus(
                self.snippet, self.highlights, tries[attempt] if attempt < len(tries) else budget
            )
            shown = [(a - lo, b - lo) for a, b in self.highlights if a < hi and b > lo]
            text = Text(no_wrap=False, overflow="fold")
            if lo > 0:
                text.append("…")
            text.append_text(highlighted(self.snippet[lo:hi], [(a, b) for a, b in shown]))
            if hi < len(self.snippet):
                text.append("…")
            wrapped = list(text.wrap(_MEASURE, room, overflow="fold", no_wrap=False))
            if attempt < len(tries) and len(wrapped) > self.lines:
                continue
            out = wrapped[: self.lines]
            if len(wrapped) > self.lines:
                last = out[-1]
                last.append("…")
                last.truncate(room, overflow="ellipsis")
            if not self.highlights or any(
                span.style == HIGHLIGHT for line in out for span in line.spans
            ):
                break
            if attempt >= len(tries):
                budget //= 2
        for line in out:
            line.rstrip()
            line.no_wrap = True
        return out or [Text("")]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.texts(options.max_width):
            row = Text(" " * self.indent, no_wrap=True, end="\n")
            row.append_text(line)
            row.truncate(options.max_width, overflow="ellipsis")
            yield row

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)


#: A console used only to measure text while wrapping (never printed to).
_MEASURE = Console(width=200, color_system=None, file=io.StringIO(), legacy_windows=False)


def row_head(hit: SearchHit, note: str | None = None) -> Text:
    """A result row's first line: badge, score, match type, kind, session, date, flags, and
    ``note`` (why the row sits where it does when its score does not say, dim italic)."""
    source = hit.source
    head = Text.assemble(
        band_badge(hit.band),
        (f" {hit.score:.2f} ", "bold"),
        (f" {hit.match_type}", "cyan"),
        (f" · {hit.kind}", "dim"),
        (f" · {safe(short_session(source.session_id), one_line=True)}", ""),
        (f" · {when(source.timestamp)}", "dim"),
    )
    for flag in hit_flags(hit):
        head.append(f" {flag}", "magenta")
    if note:
        head.append(f" · {note}", "dim italic")
    return head


def result_row(hit: SearchHit, *, lines: int = 1, note: str | None = None) -> Group:
    """A results-list row: the head line (:func:`row_head`, cut with an ellipsis where the
    list is too narrow), then ``lines`` lines of the snippet around its match
    (:class:`SnippetLines`), the match highlighted."""
    return Group(
        Lines(row_head(hit, note)),
        SnippetLines(hit.snippet, hit.highlights, lines),
    )


def tier_of(hit: SearchHit) -> int:
    """The hit's tier (0 exact, 1 structural, 2 lexical/semantic), from its score metadata;
    by its match type when the metadata does not say."""
    tier = hit.score_metadata.get("tier")
    if isinstance(tier, int):
        return tier
    kind = hit.match_type
    return 0 if kind.startswith("exact") else 1 if kind.startswith("structural") else 2


TIER_NAMES = ("exact", "structural", "lexical")


def order_notes(hits: Sequence[SearchHit]) -> list[str | None]:
    """For each hit in page order, why it sits above a hit with a higher score, or None when
    no hit below outscores it. The reasons (docs/retrieval.md, "Order and ties"): a higher
    tier (``exact tier`` above structural and lexical/semantic hits, ``structural tier`` above
    lexical/semantic ones), the cross-encoder (``reranked``), else the fused rank of the
    lexical/semantic tier (``fused rank``: reciprocal rank fusion of each mode's rank, the
    importance prior and recency, not the score alone)."""
    notes: list[str | None] = []
    for i, hit in enumerate(hits):
        below = hits[i + 1 :]
        beaten = [h for h in below if h.score > hit.score + 1e-9]
        if not beaten:
            notes.append(None)
        elif any(tier_of(h) > tier_of(hit) for h in beaten):
            notes.append(f"{TIER_NAMES[min(tier_of(hit), 2)]} tier")
        elif hit.reranked:
            notes.append("reranked")
        else:
            notes.append("fused rank")
    return notes


def score_stages(hit: SearchHit) -> Text:
    """The score's path, e.g. ``lexical bm25f 11.82 → calibrated 0.90 → rrf 0.975 → ×1.08``."""
    parts: list[str] = []
    for stage in hit.score_metadata.get("stages") or []:
        name, kind, value = stage.get("stage"), stage.get("type"), stage.get("value")
        if not isinstance(value, int | float):
            continue
        if kind == "multiplier":
            parts.append(f"{name} ×{value:g}")
        else:
            parts.append(f"{name} {value:.4g}")
    return Text(" → ".join(parts) or "—", style="dim")


def preview(hit: SearchHit) -> RenderableType:
    """The preview pane: identity and provenance, then the match-centred snippet highlighted,
    then the terms that matched and how the score was made."""
    source = hit.source
    keys = source.message_keys
    title = Text.assemble(
        (hit.document_id, "bold"),
        (f" v{hit.version}", "dim"),
        (f" · {hit.kind}", ""),
    )
    score = Text.assemble(
        band_badge(hit.band),
        (f" score {hit.score:.2f}", "bold"),
        (f" · {hit.match_type}", "cyan"),
        (f" · margin {hit.margin:.2f}", "dim"),
    )
    for flag in hit_flags(hit):
        score.append(f" · {flag}", "magenta")
    where = Text.assemble(
        ("session ", "dim"),
        safe(source.session_id or "—", one_line=True),
        ("\n", ""),
        (safe(f"{source.project or '—'} · {source.agent or '—'}", one_line=True), ""),
        (f" · {when(source.timestamp, seconds=True)} UTC", "dim"),
        ("\nmessage ", "dim"),
        safe(source.message_key or "—", one_line=True),
    )
    if len(keys) > 1:
        where.append(f"  (+{len(keys) - 1} more in this window)", "dim")
    snippet = highlighted(hit.snippet, hit.highlights)
    terms = Text.assemble(("matched ", "dim"), safe(", ".join(hit.matched_terms)) or "—")
    if hit.expanded_terms:
        terms.append("\nexpanded ", "dim")
        terms.append(safe(", ".join(hit.expanded_terms)))
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


def _neighbour(item: Neighbor, side: str) -> Text:
    text = safe(" ".join(item.text.split()), one_line=True)
    if len(text) > CONTEXT_CHARS:
        text = text[: CONTEXT_CHARS - 1] + "…"
    keys = item.message_keys
    head = Text.assemble(
        (f"{side} ", "bold cyan"),
        (f"{when(item.created)} · {item.kind}", "dim"),
        (f" · {safe(keys[0], one_line=True)}" if keys else "", "dim"),
    )
    return Text.assemble(head, "\n", (text, "dim"))


def context_block(
    before: Sequence[Neighbor], after: Sequence[Neighbor], body: RenderableType
) -> Group:
    """The preview ``body`` with the hit's chronological neighbours around it (a gather
    anchor's ``before`` and ``after``: context, never ranked — they carry no score)."""
    parts: list[RenderableType] = [body, Rule("context (not ranked)", style="dim")]
    if not before and not after:
        parts.append(Text("no neighbouring turns in this session", "dim italic"))
    parts += [_neighbour(n, "before") for n in before]
    parts.append(Text("▶ the hit", "bold #e3b341"))
    parts += [_neighbour(n, "after") for n in after]
    return Group(*parts)
