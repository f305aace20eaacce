"""An experimental tantivy scorer behind :func:`cwcore.index.bm25.search`'s interface.

Off by default: :mod:`cwcore.retrieve.lexical` calls :func:`scorer` only when
``CW_LEXICAL_ENGINE=tantivy`` (or ``lexical.LEXICAL_ENGINE`` is overridden), so the default path
never imports tantivy. It exists to measure tantivy against the posting engine on the same
windows and the same query pipeline (docs/performance.md, "Tantivy under the lexical tier:
measured"); it is not the replacement itself.

What it indexes: the same analyzed windows the indexer publishes. On the first query after a
new index generation it reads the applied-document markers, prepares each new live document
again (:func:`cwcore.index.prepare.prepare`, the indexer's own analysis) and adds one tantivy
document per window:

* ``wid`` (i64, indexed and fast): the window's id, which ``Hits.ordinals`` carries;
* ``doc`` (i64, indexed): the document ordinal, the key a document's windows are deleted by
  (tantivy-py 0.27 silently deletes nothing by an unsigned field: i64 on purpose);
* ``body``: cw's own terms joined by spaces, under a whitespace tokenizer, so tantivy's terms
  are exactly cw's analyzer output;
* ``terms`` (stored bytes): the window's distinct terms, to say which query terms a hit holds.

BM25F by weighted token repetition: a term of BM25F-weighted frequency ``tf`` (user prose 1.5,
tool output 0.5, boosted spans ×2 …, :mod:`cwcore.index.fields`) is written
``max(1, round(tf × REPEAT_SCALE))`` times, so tantivy's integer frequency and field length are
the weighted ones scaled by :data:`REPEAT_SCALE`. That is an emulation, not cw's formula: the
scale changes where BM25's saturation sets in, and tantivy quantizes field lengths to 256
buckets.

Not done here (what a replacement still needs): the index is rebuilt from scratch in each
process (no cursor carried in the commit), retired windows stay counted in N and df until
they are deleted on the next sync, and the importance prior and visibility stay where they are
(applied above this interface, as for the posting engine).

Memory: one writer thread with a :data:`WRITER_HEAP` byte heap (writer heap × threads is the
bound; an uncapped writer sized itself from the core count).
"""

from __future__ import annotations

import shutil
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cwcore.config import Settings, load
from cwcore.errors import CwError, NotFound
from cwcore.index import bm25, derived
from cwcore.index.postings import PostingIndex, PostingReader, U32Array
from cwcore.index.prepare import prepare
from cwcore.store import codec
from cwcore.store.reader import Reader
from cwcore.store.records import Manifest
from cwcore.store.rocks import Store

#: Tokens written per unit of BM25F weight (see the module docstring).
REPEAT_SCALE = 2.0
#: Writer heap in bytes and writer threads: the writer's memory bound is their product.
WRITER_HEAP = 50_000_000
WRITER_THREADS = 1
#: Documents added between commits while building.
COMMIT_EVERY = 5_000
_TOKENIZER = "cw"

Scorer = Callable[..., bm25.Hits]


def available() -> bool:
    """True when the ``tantivy`` package imports."""
    try:
        import tantivy  # noqa: F401
    except ImportError:
        return False
    return True


def repeated(tfs: Mapping[str, float], scale: float | None = None) -> str:
    """``tfs`` as whitespace-separated text whose term counts are the weighted frequencies
    times ``scale`` (:data:`REPEAT_SCALE` when None, read at each call so an evaluation's
    ``--override`` applies; at least one occurrence per term of positive weight)."""
    scale = REPEAT_SCALE if scale is None else scale
    out: list[str] = []
    for term, tf in tfs.items():
        if tf > 0:
            out.extend([term] * max(1, round(tf * scale)))
    return " ".join(out)


@dataclass(frozen=True)
class BuildStats:
    """One sync: documents and windows added, documents deleted, seconds spent preparing
    (cw's analysis) and in tantivy (add and commit)."""

    documents: int
    windows: int
    deleted: int
    prepare_s: float
    tantivy_s: float


