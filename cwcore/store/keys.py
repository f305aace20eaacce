"""Binary key encoding with versioned field boundaries.

A key is ``tag (1 byte) | layout version (1 byte) | fields``. Each field has a fixed type:

* ``str``  — UTF-8 bytes preceded by their length as u16 big-endian, so a string never needs a
  separator and a key prefix ending in a string field is exact (``ab`` is not a prefix of ``abc``);
* ``u32``/``u64`` — fixed-width big-endian, so numeric order is byte order;
* ``h16`` — 16 raw bytes (a BLAKE2b-128 digest);
* ``desc`` — a string in *descending* order: its UTF-8 bytes with NUL escaped (``00`` →
  ``00 FF``), a terminator ``00 01``, then every byte inverted (``XOR FF``). The terminator
  sorts below any character and the encoding is prefix-free, so byte order is the reverse of
  Python's string order (code points), field by field; a forward scan yields largest first.
  The field may be empty and is not an id (no :func:`check_id`); at most :data:`MAX_ID_BYTES`.

Every string that enters a key passes :func:`check_id` first (ids are data: any non-empty valid
Unicode without NUL fits, since the length prefix marks the field's end); persisted keys are at most
:data:`MAX_PERSISTED_KEY` encoded bytes and any key handed to a point read at most
:data:`MAX_READ_KEY`: a point read may use the whole 4 KiB key buffer, while persisted keys stay
below half of it so prefix scans and pagination, whose two bounds share that buffer, stay valid.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from dataclasses import dataclass
from typing import Literal

from cwcore.errors import UnsafeKey, excerpt

MAX_PERSISTED_KEY = 2047
MAX_READ_KEY = 4096
MAX_ID_BYTES = 512

FieldType = Literal["str", "u32", "u64", "h16", "desc"]
Value = str | int | bytes

#: A messageKey is ``<role>:<source message id>``: room for the longest role prefix.
MAX_MESSAGE_KEY_BYTES = MAX_ID_BYTES + len("assistant:")
#: The longest string a ``str`` key field holds (a messageKey); ids are checked against their
#: own limit before they get here.
MAX_FIELD_BYTES = MAX_MESSAGE_KEY_BYTES
#: How much of a refused value an error message quotes.
_ECHO_CHARS = 80


def check_id(value: object, what: str = "id", limit: int = MAX_ID_BYTES) -> str:
    """Return ``value`` if it can be an id inside a key, else raise :class:`UnsafeKey`.

    Ids are data, never paths or shell words: a key stores each string behind its u16 length,
    so no character can cross a field boundary. Accepted: a non-empty ``str`` of valid Unicode
    (no lone surrogates) of at most ``limit`` UTF-8 bytes (default :data:`MAX_ID_BYTES`) that
    holds no NUL. Everything else is data: ``/``, ``\\``, other control characters, leading or
    trailing white space, any script. NUL is refused because it cannot round-trip through C
    string APIs, terminals or many JSON consumers. Code that turns an id into a file name must
    sanitize it there.
    """
    if not isinstance(value, str):
        raise UnsafeKey(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise UnsafeKey(f"{what} is empty")
    if len(value) > limit:  # every character is at least one byte: too long before encoding
        raise UnsafeKey(f"{what} is over {limit} bytes; the limit is {limit}")
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsafeKey(
            f"{what} is not valid Unicode (a lone surrogate): {excerpt(value, _ECHO_CHARS)}"
        ) from None
    if len(encoded) > limit:
        raise UnsafeKey(f"{what} is {len(encoded)} bytes; the limit is {limit}")
    if "\x00" in value:
        raise UnsafeKey(f"{what} contains NUL (U+0000): {excerpt(value, _ECHO_CHARS)}")
    return value


def digest16(*parts: str | bytes) -> bytes:
    """BLAKE2b-128 over length-framed parts: stable identity for content and for long names."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        # surrogatepass: a name with a lone surrogate (a filter a request sent; stored names
        # never hold one) digests to a key that matches nothing instead of raising.
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(struct.pack(">I", len(data)))
        h.update(data)
    return h.digest()


