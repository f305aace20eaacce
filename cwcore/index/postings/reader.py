"""Reading postings for a query: :class:`PostingReader` plans a query's terms over the live
segments, then fetches, views or looks up only the blocks it needs, decoding with numpy.

Readers take no lock: they read the manifest, then entries and blocks, then check the manifest
again; :class:`ManifestChanged` tells the caller to retry.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from cwcore.errors import CorruptRecord
from cwcore.index.postings.codec import (
    _ENTRY_HEAD,
    BlockView,
    F64Array,
    Postings,
    TermEntry,
    U32Array,
    decode_entry,
    view_block,
)
from cwcore.index.postings.layout import POSTINGS_CF, Snapshot, block_key, term_digest, term_key

if TYPE_CHECKING:
    from cwcore.index.postings.index import PostingIndex


@dataclass(frozen=True)
class TermPlan:
    """A query term's entries in the live segments, with its summed statistics."""

    term: str
    digest: bytes
    entries: tuple[TermEntry, ...]

    @property
    def df(self) -> int:
        """Postings over the live segments, retired documents included."""
        return sum(e.df for e in self.entries)

    @property
    def max_tf(self) -> float:
        return max((e.max_tf for e in self.entries), default=0.0)

    @property
    def min_dl(self) -> float:
        return min((e.min_dl for e in self.entries), default=0.0)


class ManifestChanged(Exception):
    """A merge or flush switched the manifest during a read: the reader retries."""


