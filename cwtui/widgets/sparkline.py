"""Activity sparklines: sessions per day, drawn with block characters.

Presentation only: the counts come from the ``started``/``ended`` stamps of sessions the TUI has
already loaded through the Archive; nothing here reads the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime, timedelta

from cwcore.clock import parse_time
from cwcore.errors import CwError

#: Eight heights; an empty day is a low dot so the time axis stays visible.
BARS = "▁▂▃▄▅▆▇█"
EMPTY = "·"


def activity_day(started: str | None, ended: str | None) -> date | None:
    """The UTC day a session counts for: the day it started, else the day it ended."""
    stamp = started or ended
    if not stamp:
        return None
    try:
        return parse_time(stamp).date()
    except CwError:  # a stamp the engine could not normalize: leave it off the chart
        return None


def daily_counts(days: Iterable[date | None], *, end: datetime, span: int) -> list[int]:
    """Counts per day for the ``span`` days ending with ``end``'s day (oldest first).

    Days outside the window (and ``None``) are ignored.
    """
    last = end.date()
    first = last - timedelta(days=span - 1)
    counts = [0] * span
    for day in days:
        if day is not None and first <= day <= last:
            counts[(day - first).days] += 1
    return counts


def sparkline(counts: Sequence[int]) -> str:
    """One character per count, scaled to the largest; zero days are :data:`EMPTY`."""
    peak = max(counts, default=0)
    if peak <= 0:
        return EMPTY * len(counts)
    top = len(BARS) - 1
    return "".join(
        EMPTY if n <= 0 else BARS[max(0, min(top, round(n / peak * top)))] for n in counts
    )
