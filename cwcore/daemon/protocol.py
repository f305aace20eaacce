"""The socket protocol (version 1): framing and message shapes.

Framing: every message is one frame, a 4-byte big-endian unsigned length followed by that many
bytes of UTF-8 JSON encoding one object with a string ``type``. The encoded body is at most
:data:`MAX_FRAME` bytes (16 MiB); a reader checks the length header *before* reading the body.

Messages (``id`` is the client's request id, a string of 1..128 printable characters)::

    client → daemon  {"type": "hello", "protocol": 1, "capabilities": [...], "required": [...],
                      "settings"?: {name: digest}}      # cwcore.config.fingerprint
    daemon → client  {"type": "welcome", "protocol": 1, "capabilities": [...], "build": str,
                      "pid": int, "missing": [...],      # missing = required − capabilities
                      "settingsDiffer"?: [name, ...]}    # only when the hello had settings
    client → daemon  {"type": "request", "id": str, "method": str, "params": {...}}
    client → daemon  {"type": "cancel", "id": str}             # best effort; sets the cancel flag
    daemon → client  {"type": "event", "id": str, "event": {...}}     # zero or more, then one of:
    daemon → client  {"type": "result", "id": str, "result": {...}}
    daemon → client  {"type": "error", "id": str | null, "error": {"code", "message", ...}}

An error frame with ``id: null`` concerns the connection itself (bad handshake, wrong version,
oversized or garbage frame, daemon busy); the daemon closes the connection after sending it.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

from cwcore.errors import CwError, LimitExceeded, ProtocolError

PROTOCOL_VERSION = 1
HEADER = struct.Struct(">I")
HEADER_BYTES = HEADER.size
#: Largest encoded frame body, bytes.
MAX_FRAME = 16 * 1024 * 1024
#: Largest hello frame, bytes: nothing legitimate needs more before the handshake.
MAX_HELLO = 64 * 1024
#: Longest request id, characters.
MAX_REQUEST_ID = 128


def encode(message: dict[str, Any], limit: int = MAX_FRAME) -> bytes:
    """One frame (header + body). Raises :class:`LimitExceeded` when the body exceeds ``limit``.

    A string holding a lone surrogate (a query cut inside an emoji, echoed in its result) has
    no UTF-8 form: such a message goes with JSON's ``\\u`` escapes, which the peer decodes to
    the same string (it used to turn the answer into an internal error)."""
    try:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        body = json.dumps(message, separators=(",", ":")).encode("ascii")
    if len(body) > limit:
        raise LimitExceeded(
            f"encoded {message.get('type', 'message')} frame is {len(body)} bytes; "
            f"the limit is {limit}",
            bytes=len(body),
            limit=limit,
        )
    return HEADER.pack(len(body)) + body


def parse_header(header: bytes, limit: int = MAX_FRAME) -> int:
    """The body length announced by a 4-byte header; :class:`ProtocolError` if over ``limit``."""
    (length,) = HEADER.unpack(header)
    if length > limit:
        raise ProtocolError(f"frame of {length} bytes exceeds the {limit}-byte limit")
    return int(length)


def decode(body: bytes) -> dict[str, Any]:
    """Parse a frame body; :class:`ProtocolError` unless it is a JSON object with a string type
    (bodies that are not UTF-8, not JSON, nested past the parser's recursion limit, or hold an
    integer over Python's digit limit are all :class:`ProtocolError`)."""
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError("frame body is not UTF-8 JSON") from None
    except RecursionError:
        # A few KiB of ``[`` reach the parser's recursion limit: the frame is garbage, not an
        # internal error (it used to close the connection without an answer).
        raise ProtocolError("frame body is nested too deeply") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError("frame body is not an object with a string 'type'")
    return message


def valid_request_id(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_REQUEST_ID and value.isprintable()


# -- message constructors ---------------------------------------------------------------------


def hello(
    capabilities: frozenset[str],
    required: frozenset[str],
    settings: dict[str, str] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "capabilities": sorted(capabilities),
        "required": sorted(required),
    }
    if settings is not None:
        message["settings"] = settings
    return message


def welcome(
    capabilities: frozenset[str],
    build: str,
    pid: int,
    missing: frozenset[str],
    settings_differ: list[str] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "type": "welcome",
        "protocol": PROTOCOL_VERSION,
        "capabilities": sorted(capabilities),
        "build": build,
        "pid": pid,
        "missing": sorted(missing),
    }
    if settings_differ is not None:
        message["settingsDiffer"] = settings_differ
    return message


def request(request_id: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"type": "request", "id": request_id, "method": method, "params": params}


def event(request_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "event", "id": request_id, "event": body}


def result(request_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "result", "id": request_id, "result": body}


def error(request_id: str | None, err: CwError) -> dict[str, Any]:
    return {"type": "error", "id": request_id, "error": err.to_json()}


# -- blocking helpers (the client side) -------------------------------------------------------


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    """Encode and send one frame on a blocking socket."""
    sock.sendall(encode(message))


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    """``n`` bytes, or :class:`ConnectionError` if the peer closes first."""
    chunks: list[bytes] = []
    remaining = n
    while remaining:
        chunk = sock.recv(min(remaining, 1024 * 1024))
        if not chunk:
            raise ConnectionResetError("connection closed by the daemon")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket, limit: int = MAX_FRAME) -> dict[str, Any]:
    """Read one frame from a blocking socket (length checked before the body is read)."""
    length = parse_header(_recv_exactly(sock, HEADER_BYTES), limit)
    return decode(_recv_exactly(sock, length))
