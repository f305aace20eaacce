"""The presented semantic score is the pooled dev-set calibration; fusion blends the steeper
LongMemEval map, so the two never get mixed up."""

from __future__ import annotations

import itertools

import numpy as np

from cwcore.contract import bands
from cwcore.retrieve.semantic import confidence
from cwcore.semantic.search import calibrate


def test_confidence_is_monotone_in_the_unit_interval() -> None:
    values = [confidence(c) for c in np.linspace(-1, 1, 101)]
    assert all(b > a for a, b in itertools.pairwise(values))
    assert values[0] > 0 and values[-1] < 1


def test_a_semantic_hit_reads_high_only_from_a_cosine_near_0_82() -> None:
    assert bands.band(confidence(0.81)) == "moderate"
    assert bands.band(confidence(0.83)) == "high"
    # The map fusion blends with calls the same cosine near-certain: it must not be presented.
    assert bands.band(float(calibrate(0.6))) == "high"
    assert bands.band(confidence(0.6)) == "moderate"
    assert bands.band(confidence(0.3)) == "some"
