"""Activity sparklines: sessions per day, drawn with block characters.

Presentation only: the counts come from the archive's facets (``Archive.facets(activity_days=…)``,
sessions per day counted in the engine); nothing here reads the store.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Eight heights; an empty day is a low dot so the time axis stays visible.
BARS = "▁▂▃▄▅▆▇█"
EMPTY = "·"


def sparkline(counts: Sequence[int]) -> str:
    """One character per count, scaled to the largest; zero days are :data:`EMPTY`."""
    peak = max(counts, default=0)
    if peak <= 0:
        return EMPTY * len(counts)
    top = len(BARS) - 1
    return "".join(
        EMPTY if n <= 0 else BARS[max(0, min(top, round(n / peak * top)))] for n in counts
    )