class PostingReader:
    """Reads postings for query terms: one ``get_many`` for the term entries of every live
    segment, one per term for its blocks, numpy decoding."""

    def __init__(self, index: PostingIndex) -> None:
        self.index = index
        self.store = index.store
        self.generation = index.generation

    def snapshot(self) -> Snapshot:
        return self.index.snapshot()

    def check(self, snap: Snapshot) -> None:
        """Raise :class:`ManifestChanged` if the manifest moved since ``snap`` was taken."""
        if self.index.manifest_raw() != snap.raw:
            raise ManifestChanged

    def plan(self, snap: Snapshot, terms: Sequence[str]) -> list[TermPlan]:
        """Term entries of ``terms`` in every live segment (missing terms get empty plans)."""
        segments = [s.id for s in snap.manifest.segments]
        digests = [term_digest(t) for t in terms]
        gen = self.generation
        keys = [term_key(gen, s, d) for d in digests for s in segments]
        values = self.store.get_many(POSTINGS_CF, keys) if keys else []
        plans = []
        for i, (term, digest) in enumerate(zip(terms, digests, strict=True)):
            row = values[i * len(segments) : (i + 1) * len(segments)]
            entries = tuple(
                decode_entry(s, v) for s, v in zip(segments, row, strict=True) if v is not None
            )
            plans.append(TermPlan(term, digest, entries))
        return plans

    def _select(
        self, plan: TermPlan, near: U32Array | None, newest: int | None
    ) -> tuple[list[TermEntry], list[bytes]]:
        """The inline entries and the block keys of ``plan`` that :meth:`fetch` describes."""
        inline: list[TermEntry] = []
        wanted: list[tuple[int, int]] = []  # (segment, block number)
        by_last: list[tuple[int, int, int, int]] = []  # (last ordinal, segment, block, count)
        for entry in plan.entries:
            if entry.inline:
                inline.append(entry)
                continue
            nblocks = len(entry.counts)
            if near is None and newest is None:
                wanted.extend((entry.segment, n) for n in range(nblocks))
                continue
            if near is not None and len(near):
                # A block is wanted when some ``near`` ordinal lies in [its first, its last]:
                # two searches per block rather than one per ordinal (``near`` can be every
                # candidate of a query, the blocks are a few per term).
                lo = np.searchsorted(near, entry.firsts, side="left")
                hi = np.searchsorted(near, entry.lasts, side="right")
                wanted.extend((entry.segment, n) for n in np.flatnonzero(hi > lo).tolist())
            if newest is not None:
                by_last.extend(
                    (last, entry.segment, n, count)
                    for n, (last, count) in enumerate(
                        zip(entry.lasts.tolist(), entry.counts.tolist(), strict=True)
                    )
                )
        if newest is not None:
            have = sum(e.df for e in inline)
            for _, segment, n, count in sorted(by_last, reverse=True):
                if have >= newest:
                    break
                wanted.append((segment, n))
                have += count
        gen = self.generation
        return inline, [block_key(gen, s, plan.digest, n) for s, n in sorted(set(wanted))]

    def _block_views(
        self, plan: TermPlan, near: U32Array | None, newest: int | None
    ) -> list[BlockView]:
        """Views of the inline lists, then of the blocks, that :meth:`fetch` describes."""
        inline, keys = self._select(plan, near, newest)
        return [view_block(e.raw, _ENTRY_HEAD.size) for e in inline] + self._read_views(keys)

    def _read_views(self, keys: list[bytes]) -> list[BlockView]:
        """The blocks at ``keys``, decoded; :class:`ManifestChanged` if one vanished."""
        if not keys:
            return []
        views = []
        for value in self.store.get_many(POSTINGS_CF, keys):
            if value is None:
                raise ManifestChanged
            views.append(view_block(value))
        return views

    def fetch(
        self, plan: TermPlan, *, near: U32Array | None = None, newest: int | None = None
    ) -> Postings:
        """Decode ``plan``'s postings, sorted by ordinal.

        With neither argument: every posting. ``near`` (sorted ordinals): only the blocks whose
        ordinal range covers one of them. ``newest``: the blocks holding the highest ordinals
        until at least ``newest`` postings are covered (plus the ``near`` blocks). Inline
        postings always come whole. Raises :class:`ManifestChanged` if a block vanished.
        """
        return _gather(self._block_views(plan, near, newest))

    def views(self, plan: TermPlan, ordinals: U32Array, retired: U32Array) -> list[BlockView]:
        """Zero-copy views of the inline lists and of the blocks covering ``ordinals`` or
        ``retired`` (both sorted): what scoring existing candidates needs, and no more."""
        near = np.union1d(ordinals, retired) if len(retired) else ordinals
        return self._block_views(plan, near, None)

    def lookup(
        self, plan: TermPlan, ordinals: U32Array, retired: U32Array
    ) -> tuple[npt.NDArray[np.intp], F64Array, F64Array, int]:
        """``plan``'s postings at the sorted ``ordinals`` only: ``(where, tf, dl, retired_seen)``.

        ``where`` indexes ``ordinals`` (the ones the term occurs in); ``retired_seen`` counts the
        term's postings of ``retired`` ordinals (exact: their blocks are read too). Only the
        needed blocks are read, and tf/dl are converted at the hits only (MaxScore's cheap path).
        """
        where: list[npt.NDArray[np.intp]] = []
        tfs: list[F64Array] = []
        dls: list[F64Array] = []
        retired_seen = 0
        for view in self.views(plan, ordinals, retired):
            ords = view.ordinals
            if not len(ords):
                continue
            lo = int(np.searchsorted(ordinals, ords[0], side="left"))
            hi = int(np.searchsorted(ordinals, ords[-1], side="right"))
            if hi > lo:
                wanted = ordinals[lo:hi]
                pos = np.searchsorted(ords, wanted)  # wanted <= ords[-1]: pos is in range
                hit = ords[pos] == wanted
                at = pos[hit]
                where.append(lo + np.flatnonzero(hit))
                tfs.append(view.tf_at(at))
                dls.append(view.dl_at(at))
            retired_seen += retired_in(ords, retired)
        if not where:
            empty = np.empty(0, dtype=np.float64)
            return np.empty(0, dtype=np.intp), empty, empty, retired_seen
        return np.concatenate(where), np.concatenate(tfs), np.concatenate(dls), retired_seen

    def postings(self, terms: Sequence[str], *, hide_retired: bool = True) -> dict[str, Postings]:
        """Every posting of each term (tests, verification, RM3 statistics). Retired ordinals are
        left out unless ``hide_retired`` is False."""
        for _ in range(5):
            snap = self.snapshot()
            try:
                out = {}
                for plan in self.plan(snap, terms):
                    found = self.fetch(plan)
                    if hide_retired and len(snap.retired) and len(found.ordinals):
                        keep = ~np.isin(found.ordinals, snap.retired)
                        found = Postings(found.ordinals[keep], found.tf[keep], found.dl[keep])
                    out[plan.term] = found
                self.check(snap)
                return out
            except ManifestChanged:
                continue
        raise CorruptRecord("bm25: the manifest kept changing during a read")


