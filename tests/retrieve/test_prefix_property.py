"""The top k of a search is a prefix of its top k + n (issue 32: a deeper ``limit`` reordered the
top). Candidate depth is fixed by the limits, never by ``limit``; the first round's head is
reranked once; deeper rounds only append. Checked over generated corpora and queries, lexical
and hybrid (hash-vector embeddings, so the semantic list is arbitrary but deterministic)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cwcore.api import Archive
from cwcore.semantic import index as handler
from tests.helpers import write_jsonl
from tests.semantic.conftest import FakeEmbedder
from tests.support import engine_of, semantic_of, use_embedder

WORDS = ["lease", "retry", "socket", "parser", "cache", "token", "window", "daemon", "merge"]
WORDS += ["sqlite", "banner", "font", "deploy", "branch", "timeout", "index"]


class QueryEmbedder(FakeEmbedder):
    def embed_query(self, text: str, **_: Any) -> np.ndarray:
        return self.vector(text)


message = st.lists(st.sampled_from(WORDS), min_size=2, max_size=24).map(" ".join)
corpus = st.lists(message, min_size=5, max_size=70)
query = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
_homes = itertools.count()


def _archive(base: Path, texts: list[str]) -> Archive:
    home = base / f"home-{next(_homes)}"
    rows = [
        {
            "session": f"s{i % 3}",
            "id": f"m{i}",
            "role": "user",  # each message its own turn: one document each
            "text": text,
            "timestamp": f"2026-11-10T{10 + i // 60:02d}:{i % 60:02d}:00Z",
        }
        for i, text in enumerate(texts)
    ]
    src = write_jsonl(base / f"c-{next(_homes)}.jsonl", rows)
    arch = Archive.open(home, embedded=True)
    arch.import_paths([src], fmt="cw-jsonl")
    return arch


def _ids(arch: Archive, body: dict[str, Any], limit: int) -> list[str]:
    return [h.document_id for h in arch.search({**body, "limit": limit}).results]


@pytest.mark.xfail(
    strict=True,
    reason=(
        "candidate depth follows --limit again: the spec's fixed depths (lexical 30, vector 30) "
        "ranked lower on agent logs and conversations (cwcore/retrieve/search.py docstring)"
    ),
)
# No shrink phase: the property is known to fail (xfail above), and shrinking the counterexample
# to a minimal one took over 80 s of the fast tier for a report nobody reads; the first failure
# is enough for xfail, and a fix still shows as XPASS, which strict turns into a failure.
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(
    texts=corpus,
    queries=st.lists(query, min_size=1, max_size=4),
    k=st.integers(1, 12),
    n=st.integers(1, 60),
    hybrid=st.booleans(),
)
def test_top_k_is_a_prefix_of_top_k_plus_n(
    tmp_path: Path, texts: list[str], queries: list[str], k: int, n: int, hybrid: bool
) -> None:
    arch = _archive(tmp_path, texts)
    try:
        policy = "never"
        if hybrid:
            engine = engine_of(arch)
            handler.embed_pending(engine.store, engine.reader, 1_000, embedder=FakeEmbedder())
            use_embedder(semantic_of(arch), QueryEmbedder())
            policy = "always"
        for q in queries:
            body = {"query": q, "semanticPolicy": policy}
            short, deep = _ids(arch, body, k), _ids(arch, body, k + n)
            assert deep[: len(short)] == short, (q, k, n)
            assert len(short) == min(k, len(deep))
    finally:
        arch.close()


def test_a_page_past_the_first_rounds_head_appends_below_it(
    archive: Archive, tmp_path: Path
) -> None:
    # 150 documents match: the first round hands on 40, the 41st on comes from deeper rounds.
    rows = [
        {"session": "s", "id": f"m{i}", "role": "user", "text": f"retry lease {i} " + "x " * i}
        for i in range(150)
    ]
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", rows)], fmt="cw-jsonl")
    body = {"query": "retry lease", "semanticPolicy": "never"}
    tops = {limit: _ids(archive, body, limit) for limit in (5, 40, 41, 100)}
    assert len(tops[100]) == 100
    for a, b in itertools.pairwise((5, 40, 41, 100)):
        assert tops[b][: len(tops[a])] == tops[a]
