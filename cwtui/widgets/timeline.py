"""When a topic came up: the search results' timestamps as a small bar chart.

:func:`bucketize` groups result dates into days (spans up to :data:`DAY_LIMIT` days), weeks (up
to :data:`WEEK_LIMIT` weeks) or months; :class:`Timeline` draws the counts as two rows of block
characters sized to its width, each bar coloured by the best relevance band in it, with a marker
under the bucket of the selected result. Presentation only: the dates come from the hits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from cwcore.clock import parse_time
from cwcore.errors import CwError
from cwtui.widgets.hits import BAND_COLOURS, best_band

if TYPE_CHECKING:
    from cwcore.contract.search import SearchHit

DAY_LIMIT = 60
WEEK_LIMIT = 104
#: A chart never spans fewer days than this, so a single busy day still has context.
MIN_DAYS = 14
#: The colour of the selected result's bucket and its marker.
SELECTED = "bold #f778ba"
#: Eighths of a cell, bottom up; two rows give 16 levels.
BLOCKS = " ▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Buckets:
    """``counts[i]`` results (best band ``bands[i]``) in the bucket starting ``starts[i]``."""

    unit: str  # "day" | "week" | "month"
    starts: tuple[date, ...]
    counts: tuple[int, ...]
    bands: tuple[str | None, ...]
    marked: int | None  # the bucket of the selected result

    @property
    def total(self) -> int:
        return sum(self.counts)


def hit_day(hit: SearchHit) -> date | None:
    stamp = hit.source.timestamp
    if not stamp:
        return None
    try:
        return parse_time(stamp).date()
    except CwError:
        return None


def _month(day: date) -> date:
    return day.replace(day=1)


def _next_month(day: date) -> date:
    return date(day.year + (day.month == 12), day.month % 12 + 1, 1)


def bucketize(hits: Sequence[SearchHit], selected: int | None = None) -> Buckets | None:
    """The results' dates in buckets from the earliest to the latest (None: no dated hit)."""
    dated = [(i, d, h.band) for i, h in enumerate(hits) if (d := hit_day(h))]
    if not dated:
        return None
    last = max(d for _, d, _ in dated)
    first = min(min(d for _, d, _ in dated), last - timedelta(days=MIN_DAYS - 1))
    span = (last - first).days + 1
    starts: list[date]
    if span <= DAY_LIMIT:
        unit = "day"
        starts = [first + timedelta(days=n) for n in range(span)]
    elif span <= WEEK_LIMIT * 7:
        unit = "week"
        monday = first - timedelta(days=first.weekday())
        starts = []
        while monday <= last:
            starts.append(monday)
            monday += timedelta(days=7)
    else:
        unit = "month"
        month = _month(first)
        starts = []
        while month <= last:
            starts.append(month)
            month = _next_month(month)

    def index(day: date) -> int:
        if unit == "day":
            return (day - first).days
        if unit == "week":
            return (day - starts[0]).days // 7
        return (day.year - starts[0].year) * 12 + day.month - starts[0].month

    counts = [0] * len(starts)
    bands: list[list[str]] = [[] for _ in starts]
    marked = None
    for i, day, band in dated:
        slot = index(day)
        counts[slot] += 1
        bands[slot].append(band)
        if i == selected:
            marked = slot
    return Buckets(unit, tuple(starts), tuple(counts), tuple(best_band(b) for b in bands), marked)


def _bar_cells(count: int, peak: int) -> tuple[str, str]:
    """(top, bottom) characters of one bar, 16 levels; any non-zero count shows."""
    if count <= 0 or peak <= 0:
        return " ", "·"
    level = max(1, round(count / peak * 16))
    bottom = BLOCKS[min(8, level)]
    top = BLOCKS[level - 8] if level > 8 else " "
    return top, bottom


def render_chart(buckets: Buckets, width: int) -> Text:
    """Three lines: two rows of bars, then a marker under the selected result's bucket."""
    n = len(buckets.starts)
    cell = max(1, min(6, (width - 1) // max(1, n)))
    # Too many buckets for the width: keep the latest ones.
    shown = min(n, max(1, width // cell))
    offset = n - shown
    peak = max(buckets.counts[offset:], default=0)
    bar_width = cell - 1 if cell > 2 else cell  # wide cells keep a gap between bars
    gap = " " * (cell - bar_width)
    top, bottom = Text(), Text()
    for slot in range(offset, n):
        colour = BAND_COLOURS.get(buckets.bands[slot] or "", "#8b949e")
        style = SELECTED if slot == buckets.marked else f"bold {colour}"
        upper, lower = _bar_cells(buckets.counts[slot], peak)
        top.append(upper * bar_width + gap, style)
        if lower == "·":  # an empty bucket: one dot keeps the time axis visible
            bottom.append("·".ljust(cell), "dim")
        else:
            bottom.append(lower * bar_width + gap, style)
    marker = Text()
    if buckets.marked is not None and buckets.marked >= offset:
        position = (buckets.marked - offset) * cell
        label = f"▲ {buckets.starts[buckets.marked]}"
        if buckets.unit != "day":
            label += f" ({buckets.unit})"
        # The date goes right of the marker, or left of it near the right edge.
        if position + len(label) > shown * cell and position >= len(label) - 1:
            marker.append(" " * (position - len(label) + 1))
            marker.append(f"{label[2:]} ▲", SELECTED)
        else:
            marker.append(" " * position)
            marker.append(label, SELECTED)
    return Text.assemble(top, "\n", bottom, "\n", marker)


class Timeline(Widget):
    """A three-line chart of when the results happened (``show(hits, selected)``)."""

    DEFAULT_CSS = """
    Timeline { height: 4; }
    """
    #: Below four lines of height the chart is one row of bars under the caption.

    buckets: reactive[Buckets | None] = reactive(None)

    def show(self, hits: Sequence[SearchHit], selected: int | None) -> None:
        self.buckets = bucketize(hits, selected)

    def caption(self) -> str:
        b = self.buckets
        if b is None:
            return "When it came up: no dated results"
        noun = "result" if b.total == 1 else "results"
        return f"When it came up — {b.total} {noun} by {b.unit}, {b.starts[0]} to {b.starts[-1]}"

    def render(self) -> Text:
        title = Text(self.caption(), style="bold", no_wrap=True, overflow="ellipsis")
        if self.buckets is None:
            return title
        chart = render_chart(self.buckets, max(10, self.size.width))
        if self.size.height >= 4:
            return Text.assemble(title, "\n", chart)
        # Short (a small terminal): the caption with the selected date, one row of bars.
        b = self.buckets
        if b.marked is not None:
            title.append(f" · ▲ {b.starts[b.marked]}", SELECTED)
        bars = chart.split("\n")[1]
        return Text.assemble(title, "\n", bars)
