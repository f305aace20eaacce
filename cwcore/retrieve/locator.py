"""Locators: opaque, versioned, HMAC-signed pointers to one search hit, and their leases.

A locator binds document id, version, the version's content digest, logical window, match range,
index generation, lease, project, session and the scope that created it, so recall can check every
one of them without trusting the caller. It is ``cwl2.<payload>.<mac>``: base64url JSON and the
first 16 bytes of HMAC-SHA256 of ``cwl2.`` plus the payload under a per-store key
(``CW_HOME/locator.key``, created 0600). Agents never build offsets themselves; a tampered or
foreign locator fails verification and recall answers ``locator-invalid``.

The content digest (``h``) is the manifest's: a document id and version can name other bytes
after ``cw forget`` and a re-import (versions restart at 1), and recall must then answer
``expired``, never the new text. Locators of the first format (``cwl1``, no digest, MAC over the
payload alone) are still verified: recall accepts one only while its document version was
published no later than the index generation the locator names (see
:func:`cwcore.recall.recall.recall`).

Each search creates one lease (default 30 minutes, setting ``leaseMinutes``) that its locators
name; recall past it answers ``lease-expired``. While it runs, retention keeps the documents it
names (:func:`leased_documents`), so it never turns a valid locator into ``expired``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cwcore import clock
from cwcore.errors import LocatorInvalid
from cwcore.store import codec, keys
from cwcore.store.rocks import Store

PREFIX = "cwl2"
#: The first format: no content digest, MAC over the payload alone (verified, never issued).
PREFIX_V1 = "cwl1"
PREFIXES = (PREFIX, PREFIX_V1)
MAX_LOCATOR_CHARS = 4096
LEASE = keys.LEASE


#: The one answer for a well-formed locator this caller may not use: a bad signature (tampered,
#: another store) and a locator of another project or session read the same, so an answer never
#: tells whether the target of a foreign locator exists.
NOT_VALID_HERE = (
    "the locator is not valid here: tampered, from another store, or outside the caller's "
    "project or session"
)


@dataclass(frozen=True)
class Locator:
    document_id: str
    version: int
    window: int  # window index within the document
    start: int  # match range, UTF-8 byte offsets into the document text
    end: int
    generation: int
    lease: str
    lease_expires_ms: int
    project: str
    session: str
    scope: str  # "session" | "project" | "all"
    #: The version's content digest (manifest ``digest``, hex); "" for a ``cwl1`` locator.
    digest: str = ""

    def payload(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "d": self.document_id,
            "v": self.version,
            "w": self.window,
            "r": [self.start, self.end],
            "g": self.generation,
            "l": self.lease,
            "x": self.lease_expires_ms,
            "p": self.project,
            "s": self.session,
            "sc": self.scope,
        }
        if self.digest:
            body["h"] = self.digest
        return body


def is_locator(text: str) -> bool:
    """Whether ``text`` has a locator's shape (any known format prefix), valid or not."""
    return text.strip().startswith(tuple(p + "." for p in PREFIXES))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


_B64URL = re.compile(r"[A-Za-z0-9_-]*")


def _unb64(text: str) -> bytes:
    """The bytes of unpadded base64url ``text``, which must be exactly what :func:`_b64` writes:
    Python's decoder drops characters outside the alphabet and ignores a last character's unused
    bits, so a locator with a NUL or a space inserted, or its last character changed, verified
    as the original (a locator is one exact string; a changed one is tampered)."""
    if not _B64URL.fullmatch(text):
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:
        raise ValueError("not canonical base64url")
    return data


def load_key(home: Path) -> bytes:
    """The store's locator key, created with mode 0600 on first use."""
    path = home / "locator.key"
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        pass
    home.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key.hex())
    return key


class Signer:
    def __init__(self, key: bytes) -> None:
        self._key = key

    def _mac(self, payload: bytes, prefix: str = PREFIX) -> bytes:
        # The format prefix is authenticated too (the first format's was not), so a payload
        # cannot be presented under another format than the one it was signed for.
        signed = payload if prefix == PREFIX_V1 else f"{prefix}.".encode() + payload
        return hmac.digest(self._key, signed, hashlib.sha256)[:16]

    def sign(self, loc: Locator) -> str:
        """A ``cwl2`` locator; ``loc.digest`` must name the version's content."""
        if not loc.digest:
            raise ValueError("a locator binds its version's content digest")
        # Compact, sorted keys, UTF-8 (verify() reads any JSON; a page signs one per hit).
        payload = orjson.dumps(loc.payload(), option=orjson.OPT_SORT_KEYS)
        return f"{PREFIX}.{_b64(payload)}.{_b64(self._mac(payload))}"

    def verify(self, text: str) -> Locator:
        """Decode and authenticate; raise :class:`LocatorInvalid` on any mismatch."""
        if not isinstance(text, str) or len(text) > MAX_LOCATOR_CHARS:
            raise LocatorInvalid("not a cw locator")
        parts = text.strip().split(".")
        if len(parts) != 3 or parts[0] not in PREFIXES:
            raise LocatorInvalid("not a cw locator (or from an unknown version)")
        try:
            payload, mac = _unb64(parts[1]), _unb64(parts[2])
        except (ValueError, TypeError):
            raise LocatorInvalid("locator is not valid base64") from None
        if not hmac.compare_digest(mac, self._mac(payload, parts[0])):
            raise LocatorInvalid(NOT_VALID_HERE)
        try:
            p = json.loads(payload)
            digest = "" if parts[0] == PREFIX_V1 else str(p["h"])
            if parts[0] == PREFIX and not digest:
                raise ValueError("no content digest")
            return Locator(
                document_id=str(p["d"]),
                version=int(p["v"]),
                window=int(p["w"]),
                start=int(p["r"][0]),
                end=int(p["r"][1]),
                generation=int(p["g"]),
                lease=str(p["l"]),
                lease_expires_ms=int(p["x"]),
                project=str(p["p"]),
                session=str(p["s"]),
                scope=str(p["sc"]),
                digest=digest,
            )
        except (ValueError, KeyError, TypeError, IndexError):
            raise LocatorInvalid("locator payload is malformed") from None


def create_lease(store: Store, minutes: float, documents: list[str]) -> tuple[str, int]:
    """A lease for one search's results: ``(lease id, expiry in epoch milliseconds)``."""
    lease = secrets.token_hex(8)
    expires = clock.epoch_ms(clock.now()) + int(minutes * 60_000)
    batch = store.batch()
    batch.put(
        "leases",
        LEASE.encode(lease),
        codec.encode_record({"expires": expires, "documents": documents[:256]}),
    )
    store.commit(batch)
    return lease, expires


def leased_documents(store: Store) -> frozenset[str]:
    """Document ids named by a lease that has not expired: retention keeps them."""
    now = clock.epoch_ms(clock.now())
    out: set[str] = set()
    for _, value in store.scan("leases", LEASE.prefix()):
        lease = codec.decode_record(value, "lease")
        if int(lease["expires"]) >= now:
            out.update(str(d) for d in lease.get("documents") or [])
    return frozenset(out)


def lease_expired(loc: Locator) -> bool:
    return clock.epoch_ms(clock.now()) > loc.lease_expires_ms


def expire_leases(store: Store) -> int:
    """Delete lease records past their expiry (bounded maintenance); returns how many."""
    now = clock.epoch_ms(clock.now())
    batch = store.batch()
    for key, value in store.scan("leases", LEASE.prefix()):
        if int(codec.decode_record(value, "lease")["expires"]) < now:
            batch.delete("leases", key)
    store.commit(batch)
    return batch.mutations
