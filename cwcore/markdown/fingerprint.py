"""The Markdown keyspace and the per-file lexical fingerprint.

Keys live in the ``scopes`` column family under tags 0xF0–0xF7 (reserved for Markdown):

======  ===============  ==============================  =========================================
tag     layout           fields                          value
======  ===============  ==============================  =========================================
0xF0    ``md-file``      document id                     fingerprint record of the file
0xF1    ``md-root``      session id                      the imported folder (root) record
0xF2    ``md-unit``      document id, unit number        one lexical evidence unit
0xF3    ``md-term``      term digest, document id, unit  term frequency (u32) of the term there
0xF4    ``md-stats``     name (``"evidence"``)           unit count and total length
======  ===============  ==============================  =========================================

0xF5–0xF7 are unused and reserved.

The **fingerprint** of a file binds what its stored state was derived from: the SHA-256 of the
raw bytes, the implementation version (:data:`IMPLEMENTATION`), the document id (root and
relative path), the project, the secret-scrubbing switch and the window settings the lexical
evidence was computed for. The **store** side is the document head the record names: a file is
unchanged — skipped before it is parsed, writing nothing — only when its fingerprint matches AND
that head still exists, is live, has the recorded version and the recorded content digest.
"""

from __future__ import annotations

import hashlib
import unicodedata
from pathlib import Path
from typing import Any

from cwcore.config import Settings
from cwcore.store import codec, keys
from cwcore.store.records import decode_head
from cwcore.store.rocks import Store

#: Bump when parsing, document building or evidence derivation changes: every file then
#: becomes "changed" on its next import and gets a new version.
IMPLEMENTATION = "markdown/1"

MD_FILE = keys.MD_FILE
MD_ROOT = keys.MD_ROOT
MD_UNIT = keys.MD_UNIT
MD_TERM = keys.MD_TERM
MD_STATS = keys.MD_STATS

FAMILY = "scopes"


def session_id(root: Path) -> str:
    """``md-`` + 16 hex digits of the root folder's path: one synthetic session per root."""
    return "md-" + keys.digest16("markdown-root", str(root)).hex()[:16]


def document_id(root: Path, relative: str) -> str:
    """``m-`` + 16 hex digits of root and relative path: stable across edits of the file, so
    admission turns a changed file into a new version of the same document."""
    return "m-" + keys.digest16("markdown-file", str(root), relative).hex()[:16]


def message_id(relative: str) -> str:
    """The relative path as a source message id: ``%``, ``/``, ``\\`` and control characters
    are percent-encoded (ids may hold no separators), so distinct paths keep distinct ids."""
    out = []
    last = len(relative) - 1
    for i, ch in enumerate(relative):
        if (
            ch in "%/\\"
            or unicodedata.category(ch) in ("Cc", "Cs")
            or (ch.isspace() and i in (0, last))
        ):
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogateescape")))
        else:
            out.append(ch)
    text = "".join(out) or "%2E"
    if len(text.encode("utf-8")) > 400:  # ids are at most 512 bytes; keep it unique by digest
        text = text[:120] + "~" + keys.digest16(relative).hex()
    return text


def raw_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def fingerprint(raw_sha256: str, document: str, project: str, settings: Settings) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in (
        IMPLEMENTATION,
        raw_sha256,
        document,
        project,
        str(bool(settings.scrub_secrets)),
        str(int(settings.window_tokens)),
        repr(float(settings.window_overlap)),
    ):
        data = part.encode("utf-8")
        h.update(len(data).to_bytes(4, "big"))
        h.update(data)
    return h.hexdigest()


def get(store: Store, layout: keys.KeyLayout, *values: str | int | bytes) -> dict[str, Any] | None:
    raw = store.get(FAMILY, layout.encode(*values))
    return None if raw is None else codec.decode_record(raw, layout.name)


def unchanged(store: Store, document: str, print_: str) -> bool:
    """True when the stored state of ``document`` was derived from this exact fingerprint and
    its head still matches (exists, live, same version and content digest)."""
    record = get(store, MD_FILE, document)
    if record is None or record.get("fingerprint") != print_:
        return False
    raw = store.get("documents", keys.DOC_HEAD.encode(document))
    if raw is None:
        return False
    head = decode_head(raw)
    return (
        head.get("state") == "live"
        and int(head["version"]) == int(record.get("version", -1))
        and head.get("digest") == record.get("digest")
    )


def roots(store: Store) -> list[dict[str, Any]]:
    return [
        codec.decode_record(value, MD_ROOT.name)
        for _, value in store.scan(FAMILY, MD_ROOT.prefix())
    ]


def files(store: Store) -> list[dict[str, Any]]:
    return [
        codec.decode_record(value, MD_FILE.name)
        for _, value in store.scan(FAMILY, MD_FILE.prefix())
    ]