@dataclass(frozen=True)
class KeyLayout:
    """One namespace's key layout: a tag byte, a layout version and typed fields."""

    name: str
    tag: int
    fields: tuple[FieldType, ...]
    version: int = 1

    def encode(self, *values: Value) -> bytes:
        """Encode a complete key (all fields) or raise :class:`UnsafeKey`."""
        # Integer-only layouts (window, ordinal, feedback keys: dozens per search) pack in one
        # call; anything unusual falls through to the checked path, which raises.
        fixed = _fixed_struct(self.fields)
        if (
            fixed is not None
            and len(values) == len(self.fields)
            and all(type(v) is int for v in values)
        ):
            try:
                return fixed.pack(self.tag, self.version, *values)
            except struct.error:
                pass
        if len(values) != len(self.fields):
            raise UnsafeKey(f"{self.name} key takes {len(self.fields)} fields, got {len(values)}")
        key = self.prefix(*values)
        if len(key) > MAX_PERSISTED_KEY:
            raise UnsafeKey(f"{self.name} key is {len(key)} bytes; limit {MAX_PERSISTED_KEY}")
        return key

    def prefix(self, *values: Value) -> bytes:
        """Encode the first ``len(values)`` fields: the prefix every longer key shares."""
        if len(values) > len(self.fields):
            raise UnsafeKey(f"{self.name} key has only {len(self.fields)} fields")
        out = bytearray((self.tag, self.version))
        for kind, value in zip(self.fields, values, strict=False):
            if (
                kind == "str"
                and type(value) is str
                and 0 < len(value) <= MAX_FIELD_BYTES
                and value.isascii()
                and "\x00" not in value
            ):
                # Every check of the checked path holds (ASCII: one byte a character), and it
                # is most keys of a bulk admission: skip its second encode and its calls.
                out += len(value).to_bytes(2, "big")
                out += value.encode("ascii")
            else:
                out += _encode_field(self.name, kind, value)
        return bytes(out)

    def decode(self, key: bytes) -> tuple[Value, ...]:
        """Decode a full key of this layout; raises :class:`UnsafeKey` on any mismatch."""
        if len(key) > MAX_READ_KEY:
            raise UnsafeKey(f"{self.name} key is {len(key)} bytes; limit {MAX_READ_KEY}")
        if len(key) < 2 or key[0] != self.tag or key[1] != self.version:
            raise UnsafeKey(f"not a {self.name} v{self.version} key")
        pos = 2
        values: list[Value] = []
        for kind in self.fields:
            value, pos = _decode_field(self.name, kind, key, pos)
            values.append(value)
        if pos != len(key):
            raise UnsafeKey(f"{self.name} key has {len(key) - pos} trailing bytes")
        return tuple(values)


@functools.lru_cache(maxsize=64)
def _fixed_struct(fields: tuple[FieldType, ...]) -> struct.Struct | None:
    """``>BB`` + one ``I``/``Q`` per field when every field is an unsigned integer, else None."""
    codes = {"u32": "I", "u64": "Q"}
    if not fields or any(f not in codes for f in fields):
        return None
    return struct.Struct(">BB" + "".join(codes[f] for f in fields))


def _encode_desc(name: str, value: Value) -> bytes:
    if not isinstance(value, str):
        raise UnsafeKey(f"{name} key field must be a string")
    data = value.encode("utf-8", "surrogatepass")
    if len(data) > MAX_ID_BYTES:
        raise UnsafeKey(f"{name} key field is {len(data)} bytes; the limit is {MAX_ID_BYTES}")
    return (data.replace(b"\x00", b"\x00\xff") + b"\x00\x01").translate(_INVERT)


def _decode_desc(name: str, key: bytes, pos: int) -> tuple[str, int]:
    # Inverted back, a 00 byte only ever starts an escape (00 FF) or the terminator (00 01):
    # UTF-8 has no FF byte, so the first 00 01 ends the field.
    plain = key[pos:].translate(_INVERT)
    end = plain.find(b"\x00\x01")
    if end == -1 or plain.count(b"\x00", 0, end) != plain.count(b"\x00\xff", 0, end):
        raise UnsafeKey(f"{name} key descending string is not terminated")
    return plain[:end].replace(b"\x00\xff", b"\x00").decode("utf-8", "surrogatepass"), pos + end + 2


_INVERT = bytes(255 - b for b in range(256))


