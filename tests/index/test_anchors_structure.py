"""Exact anchors and structural spans: kinds, offsets, ranking, determinism."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cwcore.index import anchors, structure
from cwcore.model import DocumentPart
from cwcore.store.limits import PART_SEPARATOR

TEXT = (
    "Why does parseHTTPResponse fail with ERR_BAD_HEADER in src/http/parse.py? "
    "Run `pytest -k slow` with --no-cache. Error: connection refused by 127.0.0.1:8080 after "
    "300ms. See https://example.com/a/b.py and os.path.join, commit 3f9a1c2b, TypeError."
)


def kinds(text: str) -> dict[str, str]:
    return {a.value: a.kind for a in anchors.extract(text)}


def test_anchor_kinds() -> None:
    found = kinds(TEXT)
    assert found["parseHTTPResponse"] == "symbol"
    assert found["ERR_BAD_HEADER"] == "error"
    assert found["src/http/parse.py"] == "path"
    assert found["pytest -k slow"] == "quoted"
    assert found["--no-cache"] == "flag"
    assert found["127.0.0.1:8080"] == "value"
    assert found["300ms"] == "value"
    assert found["https://example.com/a/b.py"] == "value"
    assert "example.com/a/b.py" not in found  # a URL is not also a path
    assert found["os.path.join"] == "symbol"
    assert found["3f9a1c2b"] == "commit"
    assert found["TypeError"] == "error"
    assert found["Error: connection refused by 127.0.0.1:8080 after 300ms"] == "error"


def test_offsets_slice_to_values() -> None:
    for a in anchors.extract(TEXT):
        assert TEXT[a.start : a.end] == a.value


def test_ranking_prefers_errors_paths_symbols() -> None:
    order = [a.kind for a in anchors.ranked(anchors.extract(TEXT))]
    assert order.index("error") < order.index("path") < order.index("symbol") < order.index("value")


def test_exact_looking() -> None:
    assert anchors.is_exact_looking("REAP_DRAIN")
    assert anchors.is_exact_looking("src/app/main.py")
    assert anchors.is_exact_looking('"the exact words"')
    assert not anchors.is_exact_looking("how did we fix the flaky test")
    assert not anchors.is_exact_looking("")


@given(st.text(max_size=300))
def test_extract_never_crashes_and_offsets_hold(text: str) -> None:
    for a in anchors.extract(text):
        assert text[a.start : a.end] == a.value
        assert anchors.MIN_ANCHOR <= len(a.value) <= anchors.MAX_ANCHOR


def _doc(*parts: tuple[str, str]) -> list[DocumentPart]:
    return [DocumentPart(f"{r}:{i}", r, "text", t) for i, (r, t) in enumerate(parts)]  # type: ignore[arg-type]


def test_structure_relations_and_offsets() -> None:
    parts = _doc(
        ("user", "Why is the daemon slow? Please add a cache."),
        ("assistant", "Because every call reopens RocksDB.\n\nI'll add an LRU."),
        ("user", "No, that's wrong: use the existing pool instead."),
        ("assistant", "Understood. We will use the existing pool from now on."),
    )
    found = structure.detect(parts)
    text = PART_SEPARATOR.join(p.text for p in parts)
    spans = [(a.relation, text[a.start : a.end]) for a in found]
    assert ("question", "Why is the daemon slow?") in spans
    assert ("request", "Please add a cache.") in spans
    assert ("answer", "Because every call reopens RocksDB.") in spans
    assert any(r == "correction" and s.startswith("No, that's wrong") for r, s in spans)
    assert ("decision", "We will use the existing pool from now on.") in spans
    assert structure.is_decision_candidate(found)


def test_structure_italian() -> None:
    found = structure.detect(
        _doc(
            ("user", "Perché il test fallisce? Correggi il parser."),
            ("user", "Abbiamo deciso di usare RocksDB."),
        )
    )
    assert [a.relation for a in found] == ["question", "request", "decision"]


@given(
    st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.text(max_size=80)), max_size=6)
)
def test_structure_deterministic_and_in_bounds(raw: list[tuple[str, str]]) -> None:
    parts = _doc(*raw)
    text = PART_SEPARATOR.join(p.text for p in parts)
    first = structure.detect(parts)
    assert first == structure.detect(parts)
    for a in first:
        assert 0 <= a.start < a.end <= len(text)


def test_pattern_gates_never_change_what_is_extracted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each pattern's gate is a necessary condition: gated extraction equals running every
    pattern over every text (random strings over the characters the patterns care about)."""
    import random

    rnd = random.Random(19)
    alphabet = "aZfE_09./\\:@-`'\"()~+ \n\tÉıK\u212a検E!%vx->=msKMh"
    samples = [
        "TypeError: bad ERR_X at src/a/b.py line 3, see https://x.y/z and v1.2.3 on 10.0.0.1:80",
        "run --no-cache -rf then call os.path.join() and parseHTTPResponse; commit 3f2a9c1d",
        "took 12 ms (3.5 GiB) `code` \"quoted text\" 'single one' PANİC: failed to exceptıon x",
    ]
    samples += [
        "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 60))) for _ in range(3000)
    ]
    gated = [anchors.extract(t) for t in samples]
    monkeypatch.setattr(anchors, "_passes", lambda text, gates, memo: True)
    assert [anchors.extract(t) for t in samples] == gated
