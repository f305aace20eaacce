"""Admission limits, checked before anything is written: one canonical document is bounded in
source text, metadata, source references and annotations, and larger payloads are split by the
caller into several documents."""

from __future__ import annotations

import json
from typing import Any

from cwcore.errors import LimitExceeded
from cwcore.model import DocumentSpec

MiB = 1024 * 1024

MAX_SOURCE_BYTES = 8 * MiB  # UTF-8 source text of one canonical admission
MAX_METADATA_BYTES = 1 * MiB  # encoded metadata JSON
#: Longest source line an importer reads, bytes (newline excluded): one admission's worth of text
#: plus its metadata and JSON overhead. A longer line is rejected as a ``file:line`` problem and
#: skipped in bounded blocks, never held in memory.
MAX_LINE_BYTES = MAX_SOURCE_BYTES + MAX_METADATA_BYTES
MAX_METADATA_DEPTH = 32  # nesting of metadata JSON
MAX_SOURCE_REFS = 256  # source-message references per document
MAX_SOURCE_REF_BYTES = 1 * MiB  # total bytes of those ids
MAX_ANNOTATIONS = 4096  # structural annotations per document
MAX_ANNOTATION_ID_BYTES = 1 * MiB  # total bytes of annotation message ids
MAX_ANNOTATION_TEXT_BYTES = 1 * MiB  # total bytes of annotated text

#: Physical chunks never exceed this many bytes; they split at line boundaries when they can.
CHUNK_BYTES = 32 * 1024
#: Separator between the parts (messages) of a document's text.
PART_SEPARATOR = "\n\n"


def json_depth(value: Any, limit: int) -> int:
    """Depth of a JSON value, stopping early (returns limit + 1) once it passes ``limit``."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    deepest = 0
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def document_text(spec: DocumentSpec) -> str:
    return PART_SEPARATOR.join(part.text for part in spec.parts)


def check_document(spec: DocumentSpec, text: str | None = None) -> None:
    """Raise :class:`LimitExceeded` naming the first limit ``spec`` breaks."""
    doc = spec.document_id
    text = document_text(spec) if text is None else text
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        raise LimitExceeded(
            f"document {doc}: source is {size} bytes; the limit is {MAX_SOURCE_BYTES}"
        )
    aside_bytes = sum(len(a.part.text.encode("utf-8", "surrogatepass")) for a in spec.asides)
    if aside_bytes > MAX_SOURCE_BYTES:
        raise LimitExceeded(
            f"document {doc}: thinking kept with it is {aside_bytes} bytes; "
            f"the limit is {MAX_SOURCE_BYTES}"
        )
    depth = json_depth(spec.metadata, MAX_METADATA_DEPTH)
    if depth > MAX_METADATA_DEPTH:
        raise LimitExceeded(f"document {doc}: metadata nests deeper than {MAX_METADATA_DEPTH}")
    meta_bytes = len(json.dumps(spec.metadata, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if meta_bytes > MAX_METADATA_BYTES:
        raise LimitExceeded(
            f"document {doc}: metadata is {meta_bytes} bytes; the limit is {MAX_METADATA_BYTES}"
        )
    if len(spec.parts) > MAX_SOURCE_REFS:
        raise LimitExceeded(
            f"document {doc}: {len(spec.parts)} source messages; the limit is {MAX_SOURCE_REFS}"
        )
    ref_bytes = sum(len(p.message_key.encode("utf-8", "surrogatepass")) for p in spec.parts)
    if ref_bytes > MAX_SOURCE_REF_BYTES:
        raise LimitExceeded(
            f"document {doc}: source message ids total {ref_bytes} bytes (1 MiB max)"
        )
    if len(spec.annotations) > MAX_ANNOTATIONS:
        raise LimitExceeded(
            f"document {doc}: {len(spec.annotations)} annotations; the limit is {MAX_ANNOTATIONS}"
        )
    ids = sum(len(a.message_key.encode("utf-8", "surrogatepass")) for a in spec.annotations)
    if ids > MAX_ANNOTATION_ID_BYTES:
        raise LimitExceeded(f"document {doc}: annotation ids total {ids} bytes (1 MiB max)")
    annotated = 0
    for a in spec.annotations:
        if not 0 <= a.start <= a.end <= len(text):
            raise LimitExceeded(
                f"document {doc}: annotation {a.start}..{a.end} is outside the text"
            )
        annotated += len(text[a.start : a.end].encode("utf-8", "surrogatepass"))
    if annotated > MAX_ANNOTATION_TEXT_BYTES:
        raise LimitExceeded(f"document {doc}: annotated text totals {annotated} bytes (1 MiB max)")