def _encode_field(name: str, kind: FieldType, value: Value) -> bytes:
    if kind == "desc":
        return _encode_desc(name, value)
    if kind == "str":
        text = check_id(value, f"{name} key field", MAX_FIELD_BYTES)
        data = text.encode("utf-8")
        return struct.pack(">H", len(data)) + data
    if kind in ("u32", "u64"):
        if not isinstance(value, int) or isinstance(value, bool):
            raise UnsafeKey(f"{name} key field must be an integer")
        bits = 32 if kind == "u32" else 64
        if not 0 <= value < (1 << bits):
            raise UnsafeKey(f"{name} key field {value} out of range for {kind}")
        return struct.pack(">I" if kind == "u32" else ">Q", value)
    if not isinstance(value, bytes) or len(value) != 16:
        raise UnsafeKey(f"{name} key field must be 16 bytes")
    return value


def _decode_field(name: str, kind: FieldType, key: bytes, pos: int) -> tuple[Value, int]:
    try:
        if kind == "desc":
            return _decode_desc(name, key, pos)
        if kind == "str":
            (length,) = struct.unpack_from(">H", key, pos)
            end = pos + 2 + length
            if end > len(key):
                raise UnsafeKey(f"{name} key string runs past the end")
            return key[pos + 2 : end].decode("utf-8"), end
        if kind == "u32":
            return struct.unpack_from(">I", key, pos)[0], pos + 4
        if kind == "u64":
            return struct.unpack_from(">Q", key, pos)[0], pos + 8
        if pos + 16 > len(key):
            raise UnsafeKey(f"{name} key digest runs past the end")
        return key[pos : pos + 16], pos + 16
    except (struct.error, UnicodeDecodeError, IndexError):
        raise UnsafeKey(f"malformed {name} key") from None


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (None: no bound)."""
    data = bytearray(prefix)
    while data:
        if data[-1] < 0xFF:
            data[-1] += 1
            return bytes(data)
        data.pop()
    return None


# --- The keyspace: every key layout of every column family, registered in one place. ---
#
# Every module takes its layouts from here, so two features can never pick the same tag in one
# column family by accident; tests/test_keyspace.py checks the registry (no two layouts share a
# tag or a name, no head is a prefix of another's in one family) and pins tags to their bytes.
# A tag written to disk never changes meaning: archives written by earlier builds keep working.


#: The tag range each owner (the package that writes the layout) allocates from, inclusive: a
#: new layout takes a free tag in its owner's range, a new owner a free range.
TAG_RANGES: dict[str, tuple[int, int]] = {
    "store": (0x01, 0x8F),
    "index.postings": (0x90, 0x9F),
    "index": (0xA0, 0xAF),
    "retrieve": (0xB0, 0xBF),
    "hints": (0xC0, 0xCF),
    "memory": (0xD0, 0xDF),
    "semantic": (0xE0, 0xEF),
    "markdown": (0xF0, 0xF7),
}


@dataclass(frozen=True)
class Namespace:
    """Where one key layout lives: its column family (``default`` for the store's own meta
    records), what a key maps to (for people) and the owner whose tag range holds its tag
    (empty when no range does)."""

    family: str
    layout: KeyLayout
    holds: str
    owner: str


#: Every registered layout, in definition order.
KEYSPACE: list[Namespace] = []


def _owner(tag: int) -> str:
    return next((o for o, (low, high) in TAG_RANGES.items() if low <= tag <= high), "")


def _define(
    family: str, name: str, tag: int, fields: tuple[FieldType, ...], holds: str
) -> KeyLayout:
    layout = KeyLayout(name, tag, fields)
    KEYSPACE.append(Namespace(family, layout, holds, _owner(tag)))
    return layout


def keyspace_problems(entries: list[Namespace] | None = None) -> list[str]:
    """Why ``entries`` (default: :data:`KEYSPACE`) is not a safe keyspace; empty when it is.

    Refused: two layouts with one name; one tag used twice (in any family, so a key is always
    named by its first byte); within one family, one layout's head (tag and version bytes) a
    prefix of another's, which would make a prefix scan of one return the other's keys; a tag
    in no owner's range of :data:`TAG_RANGES`.
    """
    entries = KEYSPACE if entries is None else entries
    problems: list[str] = []
    names: set[str] = set()
    tags: dict[int, str] = {}
    for entry in entries:
        layout = entry.layout
        if layout.name in names:
            problems.append(f"layout name {layout.name!r} is registered twice")
        names.add(layout.name)
        if layout.tag in tags:
            problems.append(
                f"tag 0x{layout.tag:02X} is used by {tags[layout.tag]!r} and {layout.name!r}"
            )
        tags[layout.tag] = layout.name
        if not entry.owner:
            problems.append(f"tag 0x{layout.tag:02X} of {layout.name!r} is in no owner's range")
    for a in entries:
        for b in entries:
            same_family = a is not b and a.family == b.family
            if same_family and b.layout.prefix().startswith(a.layout.prefix()):
                problems.append(
                    f"in {a.family}, {a.layout.name!r} keys are a prefix of {b.layout.name!r} keys"
                )
    return problems


# default column family: the store's own records (schema version, counters, generations)
META = _define("default", "meta", 0x01, ("str",), "name -> store meta record")

# events CF
EVENT = _define("events", "event", 0x10, ("str", "u64"), "session, seq -> event record")
EVENT_SOURCE = _define(
    "events", "event-source", 0x11, ("str", "h16"), "session, source digest -> seq"
)

# documents CF
DOC_VERSION = _define(
    "documents", "document", 0x20, ("str", "u32"), "document id, version -> manifest"
)
DOC_HEAD = _define("documents", "document-head", 0x21, ("str",), "document id -> head record")
MESSAGE_DOC = _define(
    "documents", "message-document", 0x22, ("str", "str"), "session, messageKey -> document"
)

# chunks CF
CHUNK = _define("chunks", "chunk", 0x30, ("h16",), "content digest -> payload bytes")
CHUNK_OWNER = _define(
    "chunks", "chunk-owner", 0x31, ("h16", "u32"), "digest, owner ordinal -> empty"
)

# scopes CF: immutable membership and session records
SESSION = _define("scopes", "session", 0x40, ("str",), "session id -> session record")
PROJECT_SESSION = _define(
    "scopes", "project-session", 0x41, ("h16", "str"), "project digest, session -> empty"
)
SESSION_DOC = _define(
    "scopes", "session-document", 0x42, ("str", "u32"), "session, ordinal -> doc ref"
)
BUCKET_SESSION = _define(
    "scopes", "bucket-session", 0x43, ("u32", "str"), "day bucket, session -> empty"
)
PROJECT = _define("scopes", "project", 0x44, ("h16",), "project digest -> project name")
SUBJECT_LIVE = _define(
    "scopes", "subject-live", 0x45, ("h16", "str"), "project digest, subjectKey -> live"
)
# Descending fields: a forward scan yields sessions newest first.
SESSION_ORDER = _define(
    "scopes",
    "session-order",
    0x46,
    ("desc", "desc"),
    "started (desc), session id (desc) -> summary",
)
PROJECT_SESSION_ORDER = _define(
    "scopes",
    "project-session-order",
    0x47,
    ("h16", "desc", "desc"),
    "project digest, started (desc), session id (desc) -> summary",
)

# A session's identity is (agent, native id): two agents' sessions never share a record.
SESSION_NATIVE = _define(
    "scopes", "session-native", 0x48, ("str", "str"), "native id, agent -> session id"
)

# ordinals CF
ORDINAL = _define("ordinals", "ordinal", 0x50, ("u32",), "ordinal -> (document id, version)")
TOMBSTONE = _define("ordinals", "tombstone", 0x51, ("u32",), "ordinal -> retirement")

# outbox CF
OUTBOX = _define("outbox", "outbox", 0x60, ("u64",), "outbox seq -> entry")

# requests CF: idempotency by request id
REQUEST = _define("requests", "request", 0x70, ("str",), "request id -> acknowledgement")

# supersession CF (append-only)
SUPERSESSION = _define(
    "supersession",
    "supersession",
    0x80,
    ("str", "u32"),
    "old document id, old version -> supersession record",
)
# The record that undid a supersession is a new record: the supersession record itself is never
# rewritten or deleted by an undo.
UNSUPERSESSION = _define(
    "supersession",
    "unsupersession",
    0x81,
    ("str", "u32"),
    "document id, superseded version -> undo record",
)

# postings and stats CFs: the BM25 segments (segment-first order lets a merge delete a whole
# segment with two range tombstones)
BM25_TERM = _define(
    "postings",
    "bm25-term",
    0x90,
    ("u32", "u64", "h16"),
    "generation, segment, term digest -> term entry",
)
BM25_BLOCK = _define(
    "postings",
    "bm25-block",
    0x91,
    ("u32", "u64", "h16", "u32"),
    "generation, segment, term digest, block -> postings block",
)
BM25_MANIFEST = _define("stats", "bm25-manifest", 0x92, ("u32",), "generation -> manifest")
BM25_DOC = _define(
    "stats", "bm25-doc", 0x93, ("u32", "u32"), "generation, ordinal -> indexed document record"
)
BM25_RETIRED = _define(
    "stats", "bm25-retired", 0x94, ("u32",), "generation -> ordinals retired but still in segments"
)

# windows, exact, relations, importance CFs: what the index worker derives per document
WINDOW = _define("windows", "window", 0xA0, ("u32",), "wid -> window record")
DOC_WINDOWS = _define("windows", "doc-windows", 0xA1, ("u32",), "ordinal -> applied marker")
EXACT = _define(
    "exact",
    "exact",
    0xA2,
    ("h16", "u32", "u32"),
    "anchor digest, wid, char start -> anchor posting",
)
RELATION = _define(
    "relations", "relation", 0xA3, ("str", "u32", "u32"), "relation, wid, char start -> span"
)
IMPORTANCE = _define(
    "importance", "importance", 0xA4, ("str", "u32"), "namespace, ordinal -> prior"
)
SESSION_WIDS = _define(
    "windows", "session-wids", 0xA5, ("str", "u32"), "session, first wid -> count"
)

# leases and feedback CFs: what explicit search and recall leave behind
LEASE = _define("leases", "lease", 0xB0, ("str",), "lease id -> lease record")
RECALL_FEEDBACK = _define("feedback", "recall-feedback", 0xB1, ("u32",), "ordinal -> recall count")

# hints CF: frozen preflight decisions and exposure suppression
HINT = _define("hints", "hint", 0xC0, ("str", "str"), "session, messageKey -> frozen decision")
HINT_SESSION = _define("hints", "hint-session", 0xC1, ("str",), "session -> hint activity")
HINT_EXPOSURE = _define(
    "hints", "hint-exposure", 0xC2, ("str", "str"), "source document id, session -> exposure"
)
HINT_EXPIRY = _define(
    "hints", "hint-expiry", 0xC3, ("u64", "str", "str"), "until (ms), document id, session -> empty"
)
HINT_MEMORY = _define(
    "hints", "hint-memory", 0xC4, ("str", "str"), "session, messageKey -> memory turn"
)
HINT_META = _define("hints", "hint-meta", 0xCF, ("str",), "name -> maintenance cursor")

# memory CF
MEMORY = _define("memory", "memory", 0xD0, ("str",), "record id -> memory record")
MEMORY_META = _define("memory", "memory-meta", 0xDF, ("str",), "name -> counters")

# vectors CF
VECTOR = _define("vectors", "vector", 0xE0, ("u32",), "wid -> window vectors")
VECTOR_CONTENT = _define(
    "vectors", "vector-content", 0xE1, ("h16",), "digest(model, text) -> one row"
)
VECTOR_STATE = _define("vectors", "vector-state", 0xE2, ("str",), "name -> embedding cursor")

# scopes CF, Markdown folders (0xF5-0xF7 are free)
MD_FILE = _define("scopes", "md-file", 0xF0, ("str",), "document id -> fingerprint")
MD_ROOT = _define("scopes", "md-root", 0xF1, ("str",), "session id -> folder record")
MD_UNIT = _define("scopes", "md-unit", 0xF2, ("str", "u32"), "document id, unit -> evidence unit")
MD_TERM = _define(
    "scopes",
    "md-term",
    0xF3,
    ("h16", "str", "u32"),
    "term digest, document id, unit -> term frequency",
)
MD_STATS = _define("scopes", "md-stats", 0xF4, ("str",), "name -> evidence totals")