class TantivyLexical:
    """A tantivy index of one store's live windows, synced to its published generation."""

    def __init__(self, store: Store, path: Path, settings: Settings | None = None) -> None:
        import tantivy

        self._t = tantivy
        # Weak: the process-wide cache is keyed by the store, so a strong reference here
        # would keep every closed store and its index alive.
        self._store = weakref.ref(store)
        self.path = path
        self.settings = settings or _settings(store)
        shutil.rmtree(path, ignore_errors=True)  # rebuilt per process (module docstring)
        path.mkdir(parents=True)
        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("wid", stored=False, indexed=True, fast=True)
        builder.add_integer_field("doc", stored=False, indexed=True, fast=False)
        builder.add_text_field("body", stored=False, tokenizer_name=_TOKENIZER, index_option="freq")
        builder.add_bytes_field("terms", stored=True, indexed=False, fast=False)
        self.schema = builder.build()
        self.index = tantivy.Index(self.schema, path=str(path))
        analyzer = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()
        self.index.register_tokenizer(_TOKENIZER, analyzer)
        self._lock = threading.Lock()
        self._synced: int | None = None
        self._indexed: dict[int, int] = {}  # document ordinal -> first wid
        self.last_build: BuildStats | None = None

    @property
    def store(self) -> Store:
        store = self._store()
        if store is None:
            raise RuntimeError("tantivy_engine: the store was closed and collected")
        return store

    # -- indexing ------------------------------------------------------------------------------

    def sync(self) -> BuildStats | None:
        """Bring the index to the store's published generation; None when already there."""
        gen = int(derived.generation(self.store)["n"])
        if gen == self._synced:
            return None
        with self._lock:
            if gen == self._synced:
                return None
            stats = self._sync()
            self._synced = gen
            self.last_build = stats
            return stats

    def _live_markers(self) -> dict[int, dict[str, Any]]:
        reader = Reader(self.store)
        live: dict[int, dict[str, Any]] = {}
        for key, value in self.store.scan("windows", derived.DOC_WINDOWS.prefix()):
            ordinal = int(derived.DOC_WINDOWS.decode(key)[0])
            mark = codec.decode_record(value, "doc-windows")
            if mark.get("forgotten") or not int(mark.get("windows", 0)):
                continue
            if reader.tombstone(ordinal) is not None:
                continue
            live[ordinal] = mark
        return live

    def _sync(self) -> BuildStats:
        t = self._t
        live = self._live_markers()
        reader = Reader(self.store)
        writer = self.index.writer(heap_size=WRITER_HEAP, num_threads=WRITER_THREADS)
        deleted = 0
        for ordinal, first in list(self._indexed.items()):
            mark = live.get(ordinal)
            if mark is None or int(mark["firstWid"]) != first:
                writer.delete_documents_by_term("doc", ordinal)
                del self._indexed[ordinal]
                deleted += 1
        prep_s = tan_s = 0.0
        docs = windows = 0
        for ordinal, mark in live.items():
            if ordinal in self._indexed:
                continue
            t0 = time.perf_counter()
            try:
                manifest = reader.manifest(str(mark["documentId"]), int(mark["version"]))
            except (NotFound, CwError):
                continue
            prepared = prepare(
                reader,
                manifest,
                window_tokens=self.settings.window_tokens,
                window_overlap=self.settings.window_overlap,
                chain_depth=_chain_depth(reader, manifest),
            )
            t1 = time.perf_counter()
            first = int(mark["firstWid"])
            for window, terms in zip(prepared.windows, prepared.terms, strict=True):
                if not terms.tfs:
                    continue
                doc = t.Document()
                doc.add_integer("wid", first + window.index)
                doc.add_integer("doc", ordinal)
                doc.add_text("body", repeated(terms.tfs))
                doc.add_bytes("terms", "\n".join(terms.tfs).encode())
                writer.add_document(doc)
                windows += 1
            self._indexed[ordinal] = first
            docs += 1
            if docs % COMMIT_EVERY == 0:
                writer.commit()
            tan_s += time.perf_counter() - t1
            prep_s += t1 - t0
        t1 = time.perf_counter()
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        tan_s += time.perf_counter() - t1
        return BuildStats(docs, windows, deleted, prep_s, tan_s)

    def disk_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())

    # -- search --------------------------------------------------------------------------------

    def search(
        self,
        terms: Sequence[str],
        *,
        k: int = 10,
        only: U32Array | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> bm25.Hits:
        """:func:`cwcore.index.bm25.search`'s contract (OR of distinct terms, best first,
        ``masks`` bit j for ``terms[j]``, ``only`` a scope of window ids, ``weights`` a query
        weight per term), scored by tantivy's BM25 over the repeated-token windows.
        ``avgdl`` is 0 (tantivy does not expose it) and nothing is ever truncated."""
        t = self._t
        self.sync()
        uniq = tuple(dict.fromkeys(x for x in terms if x))
        searcher = self.index.searcher()
        n_docs = int(searcher.num_docs)
        if not uniq or k <= 0 or n_docs == 0:
            return bm25._empty(uniq, n_docs, 0.0)
        dfs = {x: int(searcher.doc_freq("body", x)) for x in uniq}
        present = sorted((x for x in uniq if dfs[x]), key=lambda x: (dfs[x], x))
        present = present[: bm25.MAX_QUERY_TERMS]
        if not present:
            return bm25._empty(uniq, n_docs, 0.0)
        weights = weights or {}
        should = []
        for x in present:
            q = t.Query.term_query(self.schema, "body", x, index_option="freq")
            w = weights.get(x, 1.0)
            should.append((t.Occur.Should, q if w == 1.0 else t.Query.boost_query(q, w)))
        query = t.Query.boolean_query(should)
        if only is not None:
            scope = t.Query.term_set_query(self.schema, "wid", [int(o) for o in only])
            query = t.Query.boolean_query(
                [(t.Occur.Must, query), (t.Occur.Must, t.Query.const_score_query(scope, 0.0))]
            )
        found = searcher.search(query, limit=k, count=False).hits
        addresses = [a for _, a in found]
        wids = searcher.fast_field_values("wid", addresses) if addresses else []
        bit = {x: 1 << j for j, x in enumerate(uniq)}
        framed = [(x, b"\n" + x.encode() + b"\n") for x in uniq]
        masks, counts = [], []
        for address in addresses:
            stored = searcher.doc(address).get_first("terms")
            # Each query term looked up in the window's newline-framed term list: a few
            # substring searches in C, where splitting it walked ~250 terms in Python.
            held = b"\n" + bytes(stored or b"") + b"\n"
            mask = 0
            for x, b in framed:
                if b in held:
                    mask |= bit[x]
            masks.append(mask)
            counts.append(bin(mask).count("1"))
        return bm25.Hits(
            np.asarray(wids, np.uint32),
            np.asarray([s for s, _ in found], np.float64),
            np.asarray(counts, np.uint8),
            np.asarray(masks, np.uint64),
            uniq,
            {x: dfs[x] for x in present},
            n_docs,
            0.0,
            0,
            False,
        )


def _settings(store: Store) -> Settings:
    """The home's settings (the store lives at ``<home>/store``), defaults if unreadable."""
    try:
        return load(store.path.parent)[0]
    except (CwError, OSError):
        return Settings()


def _chain_depth(reader: Reader, manifest: Manifest) -> int:
    """The indexer's supersession-chain depth (:meth:`IndexWorker._chain_depth`)."""
    depth, current = 0, manifest.get("supersedes")
    while current and depth < 8:
        depth += 1
        try:
            current = reader.manifest(current).get("supersedes")
        except (NotFound, CwError):
            break
    return depth + max(0, int(manifest["version"]) - 1)


# Keyed by the store object itself, weakly: an engine lives as long as its open store.
_ENGINES: weakref.WeakKeyDictionary[Store, TantivyLexical] = weakref.WeakKeyDictionary()
_ENGINES_LOCK = threading.Lock()


def engine_for(store: Store) -> TantivyLexical:
    """The process's tantivy index of ``store`` (built on first use, beside the store)."""
    with _ENGINES_LOCK:
        found = _ENGINES.get(store)
        if found is None:
            path = store.path.with_name(store.path.name + "-tantivy")
            found = TantivyLexical(store, path)
            _ENGINES[store] = found
        return found


def scorer(index: PostingIndex) -> Scorer:
    """A callable with :func:`cwcore.index.bm25.search`'s signature answering from tantivy."""
    engine = engine_for(index.store)

    def search(
        reader: PostingReader,
        terms: Sequence[str],
        *,
        k: int = 10,
        only: U32Array | None = None,
        weights: Mapping[str, float] | None = None,
        **_: Any,
    ) -> bm25.Hits:
        return engine.search(terms, k=k, only=only, weights=weights)

    return search
