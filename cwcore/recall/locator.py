"""Locators: opaque, versioned, HMAC-signed pointers to one search hit, and their leases.

A locator binds document id, version, logical window, match range, index generation, lease,
project, session and the scope that created it (spec 000 "Recall request"). It is
``cwl1.<payload>.<mac>``: base64url JSON and the first 16 bytes of HMAC-SHA256 under a per-store
key (``CW_HOME/locator.key``, created 0600). Agents never build offsets themselves; a tampered or
foreign locator fails verification and recall answers ``locator-invalid``.

Each search creates one lease (default 30 minutes, setting ``leaseMinutes``) that its locators
name; recall past it answers ``lease-expired``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cwcore import clock
from cwcore.errors import InvalidInput
from cwcore.store import codec
from cwcore.store.keys import KeyLayout
from cwcore.store.rocks import Store

PREFIX = "cwl1"
MAX_LOCATOR_CHARS = 4096
LEASE = KeyLayout("lease", 0xB0, ("str",))


class LocatorInvalid(InvalidInput):
    code = "locator-invalid"


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

    def payload(self) -> dict[str, Any]:
        return {
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


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


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

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:16]

    def sign(self, loc: Locator) -> str:
        payload = json.dumps(loc.payload(), separators=(",", ":"), sort_keys=True).encode()
        return f"{PREFIX}.{_b64(payload)}.{_b64(self._mac(payload))}"

    def verify(self, text: str) -> Locator:
        """Decode and authenticate; raise :class:`LocatorInvalid` on any mismatch."""
        if not isinstance(text, str) or len(text) > MAX_LOCATOR_CHARS:
            raise LocatorInvalid("not a cw locator")
        parts = text.strip().split(".")
        if len(parts) != 3 or parts[0] != PREFIX:
            raise LocatorInvalid("not a cw locator (or from an unknown version)")
        try:
            payload, mac = _unb64(parts[1]), _unb64(parts[2])
        except (ValueError, TypeError):
            raise LocatorInvalid("locator is not valid base64") from None
        if not hmac.compare_digest(mac, self._mac(payload)):
            raise LocatorInvalid("locator signature does not match this store")
        try:
            p = json.loads(payload)
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
