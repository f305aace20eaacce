"""The lexical/semantic tier order: RRF credit from both modes, blend, prior, determinism."""

from __future__ import annotations

from cwcore.retrieve.fusion import fuse_tier


def test_found_by_both_modes_ranks_first() -> None:
    lexical = [("a", 0.9), ("b", 0.6), ("c", 0.5)]
    semantic = [("d", 0.9), ("b", 0.7), ("e", 0.4)]
    order = [e.key for e in fuse_tier(lexical, semantic)]
    assert order[0] == "b"
    assert set(order) == {"a", "b", "c", "d", "e"}
    by_key = {e.key: e for e in fuse_tier(lexical, semantic)}
    assert by_key["b"].fused.ranks == {"lexical": 2, "semantic": 2}


def test_prior_reorders_near_ties_only() -> None:
    lexical = [("a", 0.5), ("b", 0.5)]
    plain = [e.key for e in fuse_tier(lexical, [])]
    boosted = [e.key for e in fuse_tier(lexical, [], {"b": 1.15})]
    assert plain == ["a", "b"] and boosted == ["b", "a"]
    far = [("a", 0.95), ("b", 0.05)] + [(f"x{i}", 0.01) for i in range(20)]
    assert fuse_tier(far, [], {"b": 1.15})[0].key == "a"


def test_semantic_only_and_empty() -> None:
    assert fuse_tier([], []) == []
    only = fuse_tier([], [("s1", 0.8), ("s2", 0.3)])
    assert [e.key for e in only] == ["s1", "s2"]
    assert all(e.prior == 1.0 for e in only)
