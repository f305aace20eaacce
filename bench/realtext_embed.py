"""Embedding throughput on real windows for :mod:`bench.realtext`: cw's MiniLM (int8 ONNX, 256
tokens) cold, on a sample of the dev corpus's windows, for each candidate embedding unit.

Units, each from the same sampled windows:

* ``window``: the window's text (cw's ``window`` mode, clipped to 2,048 characters; the model
  reads its first 256 tokens): one text per window;
* ``message``: each message the window covers, clipped to the window (cw's ``message`` mode);
* ``head``: the window cut before its 255th token, so nothing past what the model reads is
  tokenized or padded;
* ``chunks``: the whole window in consecutive 254-token pieces (every token embedded once);
* ``head128``: the window cut before its 127th token (a 128-token head: half the model tokens);
* ``prose``: the window's conversational text only (``text`` and ``summary`` messages: tool
  calls dropped), cut before its 255th token; a window with none is not embedded;
* ``prose128``: the same cut before its 127th token;
* ``roles128``: per-role heads within 128 tokens: the user's words of the window first (up to
  96 tokens), then the other roles' prose filling the rest (tool calls and tool output dropped);
* ``roles``: the same within the model's 256 tokens.

Candidates that are not cw's unit exist only here, to be measured beside it.

Beside them, the semantic index handler itself (``embed_pending``, as the daemon's worker runs
it) over the first windows of a private copy whose vectors are cleared, in each of
:data:`HANDLER_CONFIGS`: the model and batching before issue 35 (the package's file as it ships,
four window-length texts a call), the same file two a call, the default now (two a call, the
package's graph without its softmax NaN guards: the same vectors) and the ``--int8`` variant,
taking turns over the same windows (``rounds`` times), so the rates come from the same minutes.

Each unit runs on a fresh embedder with no vector cache (every text goes through the model),
after the model is loaded and warmed on unrelated text. Reported: texts/s, windows/s, tokens/s
(tokens the model actually reads, at most 256 per text) and the projected time for the whole
corpus to reach ``complete`` at that rate.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import peak_rss_mb

MAX_TOKENS = 256
PIECE = MAX_TOKENS - 2  # the model adds [CLS] and [SEP]
HALF_PIECE = 128 - 2
USER_SHARE = 96  # roles units: the user's words take at most this many tokens
PROSE_KINDS = ("text", "summary")
UNITS = (
    "window",
    "message",
    "head",
    "chunks",
    "head128",
    "prose",
    "prose128",
    "roles128",
    "roles",
)


#: Handler configurations: (name, model variant, characters a model call, softmax NaN guards
#: removed): the old unit first. None characters: cwcore.semantic.embedder.BATCH_CHARS.
HANDLER_CONFIGS = (
    ("before", "onnx-int8", 8_192, False),
    ("two-a-call", "onnx-int8", None, False),
    ("default", "onnx-int8", None, True),
    ("int8", "onnx-int8-matmul", None, True),
)


class _NoCache:
    """A vector cache that never has a vector, so every text is computed."""

    def get_many(self, digests: Sequence[bytes]) -> list[np.ndarray | None]:
        return [None] * len(digests)

    def put_many(self, items: Any) -> None:
        return None


def _tokenizer(folder: Path) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def _pieces(tok: Any, text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` tokens, each cut at the start of a word (a
    piece that began inside a word would tokenize longer on its own: ``##ération`` alone is
    ``é`` ``##ration``); only a word longer than ``size`` tokens is cut inside."""
    enc = tok.encode(text, add_special_tokens=False)
    offsets = enc.offsets
    inside = [t.startswith("##") for t in enc.tokens]
    out = []
    lo, n = 0, len(offsets)
    while lo < n:
        hi = min(n, lo + size)
        cut = hi
        while hi < n and cut > lo + 1 and inside[cut]:
            cut -= 1
        if hi < n and not inside[cut]:
            hi = cut
        out.append(text[offsets[lo][0] : offsets[hi - 1][1]])
        lo = hi
    return out or [text]


def _window_parts(reader: Any, record: dict[str, Any]) -> tuple[str, list[tuple[str, str, str]]]:
    """The window's text and its messages clipped to it, as (role, kind, text)."""
    start, end = int(record["byteStart"]), int(record["byteEnd"])
    manifest = reader.manifest(record["documentId"], int(record["version"]))
    data = reader.read_bytes(manifest, start, end)
    parts = []
    for part in manifest["parts"]:
        lo, hi = max(start, int(part["start"])), min(end, int(part["end"]))
        if lo < hi:
            text = data[lo - start : hi - start].decode("utf-8", "replace")
            parts.append((str(part.get("role")), str(part.get("kind")), text))
    return data.decode("utf-8", "replace"), parts


