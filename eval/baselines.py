"""Baseline retrievers run beside cw over the same units: SQLite FTS5, bm25s, MiniLM dense, and
an RRF hybrid of FTS5 with dense (k = 60).

A *unit* is what a baseline indexes and returns: ``(unit id, text, group)``, ``group`` being the
scope a query may be restricted to (a session). The agent-log set uses one unit per JSONL line,
LongMemEval one per cw turn document; each set says which.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Unit:
    uid: str
    text: str
    group: str


def stopwords() -> set[str]:
    """cw's full English and Italian stopword list (grammar, workflow and acknowledgement words):
    the baselines drop these from a query. It is longer than the grammar list cw's own search
    drops, and it scored FTS5 higher on both LongMemEval (recall_all@5 0.926 against 0.905) and
    the agent logs (hit@1 0.673 against 0.653), so the baselines get the stronger setting."""
    from cwcore.text.stopwords import STOPWORDS

    return set(STOPWORDS)


def query_terms(query: str, stop: set[str]) -> list[str]:
    return [w for w in dict.fromkeys(_WORD.findall(query.lower())) if w not in stop]


class Fts5:
    """SQLite FTS5 (unicode61 tokenizer, ``bm25()``), the query's non-stopword words OR-ed."""

    def __init__(self, units: Sequence[Unit]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE u USING fts5(body, uid UNINDEXED, grp UNINDEXED)")
        self.db.executemany(
            "INSERT INTO u VALUES (?, ?, ?)", [(x.text, x.uid, x.group) for x in units]
        )
        self.stop = stopwords()

    def search(self, query: str, k: int, groups: Sequence[str] | None = None) -> list[str]:
        return [r[0] for r in self._rows("uid", query, k, groups)]

    def page(
        self, query: str, k: int, groups: Sequence[str] | None = None
    ) -> list[tuple[str, str]]:
        """``(uid, snippet)`` of the top ``k``: what a results list shows, as cw's page does
        (FTS5's ``snippet()``, up to 48 tokens around the matches, matches bracketed). The
        bench's "what a user sees" reference beside the bare ranking of :meth:`search`."""
        return self._rows("uid, snippet(u, 0, '[', ']', '…', 48)", query, k, groups)

    def _rows(self, columns: str, query: str, k: int, groups: Sequence[str] | None) -> list[Any]:
        terms = query_terms(query, self.stop)
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        if groups is None:
            return self.db.execute(
                f"SELECT {columns} FROM u WHERE u MATCH ? ORDER BY bm25(u) LIMIT {int(k)}", [match]
            ).fetchall()
        marks = ",".join("?" * len(groups))
        return self.db.execute(
            f"SELECT {columns} FROM u WHERE u MATCH ? AND grp IN ({marks}) "
            f"ORDER BY bm25(u) LIMIT {int(k)}",
            [match, *groups],
        ).fetchall()


class Bm25s:
    """bm25s (Lucene BM25, English stopwords); a group restriction is a weight mask. With
    ``stem`` (the ``bm25s-stem`` system), documents and queries are stemmed by PyStemmer's
    Snowball English stemmer, as bm25s's own examples do."""

    def __init__(self, units: Sequence[Unit], *, stem: bool = False) -> None:
        import bm25s

        self.bm25s = bm25s
        self.stemmer: Any = None
        if stem:
            import Stemmer  # PyStemmer

            self.stemmer = Stemmer.Stemmer("english")
        self.uids = [u.uid for u in units]
        self.groups = np.array([u.group for u in units])
        tokens = bm25s.tokenize(
            [u.text for u in units], stopwords="en", stemmer=self.stemmer, show_progress=False
        )
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)

    def search(self, query: str, k: int, groups: Sequence[str] | None = None) -> list[str]:
        q = self.bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not q.ids or not len(q.ids[0]):
            return []
        mask = None
        n = len(self.uids)
        if groups is not None:
            mask = np.isin(self.groups, list(groups)).astype(np.float32)
            n = int(mask.sum())
        k = int(min(k, n))
        if k <= 0:
            return []
        ids, scores = self.retriever.retrieve(q, k=k, show_progress=False, weight_mask=mask)
        return [self.uids[int(i)] for i, s in zip(ids[0], scores[0], strict=True) if s > 0]


class Dense:
    """MiniLM (cw's installed model, 256 tokens) over the units, brute-force cosine.

    ``embed`` is ``(texts) -> float32 (n, dim) normalized``; vectors come from the eval cache when
    the same text was embedded before (the model identity is part of the digest).
    """

    def __init__(
        self,
        units: Sequence[Unit],
        embed: Callable[[list[str]], np.ndarray],
        embed_query: Callable[[str], np.ndarray],
    ) -> None:
        self.uids = [u.uid for u in units]
        self.groups = np.array([u.group for u in units])
        self.embed_query = embed_query
        self.matrix = embed([u.text or " " for u in units]).astype(np.float32)

    def search(self, query: str, k: int, groups: Sequence[str] | None = None) -> list[str]:
        q = self.embed_query(query).astype(np.float32)
        cos = self.matrix @ q
        if groups is not None:
            cos = np.where(np.isin(self.groups, list(groups)), cos, -np.inf)
        k = min(k, int(np.isfinite(cos).sum()))
        if k <= 0:
            return []
        top = np.argpartition(-cos, k - 1)[:k]
        top = top[np.argsort(-cos[top], kind="stable")]
        return [self.uids[int(i)] for i in top]


def rrf(rankings: Sequence[Sequence[str]], k: int, c: int = 60) -> list[str]:
    """Plain reciprocal rank fusion (score = sum of 1 / (c + rank)), the simplest hybrid."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, uid in enumerate(ranking, start=1):
            score[uid] = score.get(uid, 0.0) + 1.0 / (c + rank)
    return sorted(score, key=lambda u: (-score[u], u))[:k]


class RrfHybrid:
    """RRF(FTS5, dense), k = 60, over the same units."""

    def __init__(self, fts: Fts5, dense: Dense, depth: int = 50) -> None:
        self.fts, self.dense, self.depth = fts, dense, depth

    def search(self, query: str, k: int, groups: Sequence[str] | None = None) -> list[str]:
        return rrf(
            [
                self.fts.search(query, self.depth, groups),
                self.dense.search(query, self.depth, groups),
            ],
            k,
        )


def embedder_functions(home: Any, cache: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """cw's installed MiniLM as two plain functions, vectors cached by content digest."""
    from cwcore.semantic.embedder import Embedder

    embedder = Embedder.for_home(home, background=False)

    def embed(texts: list[str]) -> np.ndarray:
        # In slices, so each model call stays well inside its timeout and what was computed is
        # cached even if a later slice fails.
        parts = [
            np.asarray(embedder.embed(texts[i : i + 128], cache=cache, timeout=3600), np.float32)
            for i in range(0, len(texts), 128)
        ]
        return np.concatenate(parts) if parts else np.zeros((0, 384), np.float32)

    def embed_query(text: str) -> np.ndarray:
        return np.asarray(embedder.embed_query(text), dtype=np.float32)

    return embed, embed_query
