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
        data = part.encode("utf-8") if isinstance(part, str) else part
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


# --- Layouts, grouped by column family (see docs/architecture.md "Keyspace"). ---

# events CF
EVENT = KeyLayout("event", 0x10, ("str", "u64"))  # session, seq -> event record
EVENT_SOURCE = KeyLayout("event-source", 0x11, ("str", "h16"))  # session, source digest -> seq

# documents CF
DOC_VERSION = KeyLayout("document", 0x20, ("str", "u32"))  # document id, version -> manifest
DOC_HEAD = KeyLayout("document-head", 0x21, ("str",))  # document id -> head record
MESSAGE_DOC = KeyLayout("message-document", 0x22, ("str", "str"))  # session, messageKey -> doc

# chunks CF
CHUNK = KeyLayout("chunk", 0x30, ("h16",))  # content digest -> payload bytes
CHUNK_OWNER = KeyLayout("chunk-owner", 0x31, ("h16", "u32"))  # digest, owner ordinal -> empty

# scopes CF: immutable membership and session records
SESSION = KeyLayout("session", 0x40, ("str",))  # session id -> session record
PROJECT_SESSION = KeyLayout("project-session", 0x41, ("h16", "str"))  # project digest, session
SESSION_DOC = KeyLayout("session-document", 0x42, ("str", "u32"))  # session, ordinal -> doc ref
BUCKET_SESSION = KeyLayout("bucket-session", 0x43, ("u32", "str"))  # day bucket, session
PROJECT = KeyLayout("project", 0x44, ("h16",))  # project digest -> project name
SUBJECT_LIVE = KeyLayout("subject-live", 0x45, ("h16", "str"))  # project digest, subjectKey
# started (descending), session id (descending) -> summary: sessions newest first
SESSION_ORDER = KeyLayout("session-order", 0x46, ("desc", "desc"))
# project digest, started (descending), session id (descending) -> summary: one project's sessions
PROJECT_SESSION_ORDER = KeyLayout("project-session-order", 0x47, ("h16", "desc", "desc"))

# ordinals CF
ORDINAL = KeyLayout("ordinal", 0x50, ("u32",))  # ordinal -> (document id, version)
TOMBSTONE = KeyLayout("tombstone", 0x51, ("u32",))  # ordinal -> retirement record

# outbox CF
OUTBOX = KeyLayout("outbox", 0x60, ("u64",))  # outbox seq -> entry

# requests CF: idempotency by request id
REQUEST = KeyLayout("request", 0x70, ("str",))

# supersession CF (append-only)
SUPERSESSION = KeyLayout("supersession", 0x80, ("str", "u32"))  # old doc id, old version
# doc id, superseded version -> the record that undid that supersession (a new record: the
# supersession record itself is never rewritten or deleted by an undo)
UNSUPERSESSION = KeyLayout("unsupersession", 0x81, ("str", "u32"))

# meta (default CF)
META = KeyLayout("meta", 0x01, ("str",))