class MemoReader(PostingReader):
    """A :class:`PostingReader` for the few queries of one search (the first BM25 pass, the
    expansion's feedback statistics, the expansion requery): term plans, decoded blocks and
    whole posting lists are kept while the manifest stays the one this reader last saw, so a
    later query reads and decodes only its new terms. Results are the plain reader's: every
    memo is dropped when a snapshot finds a different manifest, and block keys name immutable
    segment data. Meant to live for one search (it keeps every term it was asked for)."""

    def __init__(self, index: PostingIndex) -> None:
        super().__init__(index)
        self._raw: bytes | None = None
        self._plans: dict[str, TermPlan] = {}
        self._views: dict[bytes, BlockView] = {}
        self._whole: dict[str, Postings] = {}

    def snapshot(self) -> Snapshot:
        snap = super().snapshot()
        if snap.raw != self._raw:
            self._raw = snap.raw
            self._plans.clear()
            self._views.clear()
            self._whole.clear()
        return snap

    def plan(self, snap: Snapshot, terms: Sequence[str]) -> list[TermPlan]:
        if snap.raw != self._raw:  # a snapshot this reader did not take: no memo applies
            return super().plan(snap, terms)
        missing = [t for t in dict.fromkeys(terms) if t not in self._plans]
        if missing:
            for found in super().plan(snap, missing):
                self._plans[found.term] = found
        return [self._plans[t] for t in terms]

    def _read_views(self, keys: list[bytes]) -> list[BlockView]:
        missing = [k for k in keys if k not in self._views]
        if missing:
            for key, view in zip(missing, super()._read_views(missing), strict=True):
                self._views[key] = view
        return [self._views[k] for k in keys]

    def fetch(
        self, plan: TermPlan, *, near: U32Array | None = None, newest: int | None = None
    ) -> Postings:
        if near is not None or newest is not None:
            return super().fetch(plan, near=near, newest=newest)
        found = self._whole.get(plan.term)
        if found is None or self._plans.get(plan.term) is not plan:
            found = super().fetch(plan)
            for column in found:
                column.setflags(write=False)  # shared by later queries of the search
            if self._plans.get(plan.term) is plan:
                self._whole[plan.term] = found
        return found


def retired_in(ordinals: U32Array, retired: U32Array) -> int:
    """How many of the sorted ``retired`` ordinals occur in the sorted ``ordinals``."""
    if not len(retired) or not len(ordinals):
        return 0
    lo = int(np.searchsorted(retired, ordinals[0], side="left"))
    hi = int(np.searchsorted(retired, ordinals[-1], side="right"))
    if hi <= lo:
        return 0
    gone = retired[lo:hi]
    return int((ordinals[np.searchsorted(ordinals, gone)] == gone).sum())


def _gather(views: list[BlockView]) -> Postings:
    """Decode block views into one list sorted by ordinal, writing each column once."""
    views = sorted((v for v in views if len(v.ordinals)), key=lambda v: int(v.ordinals[0]))
    total = sum(len(v.ordinals) for v in views)
    ordinals = np.empty(total, dtype=np.uint32)
    tf = np.empty(total, dtype=np.float64)
    dl = np.empty(total, dtype=np.float64)
    pos = 0
    for view in views:
        end = pos + len(view.ordinals)
        ordinals[pos:end] = view.ordinals
        tf[pos:end] = view.tf_raw
        dl[pos:end] = view.dl_raw
        if view.tf_scale != 1.0:
            tf[pos:end] *= view.tf_scale
        if view.dl_scale != 1.0:
            dl[pos:end] *= view.dl_scale
        pos = end
    if any(int(a.ordinals[-1]) >= int(b.ordinals[0]) for a, b in itertools.pairwise(views)):
        order = np.argsort(ordinals, kind="stable")  # segments out of ordinal order: sort once
        ordinals, tf, dl = ordinals[order], tf[order], dl[order]
    return Postings(ordinals, tf, dl)
