"""Relevance bands: a stopping-criterion contract beside the calibrated score.

``high`` >= 0.8, ``moderate`` 0.5–0.8, ``some`` 0.2–0.5, ``low`` < 0.2, always computed from the
presented (per-mode calibrated) score, never from a fused or reranked order.
"""

from __future__ import annotations

BANDS: tuple[tuple[float, str], ...] = ((0.8, "high"), (0.5, "moderate"), (0.2, "some"))
LOW = "low"


def band(score: float) -> str:
    for threshold, name in BANDS:
        if score >= threshold:
            return name
    return LOW
