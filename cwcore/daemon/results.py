"""What ``daemon.status`` answers, as a frozen dataclass.

The daemon's server builds the answer as JSON (``cw daemon status --json`` and the protocol carry
it unchanged); :meth:`cwcore.api.Archive.daemon_status` turns it into a :class:`DaemonStatus` so
the faces read attributes. The JSON is derived from the fields (snake_case keys, as the daemon
has always answered; :mod:`cwcore.contract.codec`), and ``from_json(x).to_json() == x`` as
parsed JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from cwcore.contract.codec import Record, field, fields_json


def _read_only(body: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(body))


class DaemonStatus(Record, keys="snake"):
    """A running daemon: its pid, protocol version, uptime in seconds (three decimals) and
    start time (UTC, ISO 8601 to the second), the store, socket and log it serves, its service's
    build, factory (``module:attribute``) and capabilities, the open connections and their
    limit, requests in flight and running, replayable answers kept, the bytes reserved by the
    input, output and small-output budgets, the peers dropped because they stalled while others
    waited (``stalled_dropped``), the idle grace before it exits (seconds), and whether it is
    stopping. ``background`` names the background work that keeps it running past its idle
    grace (``"embedding 1,234 windows"``), None when there is none.

    The answer's ``running`` is always true (only a running daemon answers), so it is no field.
    ``service`` is the service's own status, read-only: its shape belongs to the service the
    daemon runs (the daemon serves any factory), or ``{"error": …}`` when the service could not
    answer within its time."""

    pid: int
    protocol: int
    uptime_s: float
    started_at: str
    store: str
    socket: str
    log: str
    build: str
    factory: str
    capabilities: tuple[str, ...]
    connections: int
    max_connections: int
    in_flight: int
    running_requests: int
    replay_entries: int
    input_reserved_bytes: int
    output_reserved_bytes: int
    small_output_reserved_bytes: int
    grace_s: float
    stopping: bool
    service: Mapping[str, Any] = field(decode=_read_only)
    stalled_dropped: int = 0
    background: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"running": True, **fields_json(self)}