def _head(tok: Any, text: str, size: int) -> str:
    return _pieces(tok, text, size)[0] if text.strip() else ""


def _roles(tok: Any, parts: list[tuple[str, str, str]], size: int, user_share: int) -> str:
    """The user's prose of the window (at most ``user_share`` tokens, and never more than
    ``size``), then the other roles' prose filling ``size`` tokens."""
    user = "\n\n".join(t for r, k, t in parts if r == "user" and k in PROSE_KINDS and t.strip())
    rest = "\n\n".join(t for r, k, t in parts if r != "user" and k in PROSE_KINDS and t.strip())
    head = _head(tok, user, min(user_share, size))
    used = len(tok.encode(head, add_special_tokens=False).ids) if head else 0
    tail = _head(tok, rest, size - used) if size - used > 8 else ""
    return "\n\n".join(x for x in (head, tail) if x)


def sample_units(home: Path, windows: int) -> dict[str, Any]:
    """Texts of each unit for ``windows`` windows spread evenly over the archive's wids."""
    from cwcore.index import derived
    from cwcore.methods import make_service
    from cwcore.semantic import models
    from cwcore.semantic.index import window_texts

    engine = make_service(home)
    try:
        max_wid = int(derived.generation(engine.store).get("maxWid", 0))
        step = max(1, max_wid // max(1, windows))
        wids = list(range(1, max_wid + 1, step))[:windows]
        records = [r for r in derived.window_records(engine.store, wids) if r is not None]
        tok = _tokenizer(models.minilm_dir(home))
        units: dict[str, list[str]] = {name: [] for name in UNITS}
        for rec in records:
            full = window_texts(engine.reader, rec, "window")
            if not full:
                continue
            units["window"] += full
            units["message"] += window_texts(engine.reader, rec, "message")
            text, parts = _window_parts(engine.reader, rec)
            units["head"].append(_pieces(tok, text, PIECE)[0])
            units["chunks"] += _pieces(tok, text, PIECE)
            units["head128"].append(_pieces(tok, text, HALF_PIECE)[0])
            prose = "\n\n".join(t for _, k, t in parts if k in PROSE_KINDS and t.strip())
            for name, size in (("prose", PIECE), ("prose128", HALF_PIECE)):
                if prose.strip():
                    units[name].append(_head(tok, prose, size))
            for name, size in (("roles128", HALF_PIECE), ("roles", PIECE)):
                roles = _roles(tok, parts, size, USER_SHARE)
                if roles:
                    units[name].append(roles)
        tokens = {
            name: sum(min(MAX_TOKENS, len(tok.encode(t).ids)) for t in texts)
            for name, texts in units.items()
        }
        return {
            "max_wid": max_wid,
            "windows": len(units["head"]),
            "units": units,
            "tokens": tokens,
        }
    finally:
        engine.close()


def handler(
    home: Path,
    windows: int,
    *,
    variant: str | None = None,
    batch_chars: int | None = None,
    strip: bool = True,
) -> dict[str, Any]:
    """cw's semantic index handler itself (``embed_pending``, the daemon worker's step: read the
    windows, embed, commit rows and cursor) over the first ``windows`` windows of ``home`` (a
    private copy: its vectors are cleared first, content table included, so nothing is cached).
    ``variant`` installs that model variant in ``home`` first; ``batch_chars`` sets the
    characters a model call takes; ``strip`` False installs the package's graph with its softmax
    NaN guards (graph revision 1, as before they were removed). The embedder has the daemon's
    sessions (a query session on ``inference_threads()``, the batch session on
    ``batch_threads()``) but runs at normal priority (the daemon's worker runs at nice 19)."""
    from cwcore.methods import make_service
    from cwcore.semantic import embedder as embedder_module
    from cwcore.semantic import models
    from cwcore.semantic import store as vstore
    from cwcore.semantic.embedder import Embedder
    from cwcore.semantic.index import BATCH_WINDOWS, DEFAULT_MODE, embed_pending
    from cwcore.semantic.runtime import batch_threads, inference_threads

    strip_before, chars = models.STRIP_NAN_GUARDS, embedder_module.BATCH_CHARS
    # The flag also keeps Embedder.for_home from bringing a revision-1 folder up to date.
    models.STRIP_NAN_GUARDS = strip
    embedder_module.BATCH_CHARS = batch_chars or chars
    try:
        if variant is not None:
            models.install_minilm(home, variant)
        engine = make_service(home)
        threads = {"threads": inference_threads(), "batch_threads": batch_threads()}
        embedder = Embedder.for_home(home, background=False, **threads)
        try:
            vstore.clear(engine.store, model=None, mode=None)
            embedder.load()
            embedder.embed(["warm up the model for the handler"], cache=_NoCache())
            warm = embedder.computed
            done = 0
            t0 = time.perf_counter()
            while done < windows:
                step = min(BATCH_WINDOWS, windows - done)
                n = embed_pending(
                    engine.store, engine.reader, step, embedder=embedder, mode=DEFAULT_MODE
                )
                if n == 0:
                    break
                done += n
            seconds = time.perf_counter() - t0
            cursor = int(vstore.state(engine.store).get("cursor", 0))
            model_variant = embedder.manifest.get("variant")
            revision = embedder.manifest.get("graphRevision", 1)
        finally:
            embedder.close()
            engine.close()
    finally:
        embedder_module.BATCH_CHARS = chars
        models.STRIP_NAN_GUARDS = strip_before
    return {
        "mode": DEFAULT_MODE,
        "variant": model_variant,
        "graph_revision": revision,
        "batch_chars": batch_chars or chars,
        **threads,
        "windows": done,
        "computed": embedder.computed - warm,  # texts through the model (none from a cache)
        "seconds": round(seconds, 2),
        "windows_per_s": round(done / max(seconds, 1e-9), 1),
        "cursor": cursor,
    }


def handlers(home: Path, windows: int, rounds: int = 2) -> dict[str, Any]:
    """:func:`handler` in each of :data:`HANDLER_CONFIGS` on ``home`` (a private copy), taking
    turns ``rounds`` times; per configuration the median rate and its runs, and each rate's
    ratio to the first configuration's (the unit before issue 35)."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, *_ in HANDLER_CONFIGS}
    for _ in range(rounds):
        for name, variant, chars, strip in HANDLER_CONFIGS:
            runs[name].append(
                handler(home, windows, variant=variant, batch_chars=chars, strip=strip)
            )
    out: dict[str, Any] = {}
    base = float(np.median([r["windows_per_s"] for r in runs[HANDLER_CONFIGS[0][0]]]))
    for name, done in runs.items():
        rate = float(np.median([r["windows_per_s"] for r in done]))
        out[name] = {
            **done[-1],
            "windows_per_s": round(rate, 1),
            "runs_windows_per_s": [r["windows_per_s"] for r in done],
            "speedup": round(rate / max(base, 1e-9), 2),
        }
    return out


def throughput(
    home: Path,
    windows: int,
    scratch: Path | None = None,
    units: tuple[str, ...] = UNITS,
) -> dict[str, Any]:
    """Texts/s, windows/s and tokens/s of each unit of ``units``, and the projected time to
    ``complete``; with ``scratch`` (a folder for a private copy of ``home``) also the handler's
    own rate."""
    from cwcore.semantic.embedder import Embedder

    sample = sample_units(home, windows)
    n_windows = sample["windows"]
    out: dict[str, Any] = {"sampled_windows": n_windows, "corpus_windows": sample["max_wid"]}
    for name, texts in sample["units"].items():
        if name not in units or not texts:
            continue
        embedder = Embedder.for_home(home, cache=_NoCache(), background=False)
        try:
            t0 = time.perf_counter()
            embedder.load()
            load_s = time.perf_counter() - t0
            embedder.embed([f"warm up the model, unit {name}"], cache=_NoCache())
            t0 = time.perf_counter()
            embedder.embed(texts, cache=_NoCache(), timeout=3600)
            seconds = time.perf_counter() - t0
        finally:
            embedder.close()
        wps = n_windows / seconds
        out[name] = {
            "texts": len(texts),
            "seconds": round(seconds, 2),
            "texts_per_s": round(len(texts) / seconds, 1),
            "windows_per_s": round(wps, 1),
            "tokens_per_s": round(sample["tokens"][name] / seconds),
            "tokens_per_text": round(sample["tokens"][name] / max(1, len(texts)), 1),
            "projected_complete_s": round(sample["max_wid"] / wps),
            "model_load_s": round(load_s, 2),
        }
    if scratch is not None:
        from bench.realtext_build import clone_home

        copy = clone_home(home, scratch)
        try:
            out["handlers"] = handlers(copy, windows)
        finally:
            shutil.rmtree(copy, ignore_errors=True)
        for body in out["handlers"].values():
            rate = body["windows_per_s"]
            body["projected_complete_s"] = round(sample["max_wid"] / max(rate, 1e-9))
        out["handler"] = out["handlers"]["default"]
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return out
