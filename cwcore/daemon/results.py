"""What ``daemon.status`` answers, as a frozen dataclass.

The daemon's server builds the answer as JSON (``cw daemon status --json`` and the protocol carry
it unchanged); :meth:`cwcore.api.Archive.daemon_status` turns it into a :class:`DaemonStatus` so
the faces read attributes. ``to_json()`` keeps exactly the keys, order and values the daemon
answers, and ``from_json(x).to_json() == x``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class DaemonStatus:
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
    service: Mapping[str, Any]
    stalled_dropped: int = 0
    background: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "running": True,
            "pid": self.pid,
            "protocol": self.protocol,
            "uptime_s": self.uptime_s,
            "started_at": self.started_at,
            "store": self.store,
            "socket": self.socket,
            "log": self.log,
            "build": self.build,
            "factory": self.factory,
            "capabilities": list(self.capabilities),
            "connections": self.connections,
            "max_connections": self.max_connections,
            "in_flight": self.in_flight,
            "running_requests": self.running_requests,
            "replay_entries": self.replay_entries,
            "input_reserved_bytes": self.input_reserved_bytes,
            "output_reserved_bytes": self.output_reserved_bytes,
            "small_output_reserved_bytes": self.small_output_reserved_bytes,
            "stalled_dropped": self.stalled_dropped,
            "grace_s": self.grace_s,
            "stopping": self.stopping,
            "background": self.background,
            "service": dict(self.service),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> DaemonStatus:
        return cls(
            pid=body["pid"],
            protocol=body["protocol"],
            uptime_s=body["uptime_s"],
            started_at=body["started_at"],
            store=body["store"],
            socket=body["socket"],
            log=body["log"],
            build=body["build"],
            factory=body["factory"],
            capabilities=tuple(body["capabilities"]),
            connections=body["connections"],
            max_connections=body["max_connections"],
            in_flight=body["in_flight"],
            running_requests=body["running_requests"],
            replay_entries=body["replay_entries"],
            input_reserved_bytes=body["input_reserved_bytes"],
            output_reserved_bytes=body["output_reserved_bytes"],
            small_output_reserved_bytes=body["small_output_reserved_bytes"],
            stalled_dropped=int(body.get("stalled_dropped", 0)),
            grace_s=body["grace_s"],
            stopping=body["stopping"],
            background=body.get("background"),
            service=MappingProxyType(dict(body["service"])),
        )
